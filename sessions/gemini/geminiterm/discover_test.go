package geminiterm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

func TestInteractive(t *testing.T) {
	const bin = "/work/main/.cache/gemini/node_modules/.bin/gemini"
	const id = "9f6b76e4-9c7f-4c77-9b43-fd6736593a43"
	for _, tc := range []struct {
		name     string
		argv     []string
		ok       bool
		resume   string
		resuming bool
	}{
		// The two processes of one TUI, as measured (0.61.0).
		{"the launcher", []string{"node", bin}, true, "", false},
		{"the relaunched child", []string{"/usr/bin/node", "--max-old-space-size=12052", bin}, true, "", false},
		{"the bundle itself", []string{"node", "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js", "-m", "gemini-2.5-flash"}, true, "", false},
		{"an initial prompt stays interactive", []string{"node", bin, "-i", "fix the build"}, true, "", false},
		{"a positional query", []string{"node", bin, "fix", "it"}, true, "", false},
		{"resume by id", []string{"node", bin, "--resume", id}, true, id, false},
		{"resume by id, = form", []string{"node", bin, "--resume=" + id}, true, id, false},
		{"session id", []string{"node", bin, "--session-id", id}, true, id, false},
		{"resume latest", []string{"node", bin, "-r", "latest"}, true, "", true},
		{"resume by index", []string{"node", bin, "-r", "3", "-m", "x"}, true, "", true},
		{"the app's managed session", []string{"node", bin, "--acp"}, false, "", false},
		{"the deprecated ACP flag", []string{"node", bin, "--experimental-acp", "-m", "m"}, false, "", false},
		{"headless", []string{"node", bin, "-p", "hello"}, false, "", false},
		{"headless, = form", []string{"node", bin, "--prompt=hello", "-o", "stream-json"}, false, "", false},
		{"a subcommand", []string{"node", bin, "mcp", "list"}, false, "", false},
		{"a model named like a subcommand", []string{"node", bin, "-m", "hooks"}, true, "", false},
		{"version", []string{"node", bin, "--version"}, false, "", false},
		{"another script", []string{"node", "/srv/app/server.js"}, false, "", false},
		{"a gemini.js of another package", []string{"node", "/srv/gemini.js"}, false, "", false},
		{"not node", []string{"python3", bin}, false, "", false},
		{"node alone", []string{"node"}, false, "", false},
	} {
		ok, resume, resuming := Interactive(tc.argv)
		if ok != tc.ok || resume != tc.resume || resuming != tc.resuming {
			t.Errorf("%s: %v %q %v; want %v %q %v", tc.name, ok, resume, resuming, tc.ok, tc.resume, tc.resuming)
		}
	}
}

// The hash the real CLI wrote for its cwd (testdata/text-then-tool.jsonl,
// written in /tmp/gw1794999172).
func TestProjectHashIsTheCLIs(t *testing.T) {
	m, err := ReadMeta("testdata/text-then-tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := ProjectHash("/tmp/gw1794999172"); got != m.ProjectHash || m.Kind != "main" || m.SessionID != "9f6b76e4-9c7f-4c77-9b43-fd6736593a43" {
		t.Errorf("hash %s, meta %+v", got, m)
	}
}

func TestReadMetaIncomplete(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty":    "",
		"partial":  `{"sessionId":"a","projectHash":"b"`,
		"not meta": `{"id":"x","type":"user"}` + "\n",
		"huge":     string(make([]byte, maxMetaLine+10)),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if m, err := ReadMeta(p); err == nil {
			t.Errorf("%s: read %+v", name, m)
		}
	}
}

func TestPair(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	const cwd = "/work/a"
	hash := ProjectHash(cwd)
	chat := func(path, id, hash string, started, mod time.Duration) Chat {
		return Chat{Path: path, Meta: Meta{SessionID: id, ProjectHash: hash, StartTime: t0.Add(started), Kind: "main"}, ModTime: t0.Add(mod)}
	}
	old := chat("old", "o", hash, -time.Hour, -time.Hour)
	oldWritten := chat("oldw", "ow", hash, -time.Hour, 5*time.Minute)
	mine := chat("mine", "m", hash, time.Second, 2*time.Minute)
	other := chat("other", "x", ProjectHash("/work/b"), time.Second, 2*time.Minute)
	later := chat("later", "l", hash, 10*time.Minute, 11*time.Minute)
	sub := Chat{Path: "sub", Meta: Meta{SessionID: "s", ProjectHash: hash, StartTime: t0.Add(time.Minute), Kind: "subagent"}, ModTime: t0.Add(20 * time.Minute)}
	p := Proc{Proc: observe.Proc{PID: 1, Cwd: cwd, Started: t0}}
	for _, tc := range []struct {
		name  string
		procs []Proc
		chats []Chat
		want  map[int]string
	}{
		{"its own new chat", []Proc{p}, []Chat{old, other, mine, sub}, map[int]string{1: "mine"}},
		{"the cwd's chat, even through a trailing slash", []Proc{{Proc: observe.Proc{PID: 1, Cwd: cwd + "/", Started: t0}}}, []Chat{mine}, map[int]string{1: "mine"}},
		{"nothing before its first chat", []Proc{p}, []Chat{old, other}, map[int]string{}},
		{"an older session written now is not a new process's", []Proc{p}, []Chat{oldWritten}, map[int]string{}},
		{"resume latest takes the older session written now", []Proc{{Proc: observe.Proc{PID: 1, Cwd: cwd, Started: t0}, Resuming: true}}, []Chat{old, oldWritten}, map[int]string{1: "oldw"}},
		{"resume by id", []Proc{{Proc: observe.Proc{PID: 1, Cwd: cwd, Started: t0}, ResumeID: "o"}}, []Chat{old, mine}, map[int]string{1: "o" + "ld"}},
		{"two TUIs in one cwd: the later one takes the later chat", []Proc{p, {Proc: observe.Proc{PID: 2, Cwd: cwd, Started: t0.Add(9 * time.Minute)}}}, []Chat{mine, later},
			map[int]string{1: "mine", 2: "later"}},
		{"the newest written wins (/clear)", []Proc{p}, []Chat{mine, later}, map[int]string{1: "later"}},
	} {
		got := map[int]string{}
		for pid, c := range Pair(tc.procs, tc.chats) {
			got[pid] = c.Path
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
