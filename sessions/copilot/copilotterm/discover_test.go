package copilotterm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

func TestInteractive(t *testing.T) {
	const bin = "/x/node_modules/@github/copilot-linux-x64/copilot"
	const id = "71e5b1ec-5d6f-4cd6-98fe-a927bd598bce"
	for _, tc := range []struct {
		argv []string
		ok   bool
		want string
	}{
		{[]string{bin}, true, ""},
		{[]string{bin, "--model", "login"}, true, ""}, // "login" is --model's value
		{[]string{bin, "-i", "fix the tests", "--allow-all-tools"}, true, ""},
		{[]string{bin, "--resume=" + id}, true, id},
		{[]string{bin, "-r", id}, true, id},
		{[]string{bin, "--resume", "--banner"}, true, ""}, // the picker
		{[]string{bin, "--resume=my-name"}, true, ""},     // a name, not an id
		{[]string{bin, "--session-id", id}, true, id},
		{[]string{bin, "-C", "/w", "--continue"}, true, ""},
		// The app's own turns, and anyone's prompt mode.
		{[]string{bin, "--output-format", "json", "--session-id=" + id, "--no-auto-update", "--no-ask-user", "--no-color"}, false, ""},
		{[]string{bin, "-p", "hi"}, false, ""},
		{[]string{bin, "--prompt=hi"}, false, ""},
		{[]string{bin, "--acp"}, false, ""},
		{[]string{bin, "login"}, false, ""},
		{[]string{bin, "mcp", "list"}, false, ""},
		{[]string{bin, "--version"}, false, ""},
		{[]string{"node", "/x/node_modules/.bin/copilot"}, false, ""},
		{nil, false, ""},
	} {
		ok, want := Interactive(tc.argv)
		if ok != tc.ok || want != tc.want {
			t.Errorf("Interactive(%q) = %v, %q; want %v, %q", tc.argv, ok, want, tc.ok, tc.want)
		}
	}
}

func TestReadWorkspace(t *testing.T) {
	// A copy of what 1.0.102 wrote (testdata/workspace.yaml).
	dir := filepath.Join(t.TempDir(), "71e5b1ec-5d6f-4cd6-98fe-a927bd598bce")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "workspace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := ReadWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.ID != "71e5b1ec-5d6f-4cd6-98fe-a927bd598bce" || w.Cwd != "/tmp/cpwork279283952" || w.Name != "hello again [[scenario:text]]" ||
		!w.Created.Equal(time.Date(2026, 11, 30, 22, 46, 49, 638e6, time.UTC)) || w.ModTime.IsZero() || w.Events() != filepath.Join(dir, "events.jsonl") {
		t.Fatalf("%+v", w)
	}
	// Quoted values; no file yet: the directory's name is the id.
	if err := os.WriteFile(filepath.Join(dir, "workspace.yaml"), []byte("id: x\ncwd: \"/a b: c\"\nlist:\n  - cwd: nested\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w, _ := ReadWorkspace(dir); w.ID != "x" || w.Cwd != "/a b: c" {
		t.Fatalf("%+v", w)
	}
	os.Remove(filepath.Join(dir, "workspace.yaml"))
	if w, err := ReadWorkspace(dir); err == nil || w.ID != filepath.Base(dir) {
		t.Fatalf("%+v %v", w, err)
	}
}

func TestPair(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ws := func(id, cwd string, created time.Time) Workspace {
		return Workspace{Dir: "/h/session-state/" + id, ID: id, Cwd: cwd, Created: created}
	}
	for _, tc := range []struct {
		name   string
		procs  []Proc
		spaces []Workspace
		want   map[int]string // pid -> session id
	}{
		{"the lock it holds", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}, Held: []string{"/h/session-state/b"}}},
			[]Workspace{ws("a", "/w", at(1)), ws("b", "/elsewhere", at(-100))}, map[int]string{1: "b"}},
		{"by cwd and time", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}},
			[]Workspace{ws("a", "/w", at(1))}, map[int]string{1: "a"}},
		{"another directory's session is not it", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}},
			[]Workspace{ws("a", "/elsewhere", at(1))}, map[int]string{}},
		{"a session older than the process is not it", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(100)}}},
			[]Workspace{ws("a", "/w", at(1))}, map[int]string{}},
		{"the one its command line names", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(100)}, WantID: "old"}},
			[]Workspace{ws("old", "/other", at(1)), ws("new", "/w", at(101))}, map[int]string{1: "old"}},
		{"two in one directory: the later process takes the later session",
			[]Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}, {Proc: observe.Proc{PID: 2, Cwd: "/w", Started: at(50)}}},
			[]Workspace{ws("a", "/w", at(1)), ws("b", "/w", at(51))}, map[int]string{1: "a", 2: "b"}},
		{"a held session is not taken by cwd",
			[]Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}, {Proc: observe.Proc{PID: 2, Cwd: "/w", Started: at(50)}, Held: []string{"/h/session-state/b"}}},
			[]Workspace{ws("a", "/w", at(1)), ws("b", "/w", at(51))}, map[int]string{1: "a", 2: "b"}},
		{"no session: not paired", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}}, nil, map[int]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pair(tc.procs, tc.spaces)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %v", got, tc.want)
			}
			for pid, id := range tc.want {
				if got[pid].ID != id {
					t.Fatalf("pid %d: %+v, want %s", pid, got[pid], id)
				}
			}
		})
	}
}

// BenchmarkScanProcs is one read of this machine's process table for
// Copilot TUIs (what every rescan costs).
func BenchmarkScanProcs(b *testing.B) {
	for b.Loop() {
		if _, err := ScanProcs(); err != nil {
			b.Fatal(err)
		}
	}
}
