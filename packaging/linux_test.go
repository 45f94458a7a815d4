package packaging

import (
	"bufio"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/testdir"
)

// The Linux package's files live in packaging/linux; the icons are the app
// icons in assets/icons (one drawing for the app and the package).

func readDesktopEntry(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		l := sc.Text()
		if first {
			if l != "[Desktop Entry]" {
				t.Fatalf("%s starts with %q, want [Desktop Entry]", path, l)
			}
			first = false
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, l)
		}
		if _, dup := kv[k]; dup {
			t.Fatalf("%s: duplicate key %s", path, k)
		}
		kv[k] = v
	}
	return kv
}

func TestDesktopEntry(t *testing.T) {
	kv := readDesktopEntry(t, filepath.Join("linux", Name+".desktop"))
	want := map[string]string{
		"Type":     "Application",
		"Name":     DisplayName,
		"Exec":     Name + " run",
		"TryExec":  Name,
		"Icon":     Name, // a hicolor theme name, not a path
		"Terminal": "false",
	}
	for k, v := range want {
		if kv[k] != v {
			t.Errorf("%s=%q, want %q", k, kv[k], v)
		}
	}
	for _, k := range []string{"Categories", "Keywords"} {
		if !strings.HasSuffix(kv[k], ";") {
			t.Errorf("%s=%q must end with ';' (a desktop entry list)", k, kv[k])
		}
	}
	if v, err := exec.LookPath("desktop-file-validate"); err == nil {
		if out, err := exec.Command(v, filepath.Join("linux", Name+".desktop")).CombinedOutput(); err != nil {
			t.Errorf("desktop-file-validate: %v\n%s", err, out)
		}
	}
}

func TestAppIconsHaveTheHicolorSizes(t *testing.T) {
	for _, s := range IconSizes {
		path := filepath.Join("..", "assets", "icons", "app-"+strconv.Itoa(s)+".png")
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("the %dx%d icon the package installs: %v", s, s, err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if cfg.Width != s || cfg.Height != s {
			t.Errorf("%s is %dx%d, want %dx%d", path, cfg.Width, cfg.Height, s, s)
		}
	}
}

func TestFyneAppMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// A few keys of the [Details] table, read without a TOML library.
	details := map[string]string{}
	section := ""
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			section = l
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok && section == "[Details]" {
			details[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	if details["ID"] != AppID || details["Name"] != DisplayName {
		t.Errorf("FyneApp.toml ID=%q Name=%q, want %q and %q", details["ID"], details["Name"], AppID, DisplayName)
	}
	if _, err := os.Stat(filepath.Join("..", details["Icon"])); err != nil {
		t.Errorf("FyneApp.toml's icon: %v", err)
	}
	if details["Version"] == "" {
		t.Error("FyneApp.toml has no Version")
	}
}

// TestInstallScript stages the release layout exactly as `make
// package-linux` does, installs it into a temporary home, and uninstalls
// it: the home must be as it was.
func TestInstallScript(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("install.sh is for Linux")
	}
	tmp := t.TempDir()
	// A stand-in binary: install.sh only copies it, and --uninstall runs
	// `session-supervisor service uninstall`, which it records.
	fakeBin := filepath.Join(tmp, "session-supervisor")
	if err := os.WriteFile(fakeBin, []byte("#!/bin/sh\necho \"$@\" >> \"$HOME/../calls\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The hook program is staged from beside the binary, as make build
	// leaves it.
	if err := os.WriteFile(filepath.Join(tmp, Name+"-hook"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stage := filepath.Join(tmp, "stage")
	if out, err := exec.Command("sh", filepath.Join("linux", "stage.sh"), fakeBin, stage).CombinedOutput(); err != nil {
		t.Fatalf("stage.sh: %v\n%s", err, out)
	}
	for _, f := range []string{Name, Name + "-hook", "install.sh", Name + ".desktop", "icons/hicolor/256x256/apps/" + Name + ".png"} {
		if _, err := os.Stat(filepath.Join(stage, f)); err != nil {
			t.Errorf("staged release lacks %s", f)
		}
	}

	home := filepath.Join(tmp, "home dir") // a space, as some homes have
	other := filepath.Join(home, ".local", "share", "applications", "other.desktop")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("[Desktop Entry]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testdir.Listing(t, home)
	env := append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "PATH=/usr/bin:/bin")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(stage, "install.sh"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	out := run()
	getenv := func(k string) string { return map[string]string{}[k] }
	wantFiles := []string{filepath.Join(home, ".local", "bin", Name), filepath.Join(home, ".local", "bin", Name+"-hook"), DesktopEntryPath(getenv, home)}
	for _, s := range IconSizes {
		wantFiles = append(wantFiles, IconPath(getenv, home, s))
	}
	for _, f := range wantFiles {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not installed: %s\n%s", f, out)
		}
	}
	kv := readDesktopEntry(t, DesktopEntryPath(getenv, home))
	bin := filepath.Join(home, ".local", "bin", Name)
	if kv["Exec"] != `"`+bin+`" run` || kv["TryExec"] != bin {
		t.Errorf("installed entry Exec=%q TryExec=%q, want the absolute binary path", kv["Exec"], kv["TryExec"])
	}
	if !strings.Contains(out, "not on your PATH") {
		t.Errorf("install.sh did not mention that ~/.local/bin is not on PATH:\n%s", out)
	}
	// Installing again is fine and changes nothing.
	mid := testdir.Listing(t, home)
	run()
	testdir.Unchanged(t, home, mid)

	run("--uninstall")
	testdir.Unchanged(t, home, before)
	if calls, _ := os.ReadFile(filepath.Join(tmp, "calls")); string(calls) != "service uninstall\n" {
		t.Errorf("--uninstall ran the binary with %q, want the service removed first", calls)
	}
}
