package fyneoverlay

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// The patches are for the Fyne go.mod selects: this fails when go.mod's
// Fyne changes without the patches being redone (and Version and the
// hashes recorded anew).
func TestPatchesAreForGoModsFyne(t *testing.T) {
	version, dir, err := ModuleDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if version != Version {
		t.Fatalf("go.mod selects %s %s, the patches are for %s: redo them on the new upstream files", Module, version, Version)
	}
	if err := Check(version, dir); err != nil {
		t.Fatal(err)
	}
}

// Each patched copy's header names the upstream file it replaces, its
// version and its hash, as Patches records them.
func TestPatchedHeadersNameTheirUpstream(t *testing.T) {
	for _, p := range Patches {
		b, err := os.ReadFile(filepath.Join(root, Dir, p.Path))
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(string(b), "\npackage ")
		for _, want := range []string{Module + "@" + Version + "/" + p.Path, p.UpstreamSHA256} {
			if !strings.Contains(header, want) {
				t.Errorf("%s: the header does not name %q", p.Path, want)
			}
		}
	}
}

func TestCheckRefusesAnotherFyne(t *testing.T) {
	_, dir, err := ModuleDir(root)
	if err != nil {
		t.Fatal(err)
	}
	changed := t.TempDir()
	for _, p := range Patches {
		f := filepath.Join(changed, p.Path)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("package glfw\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, version, dir, want string
	}{
		{"the version go.mod selects", Version, dir, ""},
		{"another version", "v2.8.0", dir, "the patches in packaging/fyneoverlay/_fyne are for " + Version},
		{"an upstream file changed", Version, changed, "is not the file its patch was made from"},
		{"an upstream file missing", Version, t.TempDir(), "reading upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.version, tc.dir)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// The overlay Write prepares is what the go command then builds with:
// Fyne from the copy, the patched files from packaging/fyneoverlay, the
// rest of go.mod as it is.
func TestWriteSelectsThePatchedFyne(t *testing.T) {
	dir := t.TempDir()
	ov, err := Write(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	// A second Write (the next build) reuses the copy.
	if again, err := Write(root, dir); err != nil || again != ov {
		t.Fatalf("a second Write: %q, %v", again, err)
	}
	abs, _ := filepath.Abs(root)
	version, _, _ := ModuleDir(root)
	shadow := ShadowDir(abs, version)

	b, err := os.ReadFile(ov)
	if err != nil {
		t.Fatal(err)
	}
	var o overlay
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Replace) != len(Patches)+1 {
		t.Errorf("the overlay replaces %d files, want go.mod and %d patched", len(o.Replace), len(Patches))
	}
	for _, p := range Patches {
		want := filepath.Join(abs, Dir, p.Path)
		if got := o.Replace[filepath.Join(shadow, p.Path)]; got != want {
			t.Errorf("%s in the copy is replaced by %q, want %q", p.Path, got, want)
		}
	}

	list := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"list", "-overlay", ov}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := list("-m", "-f", "{{.Version}} {{with .Replace}}{{.Dir}}{{end}}", Module); got != Version+" "+shadow {
		t.Errorf("with the overlay, go list -m %s: %q, want %q", Module, got, Version+" "+shadow)
	}
	// Every other requirement is go.mod's own.
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	cmd.Dir = root
	without, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if with := list("-m", "-f", "{{.Path}} {{.Version}}", "all"); with != strings.TrimSpace(string(without)) {
		t.Errorf("the overlay changed the module graph:\nwith:\n%s\nwithout:\n%s", with, without)
	}
}
