package procwatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// fakeTable is a process table in memory: what the test puts in it is what
// the table under test lists and reads, and it counts the reads.
type fakeTable struct {
	mu    sync.Mutex
	procs map[int]fakeProc
	ino   uint64
	stats int
	// forks counts the processes started: the last pid handed out.
	forks int
}

type fakeProc struct {
	ino    uint64
	p      Proc
	zombie bool
	// fork is the id handed out when it started (LastPID's count).
	fork int
}

func newFake() *fakeTable { return &fakeTable{procs: map[int]fakeProc{}} }

// start puts a new process under pid (replacing any: a reused pid gets a
// new inode), started at started.
func (f *fakeTable) start(pid int, comm string, started time.Time, argv ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ino++
	f.forks++
	f.procs[pid] = fakeProc{ino: f.ino, fork: f.forks, p: Proc{PID: pid, Comm: comm, Argv: argv, Started: started, Stamp: strconv.FormatInt(started.UnixMilli(), 10)}}
}

// thread starts a thread of some process: an id handed out, no process.
func (f *fakeTable) thread() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forks++
}

// exec makes pid run another program: same pid, start and inode.
func (f *fakeTable) exec(pid int, comm string, argv ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.procs[pid]
	fp.p.Comm, fp.p.Argv = comm, argv
	f.procs[pid] = fp
}

func (f *fakeTable) exit(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.procs, pid)
}

func (f *fakeTable) reader() Reader {
	return Reader{
		List: func() ([]procscan.Listed, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []procscan.Listed
			for pid, fp := range f.procs {
				out = append(out, procscan.Listed{PID: pid, Ino: fp.ino})
			}
			return out, nil
		},
		Stat: func(pid int) (Proc, procscan.State) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.stats++
			fp, ok := f.procs[pid]
			if !ok || fp.zombie {
				return Proc{PID: pid}, procscan.Gone
			}
			p := fp.p
			p.Argv = nil
			return p, procscan.Running
		},
		Cmdline: func(pid int) ([]string, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			fp, ok := f.procs[pid]
			return slices.Clone(fp.p.Argv), ok && len(fp.p.Argv) > 0
		},
		LastPID: func() (int, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.forks, true
		},
		NewProcess: func(from, to int) (bool, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, fp := range f.procs {
				if fp.fork > from && fp.fork <= to {
					return true, true
				}
			}
			return false, true
		},
	}
}

func (f *fakeTable) statReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func named(comm string) func(Proc) bool { return func(p Proc) bool { return p.Comm == comm } }

func pids(ps []Proc) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

// The cache: a known process is not read again until it is due; a new
// one, a gone one, a reused pid (a new inode and a later start) and an
// exec are each delivered once to the subscriber whose filter they match.
func TestIncrementalScan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		old := time.Now().Add(-time.Hour)
		for pid := 100; pid < 150; pid++ {
			f.start(pid, "bash", old, "bash")
		}
		f.start(7, "codex", old, "codex")
		tab := New(f.reader())
		if err := tab.Scan(); err != nil {
			t.Fatal(err)
		}
		if got := f.statReads(); got != 51 {
			t.Fatalf("a cold scan read %d stats, want 51", got)
		}
		sub := tab.Subscribe([]string{"codex"}, named("codex"))
		if c := sub.Changes(); !slices.Equal(pids(c.New), []int{7}) || len(c.Gone) != 0 {
			t.Fatalf("first changes %+v", c)
		}
		select {
		case <-sub.C():
		default:
			t.Fatal("subscribing to a table with a match does not wake")
		}

		steps := []struct {
			name      string
			change    func()
			wantReads int
			wantNew   []int
			wantGone  []int
		}{
			{"nothing changed: nothing read", func() {}, 0, nil, nil},
			{"a new process of another program: read, not delivered", func() { f.start(200, "sleep", time.Now(), "sleep", "9") }, 1, nil, nil},
			{"a new codex: read and delivered", func() { f.start(8, "codex", time.Now(), "codex", "resume") }, 2, []int{8}, nil},
			{"the codex exits", func() { f.exit(7) }, 2, nil, []int{7}},
			{"its pid is reused by another codex", func() { f.start(7, "codex", time.Now(), "codex") }, 3, []int{7}, nil},
			{"a young shell execs codex", func() { f.start(300, "sh", time.Now(), "sh"); tab.Scan(); f.exec(300, "codex", "codex") }, 4, []int{300}, nil},
		}
		for _, s := range steps {
			before := f.statReads()
			s.change()
			if err := tab.Scan(); err != nil {
				t.Fatal(err)
			}
			// The young processes (started within Young) are read at
			// every scan: count those too.
			c := sub.Changes()
			if !slices.Equal(pids(c.New), s.wantNew) || !slices.Equal(pids(c.Gone), s.wantGone) {
				t.Errorf("%s: changes new %v gone %v, want %v %v", s.name, pids(c.New), pids(c.Gone), s.wantNew, s.wantGone)
			}
			if got := f.statReads() - before; got > s.wantReads+4 {
				t.Errorf("%s: %d stat reads", s.name, got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := pids(sub.Procs()); !slices.Equal(got, []int{7, 8, 300}) {
			t.Fatalf("the set: %v", got)
		}

		// Once nothing is young, an idle scan reads nothing at all.
		time.Sleep(DefaultYoung)
		tab.Scan()
		before := f.statReads()
		tab.Scan()
		if got := f.statReads() - before; got != 0 {
			t.Fatalf("an idle scan read %d stats", got)
		}
		// An old process's exec is seen at its recheck, not sooner.
		f.exec(120, "codex", "codex")
		tab.Scan()
		if slices.Contains(pids(sub.Procs()), 120) {
			t.Fatal("an old process was read again before its recheck")
		}
		time.Sleep(DefaultRecheck)
		tab.Scan()
		if !slices.Contains(pids(sub.Procs()), 120) {
			t.Fatal("an old process's exec was not seen at its recheck")
		}
		// A closed subscriber is no longer told.
		sub.Close()
		sub.Changes()
		f.exit(8)
		tab.Scan()
		if c := sub.Changes(); len(c.Gone) != 0 {
			t.Fatalf("a closed subscriber was told %+v", c)
		}
	})
}

// Two subscribers see only their own programs; a process that stops
// matching (an exec to another program) leaves the set.
func TestSubscribersFilter(t *testing.T) {
	f := newFake()
	now := time.Now()
	f.start(1, "codex", now, "codex")
	f.start(2, "node", now, "node", "gemini.js")
	f.start(3, "node", now, "node", "server.js")
	tab := New(f.reader())
	tab.Scan()
	codex := tab.Subscribe([]string{"codex"}, named("codex"))
	gemini := tab.Subscribe([]string{"node"}, func(p Proc) bool { return slices.Contains(p.Argv, "gemini.js") })
	if a, b := pids(codex.Procs()), pids(gemini.Procs()); !slices.Equal(a, []int{1}) || !slices.Equal(b, []int{2}) {
		t.Fatalf("codex %v gemini %v", a, b)
	}
	<-gemini.C()
	<-codex.C()
	f.exec(2, "node", "node", "other.js") // young: read again at the next scan
	tab.Scan()
	if got := pids(gemini.Procs()); len(got) != 0 {
		t.Fatalf("gemini after its exec: %v", got)
	}
	select {
	case <-gemini.C():
	default:
		t.Fatal("no wake for a process that left the set")
	}
	select {
	case <-codex.C():
		t.Fatal("the codex subscriber was woken by another program's change")
	default:
	}
}

// A failed listing takes no process for gone.
func TestFailedListKeepsTable(t *testing.T) {
	f := newFake()
	f.start(1, "codex", time.Now(), "codex")
	r := f.reader()
	fail := false
	list := r.List
	r.List = func() ([]procscan.Listed, error) {
		if fail {
			return nil, fmt.Errorf("no /proc")
		}
		return list()
	}
	tab := New(r)
	sub := tab.Subscribe([]string{"codex"}, named("codex"))
	tab.Scan()
	fail = true
	if err := tab.Scan(); err == nil {
		t.Fatal("no error")
	}
	if got := pids(sub.Procs()); !slices.Equal(got, []int{1}) {
		t.Fatalf("after a failed scan: %v", got)
	}
}

// Whether a look of the loop lists the table: never within the fast
// interval of the last scan (a Fresh just scanned), always once the last
// is slow old, and in between when a pid was handed out (or it cannot be
// told) or the last scan left a young process of a wanted name.
func TestScanNow(t *testing.T) {
	const fast, slow = 2 * time.Second, 10 * time.Second
	for _, c := range []struct {
		name           string
		since          time.Duration
		urgent, forked bool
		want           bool
	}{
		{"nothing started, nothing young: no listing", 2 * time.Second, false, false, false},
		{"a pid handed out: listed", 2 * time.Second, false, true, true},
		{"a young wanted process: listed", 4 * time.Second, true, false, true},
		{"a Fresh scanned a second ago: not yet, whatever started", time.Second, true, true, false},
		{"the safety net: listed though nothing started", 10 * time.Second, false, false, true},
		{"just under the safety net: not yet", 9 * time.Second, false, false, false},
	} {
		if got := scanNow(c.since, c.urgent, c.forked, fast, slow); got != c.want {
			t.Errorf("%s: scanNow(%v, urgent %v, forked %v) = %v, want %v", c.name, c.since, c.urgent, c.forked, got, c.want)
		}
	}
}

// The loop: a scan at once, then a look every interval that lists only
// when a process was started since (a new process is found within the
// interval), while a young process of a wanted name is in the table (its
// new command line is seen within the interval), or once the last scan is
// Slow old (an exit, which starts nothing, is found by that safety net);
// a scan asked for in between (Fresh: a source woken by its files)
// delivers at once and moves the next one; it ends with its context.
func TestRunSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		old := time.Now().Add(-time.Hour)
		f.start(1, "bash", old, "bash")
		f.start(5, "codex", old, "codex")
		tab := New(f.reader())
		tab.Slow = 10 * time.Second
		sub := tab.Subscribe([]string{"codex"}, named("codex"))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { tab.Run(ctx, 2*time.Second); close(done) }()
		synctest.Wait()
		start := time.Now()
		at := func(d time.Duration) {
			time.Sleep(d - time.Since(start))
			synctest.Wait()
		}
		scansAt := func(d time.Duration, want int) {
			t.Helper()
			at(d)
			if got := tab.Stats().Scans; got != want {
				t.Fatalf("at %v: %d scans, want %d", time.Since(start), got, want)
			}
		}
		delivered := func(what string, want time.Duration) Changes {
			t.Helper()
			<-sub.C()
			if d := time.Since(start); d != want {
				t.Fatalf("%s delivered at %v, want %v", what, d, want)
			}
			return sub.Changes()
		}
		scansAt(0, 1)
		if c := sub.Changes(); !slices.Equal(pids(c.New), []int{5}) {
			t.Fatalf("first changes %+v", c)
		}
		<-sub.C()
		// A process of no wanted name starts: listed at the next look (2
		// s), then nothing until the safety net (12 s).
		f.start(9, "sleep", time.Now(), "sleep", "9")
		scansAt(2*time.Second, 2)
		// The codex exits at 3 s: nothing started, so the safety net's
		// scan at 12 s finds it gone.
		at(3 * time.Second)
		f.exit(5)
		if c := delivered("a gone codex", 12*time.Second); !slices.Equal(pids(c.Gone), []int{5}) {
			t.Fatalf("changes %+v", c)
		}
		scansAt(12*time.Second, 3)
		// A codex starts at 13 s: listed at the look at 14 s; young and
		// wanted, it is read at every look while under 5 s old (16 and
		// 18 s: its new command line at 15 s is seen at 16 s), then the
		// loop is quiet again.
		at(13 * time.Second)
		f.start(6, "codex", time.Now(), "codex")
		if c := delivered("a new codex", 14*time.Second); !slices.Equal(pids(c.New), []int{6}) {
			t.Fatalf("changes %+v", c)
		}
		at(15 * time.Second)
		f.exec(6, "codex", "codex", "resume")
		if c := delivered("a young codex's new command line", 16*time.Second); len(c.New) != 1 || !slices.Equal(c.New[0].Argv, []string{"codex", "resume"}) {
			t.Fatalf("changes %+v", c)
		}
		scansAt(18*time.Second, 6)
		scansAt(24900*time.Millisecond, 6)
		// A Fresh at 25 s scans; the next look is 2 s after it, and with
		// nothing started the next scan is the safety net's at 35 s.
		at(25 * time.Second)
		if err := tab.Fresh(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		scansAt(25*time.Second, 7)
		tab.Fresh(time.Second) // answered from memory
		scansAt(34900*time.Millisecond, 7)
		scansAt(35*time.Second, 8)
		cancel()
		<-done
	})
}

// Ids handed out to threads alone make a look list nothing (NewProcess
// finds no process among them); a process started among threads is listed
// at the next look, and one that was gone by then is nothing to list.
func TestRunSkipsThreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.start(1, "bash", time.Now().Add(-time.Hour), "bash")
		tab := New(f.reader())
		tab.Slow = time.Minute
		sub := tab.Subscribe([]string{"codex"}, named("codex"))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { tab.Run(ctx, 2*time.Second); close(done) }()
		start := time.Now()
		steps := []struct {
			name  string
			do    func()
			scans int
		}{
			{"the first scan", func() {}, 1},
			{"threads started", func() { f.thread(); f.thread() }, 1},
			{"a process started among threads", func() { f.thread(); f.start(7, "codex", time.Now().Add(-time.Minute), "codex"); f.thread() }, 2},
			{"a process that was gone by the look", func() { f.start(8, "true", time.Now(), "true"); f.exit(8); f.thread() }, 2},
			{"nothing started", func() {}, 2},
		}
		for i, st := range steps {
			st.do()
			time.Sleep(time.Duration(i)*2*time.Second + time.Second - time.Since(start))
			synctest.Wait()
			if got := tab.Stats().Scans; got != st.scans {
				t.Fatalf("%s: %d scans, want %d", st.name, got, st.scans)
			}
		}
		if got := pids(sub.Procs()); !slices.Equal(got, []int{7}) {
			t.Fatalf("the codex started among threads: %v", got)
		}
		cancel()
		<-done
	})
}

// Current reads a process again: its exec is seen at once (the table's
// view may be a scan old), and a gone or reused pid is not it.
func TestCurrent(t *testing.T) {
	f := newFake()
	old := time.Now().Add(-time.Hour)
	f.start(1, "node", old, "node", "gemini.js")
	f.start(2, "codex", old, "codex")
	tab := New(f.reader())
	sub := tab.Subscribe(nil, func(p Proc) bool { return p.Comm != "" })
	tab.Scan()
	procs := sub.Procs()
	f.exec(1, "bash", "bash", "-c", "sleep 60")
	if p, ok := tab.Current(procs[0]); !ok || p.Comm != "bash" || !slices.Equal(p.Argv, []string{"bash", "-c", "sleep 60"}) {
		t.Fatalf("after an exec: %+v %v", p, ok)
	}
	f.exit(2)
	if _, ok := tab.Current(procs[1]); ok {
		t.Fatal("a gone process is current")
	}
	f.start(2, "codex", time.Now(), "codex")
	if _, ok := tab.Current(procs[1]); ok {
		t.Fatal("a reused pid is the process that had it")
	}
}

// A process of a kernel name no subscriber asked for costs one read of its
// stat: its command line is read once a subscriber asks for its name, and
// when it is renamed into one asked for (an exec).
func TestCommandLineOnlyWhenWanted(t *testing.T) {
	f := newFake()
	old := time.Now().Add(-time.Hour)
	f.start(1, "cc1", old, "cc1", "x.c")
	f.start(2, "codex", old, "codex")
	tab := New(f.reader())
	codex := tab.Subscribe([]string{"codex"}, func(Proc) bool { return true })
	tab.Scan()
	if got := tab.Stats().Cmdlines; got != 1 {
		t.Fatalf("%d command lines read, want the codex's alone", got)
	}
	if got := pids(codex.Procs()); !slices.Equal(got, []int{2}) {
		t.Fatalf("codex: %v", got)
	}
	cc := tab.Subscribe([]string{"cc1"}, func(p Proc) bool { return slices.Contains(p.Argv, "x.c") })
	if got := pids(cc.Procs()); !slices.Equal(got, []int{1}) || tab.Stats().Cmdlines != 2 {
		t.Fatalf("a later subscriber for cc1: %v, %d command lines", got, tab.Stats().Cmdlines)
	}
	cc.Close()
	f.start(3, "sh", time.Now(), "sh")
	tab.Scan()
	f.exec(3, "codex", "codex")
	tab.Scan()
	if got := pids(codex.Procs()); !slices.Equal(got, []int{2, 3}) || tab.Stats().Cmdlines != 3 {
		t.Fatalf("after sh exec'd codex: %v, %d command lines", got, tab.Stats().Cmdlines)
	}
}
