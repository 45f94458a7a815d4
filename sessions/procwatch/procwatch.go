// Package procwatch is the process table every terminal source shares: one
// scan for all of them, incremental, and each source handed the processes
// that match its filter as they come and go.
//
// A scan lists the table (procscan.List: the pids and their /proc inode
// numbers, a few system calls for the whole table) and reads a process's
// stat only when its pid is new, or its inode changed (a reused pid, or
// the kernel dropped its cache): a pid and its start stamp are the key, so
// a later process under the same pid is another one. Its command line is
// read when a subscriber may want a process of its kernel name. What it
// read is kept. A process that exec'd another program keeps its pid, start
// and inode but changes its name, so a young process's stat is read again
// at every scan (a fork then exec, a CLI setting its title) and an older
// one's every Recheck (a wrapper's late `exec claude`).
//
// One loop (Run) scans for the whole app; a source that was woken by its
// files asks for a fresher look (Fresh), which costs one more incremental
// scan, so a new terminal session is not found later than it was when each
// source read the table itself. Listing the table was most of an idle
// app's cost, and it grows with every process on the machine, so the loop
// looks every interval but lists only when it may find something: when a
// pid was handed out since its last listing (Reader.LastPID) to a process
// that still runs, not to a thread (Reader.NewProcess), or while the table holds a young process of a kernel name a
// subscriber may want (its name or command line may still change: a Node
// CLI setting its title, a wrapper starting its agent); otherwise every
// Slow, the safety net for what starts no process (an exit, a late exec).
package procwatch

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Proc is one process as the table keeps it: its pid, parent, kernel name,
// command line, start and start stamp (its Cwd is never read here: a
// source reads it for its own processes only).
type Proc = procscan.Proc

// The defaults: a process is read at every scan while it is younger than
// DefaultYoung, and every DefaultRecheck after that.
//
// The recheck is the table's one cost that grows with every process on the
// machine, however idle (a stat read of each, 600 on a developer's desktop:
// at 30 s it was a third of an idle app's CPU), and what it finds is rare:
// a process that exec'd another program after it was DefaultYoung old (a
// fork or a script's `exec claude` is seen young). A terminal CLI found
// that way is found at most DefaultRecheck late.
const (
	DefaultYoung   = 5 * time.Second
	DefaultRecheck = 5 * time.Minute
	// DefaultInterval is how often the loop looks (Run): the longest a new
	// process goes unseen by a source that nothing else woke.
	DefaultInterval = 2 * time.Second
	// DefaultSlow is the loop's listing interval when no pid was handed
	// out and nothing young is wanted: the longest a gone process goes
	// unseen by a source that nothing else woke (its files, or its own
	// poll while it has processes).
	DefaultSlow = 10 * time.Second
)

// Reader is how a table reads the process table (procscan's functions by
// default; a test's in memory).
type Reader struct {
	List    func() ([]procscan.Listed, error)
	Stat    func(pid int) (Proc, procscan.State)
	Cmdline func(pid int) ([]string, bool)
	// LastPID is the pid handed out last, false when unknown (nil: never
	// known); the loop lists at every look while it is unknown.
	LastPID func() (int, bool)
	// NewProcess tells whether a process (not a thread) that still runs
	// has one of the ids handed out after from up to to, known false when
	// it cannot tell (nil: never known); the loop lists when it cannot.
	NewProcess func(from, to int) (found, known bool)
}

// System reads this machine's process table.
func System() Reader {
	// One Lister per table: its buffers are reused from scan to scan (a
	// table lists under its lock, never two at once).
	var l procscan.Lister
	return Reader{List: l.List, Stat: procscan.Probe, Cmdline: procscan.Cmdline, LastPID: procscan.LastPID, NewProcess: procscan.NewProcess}
}

// Table is the process table as its last scan saw it. Make it with New.
type Table struct {
	// Young and Recheck: see the package comment (defaults DefaultYoung,
	// DefaultRecheck). Slow is the loop's interval while nothing in the
	// table is young and wanted (default DefaultSlow).
	Young, Recheck, Slow time.Duration

	r Reader

	mu    sync.Mutex // everything below; held for a whole scan
	procs map[int]*entry
	last  time.Time
	gen   uint64 // the scans so far: an entry's gen is its last listing's
	err   error
	subs  map[*Sub]struct{}
	stats Stats
	// named counts the subscribers per kernel name they asked for; any
	// counts those that asked for every name. A process's command line is
	// read only when a subscriber may want it.
	named map[string]int
	any   int
	// urgent: the last scan left a young live process of a wanted name
	// (Run scans every interval then, not every Slow).
	urgent bool
	// lastPID is the pid handed out last as read before the last
	// listing (lastKnown false: unknown).
	lastPID   int
	lastKnown bool
	// scanned has a value after every scan: Run arms its timer again
	// from it (a Fresh moves the loop's next scan).
	scanned chan struct{}
}

// entry is what the table keeps of one pid.
type entry struct {
	ino  uint64
	p    Proc
	read time.Time // when its stat was read last
	// live: running (not a zombie, and its stat was readable); only live
	// processes are offered to the subscribers.
	live bool
	// gen is the number of the last scan that listed it.
	gen uint64
}

// Stats counts a table's reads, for the benchmarks and the tests.
type Stats struct {
	Scans, Stats, Cmdlines int
}

// New is an empty table over r.
func New(r Reader) *Table {
	return &Table{r: r, procs: map[int]*entry{}, subs: map[*Sub]struct{}{}, named: map[string]int{}, scanned: make(chan struct{}, 1)}
}

// Stats is what the table has read so far.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

func (t *Table) young() time.Duration {
	if t.Young > 0 {
		return t.Young
	}
	return DefaultYoung
}

func (t *Table) recheck() time.Duration {
	if t.Recheck > 0 {
		return t.Recheck
	}
	return DefaultRecheck
}

func (t *Table) slow() time.Duration {
	if t.Slow > 0 {
		return t.Slow
	}
	return DefaultSlow
}

// Run scans now, then looks every interval (DefaultInterval when zero)
// until ctx ends: the one loop that keeps the table current. A look scans
// when a pid was handed out since the last scan, while the last scan left
// a young process of a wanted name, or once the last scan is Slow old
// (scanNow); else it costs one read of the last pid. A scan asked for in
// between (Fresh) moves the next look: the timer is armed again from the
// last scan, whoever made it.
func (t *Table) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	slow := max(t.slow(), interval)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.scanned:
		case <-timer.C:
			t.tick(interval, slow)
			// The loop's own scan signals too: drained, as the timer is
			// armed from it below (a later scan signals again).
			select {
			case <-t.scanned:
			default:
			}
		}
		t.mu.Lock()
		next := interval - time.Since(t.last)
		t.mu.Unlock()
		if next <= 0 {
			next = interval // looked without scanning: again in interval
		}
		timer.Reset(next)
	}
}

// tick is one look of the loop: a scan when scanNow says so.
func (t *Table) tick(interval, slow time.Duration) {
	pid, known := t.lastPid()
	t.mu.Lock()
	defer t.mu.Unlock()
	forked := !known || !t.lastKnown || pid != t.lastPID
	if forked && known && t.lastKnown && t.r.NewProcess != nil {
		// Ids were handed out; on a desktop most go to threads (a
		// browser's, a runtime's), which the listing does not show: when
		// none is a process that still runs, there is nothing to list,
		// and the next look counts from here.
		if found, ok := t.r.NewProcess(t.lastPID, pid); ok && !found {
			forked, t.lastPID = false, pid
		}
	}
	if t.last.IsZero() || scanNow(time.Since(t.last), t.urgent, forked, interval, slow) {
		t.scanAfter(time.Now(), pid, known)
	}
}

// lastPid reads the pid handed out last (false: unknown).
func (t *Table) lastPid() (int, bool) {
	if t.r.LastPID == nil {
		return 0, false
	}
	return t.r.LastPID()
}

// scanNow tells whether a look of the loop scans, since the last scan:
// not before fast (a Fresh just scanned); then when a pid was handed out
// since (forked: a new process to find) or the last scan left a young
// process of a wanted name (urgent); else once it is slow old.
func scanNow(since time.Duration, urgent, forked bool, fast, slow time.Duration) bool {
	switch {
	case since >= slow:
		return true
	case since < fast:
		return false
	}
	return urgent || forked
}

// Fresh scans unless the last scan is younger than maxAge, and returns the
// last scan's error.
func (t *Table) Fresh(maxAge time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && time.Since(t.last) < maxAge {
		return t.err
	}
	t.scan(time.Now())
	return t.err
}

// Scan scans now.
func (t *Table) Scan() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scan(time.Now())
	return t.err
}

// scan is one incremental scan at now; t.mu is held. A failed listing
// keeps the table as it was (no process is taken for gone).
func (t *Table) scan(now time.Time) {
	// Read before the listing: a process started after it is found at the
	// next look.
	pid, known := t.lastPid()
	t.scanAfter(now, pid, known)
}

// scanAfter is scan with the last pid handed out already read (the loop's
// look read it to decide).
func (t *Table) scanAfter(now time.Time, lastPID int, lastKnown bool) {
	t.last = now
	t.stats.Scans++
	defer func() {
		select {
		case t.scanned <- struct{}{}:
		default:
		}
	}()
	t.lastPID, t.lastKnown = lastPID, lastKnown
	listed, err := t.r.List()
	if t.err = err; err != nil {
		return
	}
	t.urgent = false
	var changed []*entry // new, exec'd or gone (live false)
	// Each entry listed is marked with the scan's number: the ones left
	// with an older one are gone (no set of the listed pids to make and
	// drop at every scan).
	t.gen++
	for _, l := range listed {
		e, ok := t.procs[l.PID]
		if ok && e.ino == l.Ino && !t.due(e, now) {
			e.gen = t.gen
			continue
		}
		if c := t.look(l, e, now); c != nil {
			changed = append(changed, c...)
		}
		// Only a young process is read at every scan, so only one just
		// looked at can make the next scan urgent.
		if e := t.procs[l.PID]; e.live && t.isYoung(e.p, now) && t.wanted(e.p.Comm) {
			t.urgent = true
		}
	}
	for pid, e := range t.procs {
		if e.gen != t.gen {
			delete(t.procs, pid)
			if e.live {
				changed = append(changed, &entry{p: e.p})
			}
		}
	}
	if len(changed) == 0 {
		return
	}
	for s := range t.subs {
		s.deliver(changed)
	}
}

// due tells whether a known process is read again: at every scan while it
// is young, then every Recheck (an exec keeps the pid and the inode).
func (t *Table) due(e *entry, now time.Time) bool {
	if !e.live {
		return false // a zombie stays one; another user's stays unreadable
	}
	return t.isYoung(e.p, now) || now.Sub(e.read) >= t.recheck()
}

// look reads a pid that is new, whose inode changed, or that is due, and
// returns what changed for the subscribers (nil: nothing).
func (t *Table) look(l procscan.Listed, old *entry, now time.Time) []*entry {
	p, st := t.r.Stat(l.PID)
	t.stats.Stats++
	p.PID = l.PID
	e := &entry{ino: l.Ino, p: p, read: now, live: st == procscan.Running, gen: t.gen}
	if st == procscan.Gone {
		// Exited between the listing and the read: gone, or a zombie
		// until its parent reaps it (kept, so it is not read again).
		e.p = Proc{PID: l.PID}
	}
	same := old != nil && old.live && e.live && old.p.Stamp == p.Stamp
	if same && old.p.Comm == p.Comm && !t.wanted(p.Comm) {
		// The same process, its name unchanged and of no subscriber's
		// interest: its command line is not read (an exec, or a Node CLI
		// setting its title, renames it). One a subscriber may want is
		// read again (a node that exec'd another node script). The
		// entry is kept, only its read marked: the recheck of an idle
		// table makes no garbage but the read itself.
		old.ino, old.read, old.gen, old.p.PPID = l.Ino, now, t.gen, p.PPID
		return nil
	}
	if e.live && t.wanted(e.p.Comm) {
		e.p.Argv, _ = t.r.Cmdline(l.PID)
		t.stats.Cmdlines++
	}
	t.procs[l.PID] = e
	var out []*entry
	switch {
	case same:
		if old.p.Comm == e.p.Comm && slices.Equal(old.p.Argv, e.p.Argv) {
			return nil
		}
		return []*entry{e} // exec'd, or retitled
	case old != nil && old.live:
		out = append(out, &entry{p: old.p}) // the pid's earlier process is gone
	}
	if e.live {
		out = append(out, e)
	}
	return out
}

// wanted tells whether a subscriber may want a process of this kernel
// name (its command line is read then); t.mu is held.
func (t *Table) wanted(comm string) bool { return t.any > 0 || t.named[comm] > 0 }

// isYoung tells whether p's stat is read again at every scan (a fork not
// yet exec'd, a CLI that sets its title after its start: both rename it).
func (t *Table) isYoung(p Proc, now time.Time) bool {
	return !p.Started.IsZero() && now.Sub(p.Started) < t.young()
}

// Current reads p again (its stat and command line): the process as it is
// now, false when it is gone or its pid is another process's. A source
// confirms what it lists with it: a process caught between its fork and
// its exec shows its parent's name and command line.
func (t *Table) Current(p Proc) (Proc, bool) {
	now, st := t.r.Stat(p.PID)
	if st != procscan.Running || now.Stamp != p.Stamp {
		return Proc{}, false
	}
	now.PID = p.PID
	now.Argv, _ = t.r.Cmdline(p.PID)
	return now, true
}

// Subscribe hands the processes of comms that match accepts to a new
// subscriber: those
// the table holds now at once, then every change (Sub). comms are the
// kernel names its processes may have (nil: any): the table reads a
// process's command line only when some subscriber may want it, so most
// processes cost one read of their stat. match sees a process's pid,
// parent, kernel name, command line and start; it runs under the table's
// lock and must not call the table.
func (t *Table) Subscribe(comms []string, match func(Proc) bool) *Sub {
	s := &Sub{t: t, comms: comms, match: match, c: make(chan struct{}, 1), set: map[int]Proc{}}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.subs[s] = struct{}{}
	if comms == nil {
		t.any++
	}
	for _, c := range comms {
		t.named[c]++
	}
	var now []*entry
	for _, e := range t.procs {
		if !e.live {
			continue
		}
		if e.p.Argv == nil && t.wanted(e.p.Comm) {
			// Not wanted until now: read it for this subscriber.
			e.p.Argv, _ = t.r.Cmdline(e.p.PID)
			t.stats.Cmdlines++
		}
		now = append(now, e)
	}
	s.deliver(now)
	return s
}

// Sub is one subscriber's view of the table: the live processes its match
// accepts.
type Sub struct {
	t     *Table
	comms []string
	match func(Proc) bool
	c     chan struct{}

	mu   sync.Mutex
	set  map[int]Proc
	seen map[int]Proc // the set as Changes last reported it
}

// Changes is what changed in a subscriber's view: the processes that
// appeared (or whose command line changed while they still match) and
// those gone (exited, or no longer matching).
type Changes struct {
	New, Gone []Proc
}

// deliver applies the table's changed entries (live false: gone) to the
// subscriber's set and wakes it when the set changed.
func (s *Sub) deliver(changed []*entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	woke := false
	for _, e := range changed {
		old, had := s.set[e.p.PID]
		switch {
		case e.live && s.wants(e.p.Comm) && s.match(e.p):
			if had && old.Stamp == e.p.Stamp && old.Comm == e.p.Comm && slices.Equal(old.Argv, e.p.Argv) {
				continue
			}
			s.set[e.p.PID] = e.p
			woke = true
		case had:
			// Gone, or no longer matching (an exec, or a new process
			// under the pid).
			delete(s.set, e.p.PID)
			woke = true
		}
	}
	if woke {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}

// wants tells whether a process of this kernel name may be the
// subscriber's.
func (s *Sub) wants(comm string) bool { return s.comms == nil || slices.Contains(s.comms, comm) }

// C has a value whenever the subscriber's set changed since it was last
// received (bursts coalesce).
func (s *Sub) C() <-chan struct{} { return s.c }

// Procs is the subscriber's set now, by pid.
func (s *Sub) Procs() []Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.SortedFunc(maps.Values(s.set), byPID)
}

// Changes is what changed in the set since the last call (the first call:
// everything in it).
func (s *Sub) Changes() Changes {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c Changes
	for pid, p := range s.set {
		if o, ok := s.seen[pid]; !ok || o.Stamp != p.Stamp || !slices.Equal(o.Argv, p.Argv) {
			c.New = append(c.New, p)
		}
	}
	for pid, o := range s.seen {
		if p, ok := s.set[pid]; !ok || p.Stamp != o.Stamp {
			c.Gone = append(c.Gone, o)
		}
	}
	s.seen = maps.Clone(s.set)
	slices.SortFunc(c.New, byPID)
	slices.SortFunc(c.Gone, byPID)
	return c
}

// byPID orders processes by pid (a subscriber's lists are read in order).
func byPID(a, b Proc) int { return a.PID - b.PID }

// Close ends the subscription: the table no longer delivers to it.
func (s *Sub) Close() {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.subs[s]; !ok {
		return
	}
	delete(t.subs, s)
	if s.comms == nil {
		t.any--
	}
	for _, c := range s.comms {
		if t.named[c]--; t.named[c] <= 0 {
			delete(t.named, c)
		}
	}
}
