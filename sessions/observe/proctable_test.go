package observe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
)

// fakeAgent stands in for a managed agent's identity.
type fakeAgent struct{}

func (fakeAgent) Name() string           { return "fake" }
func (fakeAgent) DisplayName() string    { return "Fake CLI" }
func (fakeAgent) DefaultCommand() string { return "fake" }
func (fakeAgent) InstallHint() string    { return "install fake" }

// fakeSource is a source built from the shape's pieces alone.
type fakeSource struct {
	Unreachable[fakeAgent]
}

func TestAgentInfoAndNoInbox(t *testing.T) {
	var s fakeSource
	for _, tc := range []struct{ got, want string }{
		{s.Name(), "fake"}, {s.DisplayName(), "Fake CLI"}, {s.DefaultCommand(), "fake"}, {s.InstallHint(), "install fake"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	es := sessions.ExternalSession{PID: 1}
	if s.CanNudge(es) {
		t.Error("CanNudge is true without an inbox")
	}
	var errNoInbox error = NoInboxError{Agent: "fake"}
	err := s.Nudge(context.Background(), es, "x", true)
	if err != errNoInbox || !errors.Is(err, errNoInbox) {
		t.Errorf("Nudge = %v, want the package's ErrNoInbox value", err)
	}
	if want := "fake: a session started in a terminal has no inbox to deliver a nudge through"; err.Error() != want {
		t.Errorf("Nudge says %q, want %q", err, want)
	}
}

func TestKeyPollProbe(t *testing.T) {
	started := time.UnixMilli(1_700_000_000_123)
	if got := Key(42, started); got != "42-1700000000123" {
		t.Errorf("Key = %q", got)
	}
	if Key(42, started) == Key(42, started.Add(time.Second)) {
		t.Error("a later process reusing the pid has the same key")
	}
	polls := []struct {
		poll     time.Duration
		notified bool
		want     time.Duration
	}{
		{0, false, 2 * time.Second},
		{0, true, 5 * time.Second},
		{time.Minute, true, time.Minute},
		{time.Millisecond, false, time.Millisecond},
	}
	for _, tc := range polls {
		if got := PollInterval(tc.poll, tc.notified); got != tc.want {
			t.Errorf("PollInterval(%v, %v) = %v, want %v", tc.poll, tc.notified, got, tc.want)
		}
	}
	probed := false
	alive, known := ProbeProcess(func(pid int, s time.Time) (bool, bool) {
		probed = pid == 42 && s.Equal(started)
		return true, true
	}, 42, started)
	if !probed || !alive || !known {
		t.Errorf("the given probe was not asked: %v %v %v", probed, alive, known)
	}
	// Without one the process table answers: this test's own process runs
	// (known false where the table cannot be read).
	if alive, known := ProbeProcess(nil, os.Getpid(), time.Time{}); known && !alive {
		t.Error("the default probe says this process is gone")
	}
}

func TestProcTableThrottlesScans(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	boom := errors.New("boom")
	type call struct {
		at      time.Duration
		forget  bool
		fail    bool
		scanned bool
		procs   int
		err     error
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{"a first scan, then answers from memory until maxAge", []call{
			{at: 0, scanned: true, procs: 1},
			{at: 100 * time.Millisecond, procs: 1},
			{at: 499 * time.Millisecond, procs: 1},
			{at: 500 * time.Millisecond, scanned: true, procs: 2},
		}},
		{"Forget scans at once", []call{
			{at: 0, scanned: true, procs: 1},
			{at: time.Millisecond, forget: true, scanned: true, procs: 2},
		}},
		{"an error is kept, with no processes, until the next scan", []call{
			{at: 0, scanned: true, fail: true, err: boom},
			{at: 100 * time.Millisecond, err: boom},
			{at: time.Second, scanned: true, procs: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var table ProcTable[int, string]
			n := 0
			for i, c := range tc.calls {
				if c.forget {
					table.Forget()
				}
				scanned := false
				procs, pairs, err := table.Scan(t0.Add(c.at), 500*time.Millisecond, func() ([]int, map[int]string, error) {
					scanned = true
					n++
					if c.fail {
						return []int{1}, map[int]string{1: "x"}, boom
					}
					procs := make([]int, n)
					pairs := map[int]string{}
					for j := range procs {
						procs[j] = j + 1
						pairs[j+1] = "file"
					}
					return procs, pairs, nil
				})
				if scanned != c.scanned || len(procs) != c.procs || len(pairs) != c.procs || !errors.Is(err, c.err) && err != c.err {
					t.Fatalf("call %d: scanned %v, %d procs, %d pairs, err %v; want scanned %v, %d, err %v",
						i, scanned, len(procs), len(pairs), err, c.scanned, c.procs, c.err)
				}
				if got := table.Pairs(); len(got) != c.procs {
					t.Fatalf("call %d: Pairs has %d, want %d", i, len(got), c.procs)
				}
			}
		})
	}
}

func TestEnded(t *testing.T) {
	ev := Ended(42, "the terminal was closed")
	if ev.Kind != sessions.EvSessionEnded || ev.Detail != "process 42 is gone (the terminal was closed)" {
		t.Errorf("Ended = %+v", ev)
	}
}

// countSummary counts lines starting with "turn".
type countSummary struct{ turns, lines int }

func (s *countSummary) Reset() { *s = countSummary{} }
func (s *countSummary) Feed(l []byte) {
	s.lines++
	if len(l) >= 4 && string(l[:4]) == "turn" {
		s.turns++
	}
}
func (s *countSummary) TurnCount() int { return s.turns }

func TestFollower(t *testing.T) {
	inTurn := sessions.ObservedState{State: sessions.Working, InTurn: true, Evidence: "busy"}
	idle := sessions.ObservedState{State: sessions.Idle, Evidence: "idle"}
	type look struct {
		write    string // appended before the look
		truncate bool   // the file is re-created holding write instead
		st       sessions.ObservedState
		lines    int
		send     bool
		newTurns int
	}
	cases := []struct {
		name         string
		history      bool
		rereadIsPast bool
		looks        []look
	}{
		{"a file found after following began: its turns are news", false, false, []look{
			{write: "turn 1\nturn 2\n", st: idle, lines: 2, send: true, newTurns: 2},
			{st: idle, send: false},
			{write: "turn 3\n", st: inTurn, lines: 1, send: true, newTurns: 1},
		}},
		{"history: the first read is the past", true, false, []look{
			{write: "turn 1\nturn 2\n", st: idle, lines: 2, send: true, newTurns: 0},
			{write: "turn 3\n", st: idle, lines: 1, send: true, newTurns: 1},
		}},
		{"history: a turn in flight at the first read is the one in flight", true, false, []look{
			{write: "turn 1\n", st: inTurn, lines: 1, send: true, newTurns: 1},
		}},
		{"a truncation after history brings new turns", true, false, []look{
			{write: "turn 1\nturn 2\n", st: idle, lines: 2, send: true, newTurns: 0},
			{write: "turn 1\n", truncate: true, st: idle, lines: 1, send: true, newTurns: 1},
		}},
		{"RereadIsPast: a rewritten file is the past", true, true, []look{
			{write: "turn 1\nturn 2\n", st: idle, lines: 2, send: true, newTurns: 0},
			{write: "turn 1\nturn 2\nturn 3\n", truncate: true, st: idle, lines: 3, send: true, newTurns: 0},
		}},
		{"RereadIsPast without history: only rereads are the past", false, true, []look{
			{write: "turn 1\n", st: idle, lines: 1, send: true, newTurns: 1},
			{write: "turn 1\nturn 2\n", truncate: true, st: idle, lines: 2, send: true, newTurns: 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "session.jsonl")
			var f Follower[countSummary, *countSummary]
			if f.Following() || f.Path() != "" || f.Tail() != nil || f.Read() != 0 {
				t.Fatal("a zero Follower follows something")
			}
			f.RereadIsPast = tc.rereadIsPast
			f.Follow(path, tc.history)
			if !f.Following() || f.Path() != path || f.Tail() == nil {
				t.Fatal("Follow did not follow")
			}
			for i, l := range tc.looks {
				if l.truncate {
					// The agent re-creates the file: the tail reads it
					// from its start.
					tmp := path + ".new"
					if err := os.WriteFile(tmp, []byte(l.write), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, path); err != nil {
						t.Fatal(err)
					}
				} else {
					appendFile(t, path, l.write)
				}
				if got := f.Read(); got != l.lines {
					t.Fatalf("look %d: read %d lines, want %d", i, got, l.lines)
				}
				st, send := f.Next(l.st, false)
				if send != l.send || send && st.NewTurns != l.newTurns {
					t.Fatalf("look %d: send %v with %d new turns, want %v with %d (summary %+v)", i, send, st.NewTurns, l.send, l.newTurns, *f.Summary())
				}
			}
		})
	}
}

func TestListProcs(t *testing.T) {
	started := time.UnixMilli(1_700_000_000_000)
	boom := errors.New("boom")
	entry := func(pid int, pairs map[int]string) sessions.ExternalSession {
		return Listed(pid, started, "/w", pairs[pid])
	}
	cases := []struct {
		name  string
		procs []int
		pairs map[int]string
		err   error
		want  []sessions.ExternalSession
	}{
		{"one session per process, paired or not", []int{7, 8}, map[int]string{7: "th"}, nil, []sessions.ExternalSession{
			{Key: Key(7, started), AgentSessionID: "th", Cwd: "/w", PID: 7, StartedAt: started},
			{Key: Key(8, started), Cwd: "/w", PID: 8, StartedAt: started},
		}},
		{"no process: an empty list, not nil", nil, nil, nil, []sessions.ExternalSession{}},
		{"a failed scan fails the list", []int{7}, nil, boom, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list := ListProcs(func() ([]int, map[int]string, error) { return tc.procs, tc.pairs, tc.err }, entry)
			got, err := list()
			if !errors.Is(err, tc.err) || (got == nil) != (tc.want == nil) || len(got) != len(tc.want) {
				t.Fatalf("got %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// memTable is a process table in memory holding pids, each a process
// named "fake".
func memTable(pids ...int) *procwatch.Table { return liveTable(func() []int { return pids }) }

// liveTable is a process table in memory holding what live answers.
func liveTable(live func() []int) *procwatch.Table {
	return procwatch.New(procwatch.Reader{
		List: func() ([]procscan.Listed, error) {
			var out []procscan.Listed
			for _, p := range live() {
				out = append(out, procscan.Listed{PID: p, Ino: uint64(p)})
			}
			return out, nil
		},
		Stat: func(pid int) (procscan.Proc, procscan.State) {
			return procscan.Proc{PID: pid, Comm: "fake", Stamp: "1"}, procscan.Running
		},
		Cmdline: func(int) ([]string, bool) { return []string{"fake"}, true },
	})
}

// fakeFilter takes the processes named "fake" (and not pid 4), as their
// pids.
var fakeFilter = ProcFilter[int]{
	Comms:    []string{"fake"},
	Match:    func(p procscan.Proc) bool { return p.Comm == "fake" },
	Describe: func(p procscan.Proc) (int, bool) { return p.PID, p.PID != 4 },
}

func TestProcSource(t *testing.T) {
	boom := errors.New("boom")
	odd := func(procs []int) ([]int, map[int]string) {
		pairs := map[int]string{}
		var kept []int
		for _, p := range procs {
			if p%2 == 1 {
				kept = append(kept, p)
				pairs[p] = "file"
			}
		}
		return kept, pairs
	}
	cases := []struct {
		name    string
		procs   func() ([]int, error)
		want    int
		wantErr string
	}{
		{"the agent's table scan by default, through its pairing", nil, 2, ""},
		{"Procs replaces the table scan", func() ([]int, error) { return []int{5}, nil }, 1, ""},
		{"a failed list names what was listed", func() ([]int, error) { return nil, boom }, 0, "listing fake processes: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &ProcSource[int, string]{Procs: tc.procs, Table: memTable(1, 2, 3, 4)}
			procs, pairs, err := s.Scan(time.Hour, fakeFilter, "fake processes", odd)
			if len(procs) != tc.want || len(pairs) != tc.want || len(s.Paired()) != tc.want {
				t.Errorf("%d procs, %d pairs, %d paired; want %d", len(procs), len(pairs), len(s.Paired()), tc.want)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, boom)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
	n := 0
	count := func() ([]int, error) { n++; return []int{1}, nil }
	s := &ProcSource[int, string]{Procs: count}
	s.Scan(time.Hour, fakeFilter, "fake", odd)
	s.Scan(time.Hour, fakeFilter, "fake", odd)
	if n != 1 {
		t.Errorf("scanned %d times within maxAge, want 1", n)
	}
	s.Rescan()
	s.Scan(time.Hour, fakeFilter, "fake", odd)
	if n != 2 {
		t.Errorf("scanned %d times after Rescan, want 2", n)
	}
	started := time.Unix(1_700_000_000, 0)
	s.Probe = func(pid int, st time.Time) (bool, bool) { return pid == 7 && st.Equal(started), true }
	if alive, known := s.Alive(sessions.ExternalSession{PID: 7, StartedAt: started}); !alive || !known {
		t.Error("Alive does not ask Probe with the session's pid and start")
	}
	if alive, _ := s.ProcessAlive(7, started.Add(time.Second)); alive {
		t.Error("a later process on the same pid is alive")
	}
}

func TestRelayProcess(t *testing.T) {
	cases := []struct {
		name    string
		es      sessions.ExternalSession
		wantErr string
		events  int
	}{
		{"no process: nothing to follow", sessions.ExternalSession{Key: "k"}, "session k: no process to follow", 0},
		{"a process: its looks are relayed until it is gone", sessions.ExternalSession{Key: "k", PID: 7}, "", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &ProcSource[int, string]{Poll: time.Second}
				looks := 0
				look := func() ([]sessions.Event, bool) {
					looks++
					return []sessions.Event{{Kind: sessions.EvObserved}}, looks == 2
				}
				out, err := s.RelayProcess(t.Context(), tc.es, func() []string { return nil }, look)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr || out != nil {
						t.Fatalf("err %v, want %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for range out {
					n++
				}
				if n != tc.events {
					t.Errorf("relayed %d events, want %d (one a look, the second after a poll)", n, tc.events)
				}
			})
		})
	}
}

func TestPairOf(t *testing.T) {
	pairs := map[int]string{7: "rollout-7.jsonl"}
	cases := []struct {
		name string
		err  error
		pid  int
		want string
		ok   bool
	}{
		{"the paired file", nil, 7, "rollout-7.jsonl", true},
		{"a process not paired yet", nil, 8, "", false},
		{"a failed scan pairs none", errors.New("boom"), 7, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PairOf(func() ([]int, map[int]string, error) { return []int{7, 8}, pairs, tc.err }, tc.pid)
			if got != tc.want || ok != tc.ok {
				t.Errorf("PairOf = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// An agent's home: the source's own setting, else its environment
// variable, else the dot directory under the user's home; a process's home
// from its environment; two spellings of one directory are the same.
func TestHomes(t *testing.T) {
	startHome, hadHome := os.LookupEnv("HOME")
	t.Setenv("HOME", "/home/u")
	for _, tc := range []struct{ set, env, want string }{
		{"/given", "/from-env", "/given"},
		{"", "/from-env", "/from-env"},
		{"", "", "/home/u/.agent"},
	} {
		if got := HomeDir(tc.set, tc.env, ".agent"); got != tc.want {
			t.Errorf("HomeDir(%q, %q) = %q, want %q", tc.set, tc.env, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{{"/w", "/w/", true}, {"/w/./x", "/w/x", true}, {"/w", "/x", false}, {"", "", false}, {"/w", "", false}} {
		if SameDir(tc.a, tc.b) != tc.same {
			t.Errorf("SameDir(%q, %q) = %v", tc.a, tc.b, !tc.same)
		}
	}
	if runtime.GOOS != "linux" {
		t.Skip("ProcHome reads /proc (Linux only)")
	}
	if !hadHome {
		t.Skip("no HOME in this process's environment")
	}
	// The environment the process started with (t.Setenv does not change it).
	if got := ProcHome(os.Getpid(), "HOME", ".agent"); got != startHome {
		t.Errorf("ProcHome by the variable = %q, want %q", got, startHome)
	}
	if got, want := ProcHome(os.Getpid(), "NO_SUCH_AGENT_HOME", ".agent"), filepath.Join(startHome, ".agent"); got != want {
		t.Errorf("ProcHome under HOME = %q, want %q", got, want)
	}
	if got := ProcHome(-1, "HOME", ".agent"); got != "" {
		t.Errorf("ProcHome of no process = %q", got)
	}
}

// An agent's Proc embeds Proc: OwnHome keeps this home's processes and
// those whose home is unknown; Oldest is the earliest known start.
func TestOwnHomeAndOldest(t *testing.T) {
	type agentProc struct {
		Proc
		Extra string
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	procs := []agentProc{
		{Proc: Proc{PID: 1, Home: "/h/.agent/", Started: now.Add(-time.Minute)}},
		{Proc: Proc{PID: 2, Home: "/elsewhere/.agent", Started: now.Add(-time.Hour)}},
		{Proc: Proc{PID: 3, Started: now.Add(-2 * time.Minute)}},
		{Proc: Proc{PID: 4, Home: "/h/.agent"}},
	}
	var kept []int
	for _, p := range OwnHome(slices.Clone(procs), "/h/.agent") {
		kept = append(kept, p.PID)
	}
	if !slices.Equal(kept, []int{1, 3, 4}) {
		t.Errorf("kept %v", kept)
	}
	if got := Oldest(procs, now); !got.Equal(now.Add(-time.Hour)) {
		t.Errorf("oldest %v", got)
	}
	if got := Oldest([]agentProc{{Proc: Proc{PID: 4}}}, now); !got.Equal(now) {
		t.Errorf("oldest of no known start %v", got)
	}
}

// A Watch's wake-up over a shared table: nothing while the agent has no
// process (no poll), a wake when the table's loop sees one appear (its
// safety net, at most procwatch.DefaultSlow: no file announced it), the
// poll while it lives, and, the source listing at each wake (a fresh
// scan, as ProcLister.List), a wake by the poll's scan when it goes, then
// quiet again.
func TestWatchWakeSharedTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var live []int
		tab := liveTable(func() []int { mu.Lock(); defer mu.Unlock(); return live })
		set := func(pids ...int) { mu.Lock(); live = pids; mu.Unlock() }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go tab.Run(ctx, 2*time.Second)
		s := &ProcSource[int, string]{Table: tab, Poll: 5 * time.Second}
		wake := s.WatchWake(ctx, fakeFilter, func() []string { return nil })
		quiet := func(d time.Duration, what string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			select {
			case <-wake:
				t.Fatalf("woken %s", what)
			default:
			}
		}
		quiet(time.Minute, "with no process of the agent's")
		set(7)
		start := time.Now()
		<-wake
		if d := time.Since(start); d > procwatch.DefaultSlow {
			t.Fatalf("a new process woke the source after %v", d)
		}
		tab.Fresh(freshAge)
		start = time.Now()
		<-wake
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("the poll while a process lives came after %v", d)
		}
		set()
		start = time.Now()
		var last time.Duration
		for wakes := 0; ; wakes++ {
			if wakes > 3 {
				t.Fatal("the source still woken after its process went")
			}
			tab.Fresh(freshAge) // the source lists
			select {
			case <-wake:
				last = time.Since(start)
				continue
			case <-time.After(time.Minute):
			}
			break
		}
		if last > 5*time.Second {
			t.Fatalf("the process gone woke the source after %v (not by the poll's scan)", last)
		}
	})
}
