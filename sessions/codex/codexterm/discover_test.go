package codexterm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

func TestInteractive(t *testing.T) {
	const bin = "/x/vendor/x86_64-unknown-linux-musl/bin/codex"
	for _, tc := range []struct {
		argv   []string
		ok     bool
		resume string
	}{
		{[]string{bin}, true, ""},
		{[]string{bin, "fix the tests"}, true, ""},
		{[]string{bin, "-m", "exec", "hi"}, true, ""}, // "exec" is -m's value
		{[]string{bin, "-c", "model=x", "--no-alt-screen"}, true, ""},
		{[]string{bin, "--no-daemon", "resume", "01a22e80-4690-7bd0-bfa7-f686c5828ea7"}, true, "01a22e80-4690-7bd0-bfa7-f686c5828ea7"},
		{[]string{bin, "resume", "--last"}, true, ""}, // Resuming: see TestPair
		{[]string{bin, "fork", "--last"}, true, ""},
		{[]string{bin, "exec", "--json", "hi"}, false, ""},
		{[]string{bin, "app-server", "--listen", "unix://"}, false, ""},
		{[]string{bin, "app-server", "daemon", "pid-update-loop"}, false, ""},
		{[]string{bin, "--version"}, false, ""},
		{[]string{"node", "/x/node_modules/.bin/codex"}, false, ""},
		{nil, false, ""},
	} {
		ok, resume := Interactive(tc.argv)
		if ok != tc.ok || resume != tc.resume {
			t.Errorf("Interactive(%q) = %v, %q; want %v, %q", tc.argv, ok, resume, tc.ok, tc.resume)
		}
	}
}

func TestPair(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tui := func(path, id, cwd string, started time.Time) Rollout {
		return Rollout{Path: path, Meta: Meta{ID: id, Cwd: cwd, Originator: "codex-tui", Source: "cli", ThreadSource: "user", Started: started}}
	}
	old := func(r Rollout, mod time.Time) Rollout { r.ModTime = mod; return r }
	sub := tui("/r/sub", "sub", "/w", at(30))
	sub.Meta.ThreadSource = "subagent"
	sub2 := tui("/r/sub2", "sub2", "/w", at(31))
	sub2.Meta.ParentThreadID = "a"
	exec := tui("/r/exec", "exec", "/w", at(40))
	exec.Meta.Originator, exec.Meta.Source = "codex_exec", "exec"
	for _, tc := range []struct {
		name     string
		procs    []Proc
		rollouts []Rollout
		want     map[int]string // pid -> thread id
	}{
		{"one process, its thread", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(1))}, map[int]string{1: "a"}},
		{"another directory's thread is not it", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}},
			[]Rollout{tui("/r/a", "a", "/elsewhere", at(1))}, map[int]string{}},
		{"a thread older than the process is not it", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(100)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(1))}, map[int]string{}},
		{"re-created after the trust prompt: the newest", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w/", Started: at(0)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(1)), tui("/r/b", "b", "/w", at(9))}, map[int]string{1: "b"}},
		{"subagents and exec are never the user's", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(1)), sub, sub2, exec}, map[int]string{1: "a"}},
		{"two processes in one directory", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}}, {Proc: observe.Proc{PID: 2, Cwd: "/w", Started: at(50)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(1)), tui("/r/b", "b", "/w", at(51))}, map[int]string{1: "a", 2: "b"}},
		{"the file a process holds open wins", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(0)}, Open: []string{"/r/a"}}, {Proc: observe.Proc{PID: 2, Cwd: "/w", Started: at(50)}}},
			[]Rollout{tui("/r/a", "a", "/w", at(60)), tui("/r/b", "b", "/w", at(51))}, map[int]string{1: "a", 2: "b"}},
		{"resume --last: the cwd's older thread written since the start", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/w", Started: at(100)}, Resuming: true}},
			[]Rollout{old(tui("/r/a", "a", "/w", at(1)), at(5)), old(tui("/r/b", "b", "/w", at(2)), at(101)), old(tui("/r/c", "c", "/x", at(3)), at(102))},
			map[int]string{1: "b"}},
		{"resume finds the old thread anywhere", []Proc{{Proc: observe.Proc{PID: 1, Cwd: "/other", Started: at(100)}, ResumeID: "a"}},
			[]Rollout{tui("/r/a", "a", "/w", at(1)), tui("/r/b", "b", "/other", at(101))}, map[int]string{1: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pair(tc.procs, tc.rollouts)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for pid, id := range tc.want {
				if got[pid].Meta.ID != id {
					t.Errorf("pid %d: got %q, want %q", pid, got[pid].Meta.ID, id)
				}
			}
		})
	}
}

func TestResuming(t *testing.T) {
	const bin = "/x/codex"
	for _, tc := range []struct {
		argv     []string
		resuming bool
	}{
		{[]string{bin, "resume", "--last"}, true},
		{[]string{bin, "resume"}, true},
		{[]string{bin, "resume", "abc"}, false},
		{[]string{bin, "fork", "--last"}, false},
		{[]string{bin}, false},
	} {
		if _, _, got := interactive(tc.argv); got != tc.resuming {
			t.Errorf("%q: resuming %v", tc.argv, got)
		}
	}
}

// A rollout not written since the oldest process started is not even
// opened: a scan reads only what a live session could be writing.
func TestScanSkipsRolloutsWrittenBeforeTheProcesses(t *testing.T) {
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
	oldPath, newPath := w.path("old"), w.path("new")
	appendTo(t, oldPath, lines(metaLine("old", "/w", time.Now(), "user")))
	appendTo(t, newPath, lines(metaLine("new", "/w", time.Now(), "user")))
	hour := time.Now().Add(-time.Hour)
	if err := os.Chtimes(oldPath, hour, hour); err != nil {
		t.Fatal(err)
	}
	_, pairs, err := w.src.scan()
	if err != nil || pairs[7].Meta.ID != "new" {
		t.Fatalf("pairs %+v err %v", pairs, err)
	}
	if _, read := w.src.metas[oldPath]; read || len(w.src.metas) != 1 {
		t.Fatalf("read %v", w.src.metas)
	}
}

// BenchmarkDiscovery: a day directory of 1,000 rollouts (each with a real
// ~30 KB session_meta) and live processes to pair; cold is the first scan
// (every meta read), warm a rescan (metas cached, only the directory
// listed).
func BenchmarkDiscovery(b *testing.B) {
	meta := readLines(b, "tui_tool.jsonl")[0]
	for _, live := range []int{1, 20} {
		home := b.TempDir()
		src := &Source{CodexHome: home}
		day := src.today()
		os.MkdirAll(day, 0o755)
		now := time.Now()
		var procs []Proc
		for i := range 1000 {
			id := fmt.Sprintf("01a22e80-0000-0000-0000-%012d", i)
			cwd := fmt.Sprintf("/home/u/p%d", i)
			var rec map[string]any
			if err := json.Unmarshal(meta, &rec); err != nil {
				b.Fatal(err)
			}
			p := rec["payload"].(map[string]any)
			p["id"], p["cwd"], p["timestamp"] = id, cwd, now.UTC().Format(time.RFC3339Nano)
			m, _ := json.Marshal(rec)
			os.WriteFile(filepath.Join(day, "rollout-x-"+id+".jsonl"), append(m, '\n'), 0o644)
			if i < live {
				procs = append(procs, Proc{Proc: observe.Proc{PID: 1000 + i, Cwd: cwd, Started: now.Add(-time.Second)}})
			}
		}
		src.Procs = func() ([]Proc, error) { return procs, nil }
		check := func(b *testing.B) {
			_, pairs, err := src.scan()
			if err != nil || len(pairs) != live {
				b.Fatalf("paired %d of %d: %v", len(pairs), live, err)
			}
		}
		b.Run(fmt.Sprintf("cold/live=%d", live), func(b *testing.B) {
			for b.Loop() {
				src.metas = nil
				src.Rescan()
				check(b)
			}
		})
		b.Run(fmt.Sprintf("warm/live=%d", live), func(b *testing.B) {
			for b.Loop() {
				src.Rescan()
				check(b)
			}
		})
	}
}
