package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const cmd = `'/opt/ss/session-supervisor-hook' --socket '/run/ss/claude-hooks.sock'`

// The files users really have: their own hooks on our events, tabs, CRLF,
// odd spacing, other keys after "hooks".
var roundTrip = []struct {
	name, src string
}{
	{"empty object", `{}`},
	{"empty object with a newline", "{\n}\n"},
	{"other settings", "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"}\n}\n"},
	{"user hooks on the same events", `{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {"type": "command", "command": "notify-send done"}
        ]
      }
    ],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]
  },
  "model": "sonnet"
}
`},
	{"tabs", "{\n\t\"hooks\": {\n\t\t\"Notification\": [\n\t\t\t{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"beep\"}]}\n\t\t]\n\t}\n}"},
	{"CRLF", "{\r\n  \"permissions\": {\"allow\": []},\r\n  \"hooks\": {}\r\n}\r\n"},
	{"odd spacing", "  {   \"hooks\"  :  {  \"SessionStart\" :[ ] ,\"Stop\":[{\"hooks\":[ ]}] }  ,\"x\":null}  "},
	{"empty hooks and event arrays", `{"hooks":{"Stop":[],"SessionEnd":[{"hooks":[]}]}}`},
	{"empty hooks object", `{"hooks": {}}`},
	{"empty hooks array in a group", `{"hooks":{"Stop":[{"hooks":[]}]}}`},
	// Commands of the user's that merely mention the hook program are
	// theirs (issue 20, item 15): only an entry install wrote is ours.
	{"user commands naming the hook program", `{"hooks": {"Stop": [{"hooks": [
    {"type": "command", "command": "echo session-supervisor-hook fired >> ~/hooks.log"},
    {"type": "command", "command": "/usr/local/bin/session-supervisor-hook --socket /tmp/mine.sock"},
    {"type": "command", "command": "'/opt/session-supervisor-hook' --socket '/s' && notify-send x"},
    {"type": "http", "url": "http://127.0.0.1:9/session-supervisor-hook"}
  ]}]}}`},
	{"unicode and escapes", "{\"statusLine\": {\"command\": \"echo \\u00e9\\/\"}, \"hooks\": {\"UserPromptSubmit\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"log \\\"$1\\\"\"}]}]}}"},
}

func TestInstallUninstallRoundTripIsByteIdentical(t *testing.T) {
	for _, tc := range roundTrip {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Install([]byte(tc.src), cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(in) {
				t.Fatalf("install wrote invalid JSON:\n%s", in)
			}
			checkInstalled(t, in)
			// Installing again changes nothing.
			again, err := Install(in, cmd)
			if err != nil || string(again) != string(in) {
				t.Fatalf("second install changed the file (err %v):\n%s\n---\n%s", err, in, again)
			}
			out, err := Uninstall(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.src {
				t.Fatalf("round trip differs:\nbefore %q\nafter  %q\ninstalled:\n%s", tc.src, out, in)
			}
		})
	}
}

// checkInstalled decodes the file the way the CLI does and finds our entry
// on every event, and the user's entries still there.
func checkInstalled(t *testing.T, src []byte) {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(src, &s); err != nil {
		t.Fatal(err)
	}
	for _, ev := range Events {
		n := 0
		for _, g := range s.Hooks[ev] {
			for _, h := range g.Hooks {
				if h["command"] == cmd && h["type"] == "command" && h["async"] == true {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d entries of ours, want 1:\n%s", ev, n, src)
		}
	}
}

// TestOursIsOnlyWhatInstallWrites: a command is ours only when it is
// exactly what Command writes (the hook program, quoted, and its socket);
// one that merely contains the program's name is the user's.
func TestOursIsOnlyWhatInstallWrites(t *testing.T) {
	for _, tc := range []struct {
		command string
		ours    bool
	}{
		{cmd, true},
		{Command("/home/a b/it's/session-supervisor-hook", "/run/x y.sock"), true},
		{Command(`C:\Program Files\ss\session-supervisor-hook.exe`, `C:\data\claude-hooks.sock`), true},
		{"echo session-supervisor-hook", false},
		{"/usr/local/bin/session-supervisor-hook --socket /tmp/s", false},
		{cmd + " && rm -rf ~", false},
		{cmd + "; true", false},
		{"'/opt/not-session-supervisor-hook' --socket '/s'", false},
		{"'/opt/session-supervisor-hook' --socket '/s' --verbose", false},
		{"'/opt/session-supervisor-hook' --socket '/s'\n", false},
	} {
		if got := isOurCommand(tc.command); got != tc.ours {
			t.Errorf("isOurCommand(%q) = %t, want %t", tc.command, got, tc.ours)
		}
	}
	src := []byte(roundTrip[len(roundTrip)-2].src)
	in, err := Install(src, cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"echo session-supervisor-hook fired", "/usr/local/bin/session-supervisor-hook --socket /tmp/mine.sock", "&& notify-send x", "http://127.0.0.1:9/session-supervisor-hook"} {
		if !strings.Contains(string(in), keep) {
			t.Errorf("install took the user's %q for an entry of ours:\n%s", keep, in)
		}
	}
	if got, _ := Inspect(src, ""); len(got.Events) != 0 {
		t.Errorf("the user's commands inspected as ours: %+v", got)
	}
}

func TestInstallKeepsTheUsersHooks(t *testing.T) {
	src := roundTrip[3].src
	in, err := Install([]byte(src), cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{`"command": "notify-send done"`, `"command": "audit"`, `"matcher": "Bash"`, `"model": "sonnet"`} {
		if !strings.Contains(string(in), keep) {
			t.Errorf("lost %s:\n%s", keep, in)
		}
	}
	if strings.Contains(string(in), "PermissionRequest") || strings.Count(string(in), "PreToolUse") != 1 {
		t.Errorf("registered a deciding event:\n%s", in)
	}
}

func TestInvalidFilesAreRefused(t *testing.T) {
	for _, src := range []string{``, `{`, `{"hooks": {},}`, `// comment` + "\n{}", `[]`, `{"hooks": []}`, `{"a":1} {}`} {
		for name, f := range map[string]func([]byte) ([]byte, error){
			"install":   func(b []byte) ([]byte, error) { return Install(b, cmd) },
			"uninstall": Uninstall,
		} {
			if _, err := f([]byte(src)); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s %q: err %v, want ErrInvalid", name, src, err)
			}
		}
	}
}

// An older entry of ours (another path, another shape, an event we no
// longer register) is upgraded in place, not duplicated.
func TestOlderEntryIsUpgradedInPlace(t *testing.T) {
	old := `{
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "mine"}, {"type": "command", "command": "'/old/session-supervisor-hook' --socket '/x'", "timeout": 30}]}
    ],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "'/old/session-supervisor-hook' --socket '/x'"}]}]
  }
}`
	in, err := Install([]byte(old), cmd)
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, in)
	if strings.Contains(string(in), "/old/") || strings.Contains(string(in), "PostToolUse") {
		t.Fatalf("the old entry survived:\n%s", in)
	}
	// The upgraded entry sits where the old one was: after "mine", in the
	// same group.
	want := `[{"type": "command", "command": "mine"}, ` + entry(cmd) + `]`
	if !strings.Contains(string(in), want) {
		t.Fatalf("not upgraded in place:\n%s", in)
	}
	got, _ := Inspect(in, cmd)
	if !got.Current || len(got.Events) != len(Events) {
		t.Fatalf("inspect: %+v", got)
	}
	stale, _ := Inspect([]byte(old), cmd)
	if stale.Current || len(stale.Events) != 2 {
		t.Fatalf("inspect of the old file: %+v", stale)
	}
}

func TestDuplicatesOfOursAreMerged(t *testing.T) {
	dup := `{"hooks": {"Stop": [{"hooks": [` + entry(cmd) + `]}, {"hooks": [` + entry(Command("/b/session-supervisor-hook", "/s")) + `]}]}}`
	in, err := Install([]byte(dup), cmd)
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, in)
}

// TestInstallThenUninstallFilesAreByteIdentical: through the files, for
// every shape of file users have, install then uninstall leaves the file
// byte for byte as it was, mode included (issue 20, item 15).
func TestInstallThenUninstallFilesAreByteIdentical(t *testing.T) {
	for _, tc := range roundTrip {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if err := os.WriteFile(path, []byte(tc.src), 0o640); err != nil {
				t.Fatal(err)
			}
			if _, err := InstallFile(path, cmd); err != nil {
				t.Fatal(err)
			}
			if _, err := UninstallFile(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != tc.src {
				t.Fatalf("after install and uninstall (%v):\n%q\nwant\n%q", err, b, tc.src)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", st.Mode().Perm())
			}
		})
	}
}

// TestBackupsKeepTheLastFew: every edit leaves a timestamped backup of the
// file it replaced; only the newest few are kept.
func TestBackupsKeepTheLastFew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	var previous []string
	for i := range keepBackups + 3 {
		src := fmt.Sprintf("{\"n\": %d}\n", i)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		ch, err := InstallFile(path, cmd)
		if err != nil || ch.Backup == "" {
			t.Fatalf("edit %d: %+v %v", i, ch, err)
		}
		previous = append(previous, src)
	}
	backups, err := filepath.Glob(filepath.Join(dir, "settings.json.session-supervisor-*.bak"))
	if err != nil {
		t.Fatal(err)
	}
	if len(backups) != keepBackups {
		t.Fatalf("%d backups, want %d: %v", len(backups), keepBackups, backups)
	}
	slices.Sort(backups)
	for i, b := range backups {
		got, _ := os.ReadFile(b)
		if want := previous[len(previous)-keepBackups+i]; string(got) != want {
			t.Errorf("backup %d (%s) = %q, want %q", i, filepath.Base(b), got, want)
		}
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")

	// A missing file is created owner-only, and removed again.
	ch, err := InstallFile(path, cmd)
	if err != nil || !ch.Changed || ch.Backup != "" {
		t.Fatalf("install: %+v %v", ch, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v %v", st.Mode(), err)
	}
	if ch, err := InstallFile(path, cmd); err != nil || ch.Changed {
		t.Fatalf("second install rewrote the file: %+v %v", ch, err)
	}
	if _, err := UninstallFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file install created is still there: %v", err)
	}

	// An existing file keeps its mode, gets a backup, comes back identical.
	orig := roundTrip[3].src
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, err = InstallFile(path, cmd)
	if err != nil || ch.Backup == "" {
		t.Fatalf("install: %+v %v", ch, err)
	}
	if b, _ := os.ReadFile(ch.Backup); string(b) != orig {
		t.Fatalf("backup %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode changed to %v", st.Mode())
	}
	installed, _ := os.ReadFile(path)
	first := ch.Backup
	ch, err = UninstallFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("after uninstall:\n%s", b)
	}
	// Each edit keeps its own backup: the uninstall's does not overwrite
	// the install's (issue 20, item 15).
	if ch.Backup == "" || ch.Backup == first {
		t.Fatalf("uninstall backup %q (install's %q)", ch.Backup, first)
	}
	if b, _ := os.ReadFile(first); string(b) != orig {
		t.Fatalf("the install's backup was overwritten: %q", b)
	}
	if b, _ := os.ReadFile(ch.Backup); string(b) != string(installed) {
		t.Fatalf("the uninstall's backup is not the installed file: %q", b)
	}

	// A symlinked file is edited where it points; the link stays.
	target := filepath.Join(dir, "dotfiles-settings.json")
	if err := os.WriteFile(target, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallFile(link, cmd); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), Sentinel) {
		t.Fatalf("target not edited: %s", b)
	}

	// Invalid JSON: refused, untouched.
	bad := "{\"hooks\": {\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallFile(path, cmd); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Fatalf("invalid file touched: %q", b)
	}
}
