package observe

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Files is what a process-table source's observer knows of its agent's
// files: how the file F paired with a process is found and read, and what
// the rule stack makes of it. The loop itself (FileObserver) is the same
// for every source.
type Files[F any, T any, S interface {
	*T
	Summary
}] struct {
	// Pair is the file paired with the process now, found again at every
	// look (the agent may move the session to another file).
	Pair func(pid int) (F, bool)
	// Path is the file of a pair to tail; a pair with another path is
	// followed anew.
	Path func(F) string
	// Before is the directory where a file not paired yet will appear
	// (watched until then).
	Before func() string
	// FoundIsPast: a file paired only after following began holds the
	// past (a resumed session's history), not new turns. Without it, such
	// a file is news (written at the first prompt, or a new session).
	FoundIsPast bool
	// RereadIsPast is the Follower's.
	RereadIsPast bool
	// Infer decides the state from one look.
	Infer func(Look[F, S]) sessions.ObservedState
	// Prompt is the summary's first prompt (the session's title).
	Prompt func(S) string
	// SessionID is the agent's session id an observation carries.
	SessionID func(F, S) string
	// Gone says how the user saw the process go ("the Codex terminal was
	// closed, or it was killed").
	Gone string
	// Usage, when set, is the session's usage as reports (none yet: nil),
	// called at every look; a report that differs from the last one sent
	// for its counter goes out as an EvMetrics. A report must count once
	// however often it is sent (a running total, sessions.UsageCumulative),
	// since a file read again reports it again.
	Usage func(F, S) []sessions.UsageReport
	// RateWindows, when set, are the plan usage windows the file last
	// reported (none: nil), called at every look; a window that differs
	// from the last one sent of its kind goes out as an EvMetrics, unless
	// it has reset already (an old file's reading says nothing of the
	// account now).
	RateWindows func(F, S) []sessions.RateWindow
}

// Look is what one step of a FileObserver read: the process probe, the
// pair followed (the zero F before one is found) and the summary.
type Look[F any, S any] struct {
	Liveness
	// Following is false until a file is paired.
	Following bool
	Pair      F
	// Lines is how many lines this look read.
	Lines   int
	Summary S
}

// FileObserver is one process-table session's observe loop memory: its
// process, the file paired with it and that file's tail.
type FileObserver[F any, T any, S interface {
	*T
	Summary
}] struct {
	files Files[F, T, S]
	probe func(pid int, started time.Time) (alive, known bool)
	es    sessions.ExternalSession
	pair  F
	file  Follower[T, S]
	// usage is the last usage report sent, by counter.
	usage map[string]sessions.UsageReport
	// windows is the last plan window sent, by kind.
	windows map[string]sessions.RateWindow
	// looked: the first Step is done (its usage reports were backfill).
	looked bool

	// mu guards dir: Step (the observe loop's goroutine) moves it, Dirs
	// (the wake-up's goroutine) reads it.
	mu  sync.Mutex
	dir string
}

// NewFileObserver starts observing es (probed with probe): a file already
// paired is followed, and what it holds is the past; a paired file that
// does not exist yet (written at the first prompt) is all news.
func NewFileObserver[F any, T any, S interface {
	*T
	Summary
}](files Files[F, T, S], probe func(pid int, started time.Time) (alive, known bool), es sessions.ExternalSession) *FileObserver[F, T, S] {
	o := &FileObserver[F, T, S]{files: files, probe: probe, es: es}
	o.file.RereadIsPast = files.RereadIsPast
	if f, ok := files.Pair(es.PID); ok {
		_, err := os.Stat(files.Path(f))
		o.follow(f, err == nil)
	}
	return o
}

// follow starts tailing the file of pair f (the first found, or another
// one the session moved to); history: the turns it holds are the past.
func (o *FileObserver[F, T, S]) follow(f F, history bool) {
	o.pair = f
	path := o.files.Path(f)
	o.file.Follow(path, history)
	o.mu.Lock()
	o.dir = filepath.Dir(path)
	o.mu.Unlock()
}

// File is the follower of the session's file (its tail, its summary).
func (o *FileObserver[F, T, S]) File() *Follower[T, S] { return &o.file }

// Dirs are the directories whose change is news: the followed file's,
// else where it will appear. Safe to call from another goroutine than
// Step's.
func (o *FileObserver[F, T, S]) Dirs() []string {
	o.mu.Lock()
	dir := o.dir
	o.mu.Unlock()
	if dir == "" {
		return []string{o.files.Before()}
	}
	return []string{dir}
}

// Step reads what changed and returns the events to send: an EvObserved
// whenever the inferred state changes or the file grows (growth is
// activity: the stall clock), and EvSessionEnded once the process is gone
// (done then).
func (o *FileObserver[F, T, S]) Step() (evs []sessions.Event, done bool) {
	alive, known := o.probe(o.es.PID, o.es.StartedAt)
	if f, ok := o.files.Pair(o.es.PID); ok && o.files.Path(f) != o.file.Path() {
		o.follow(f, o.files.FoundIsPast && !o.file.Following())
	}
	lines := o.file.Read()
	sum := o.file.Summary()
	st := o.files.Infer(Look[F, S]{Liveness: Liveness{PID: o.es.PID, Alive: alive, Known: known}, Following: o.file.Following(),
		Pair: o.pair, Lines: lines, Summary: sum})
	st.Name = Title(o.files.Prompt(sum))
	gone := known && !alive
	if st, send := o.file.Next(st, gone); send {
		evs = append(evs, sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.files.SessionID(o.pair, sum),
			PID: o.es.PID, Observed: &st})
	}
	if o.files.Usage != nil {
		for _, u := range o.files.Usage(o.pair, sum) {
			if o.usage[u.Counter] == u {
				continue
			}
			if o.usage == nil {
				o.usage = map[string]sessions.UsageReport{}
			}
			o.usage[u.Counter] = u
			// The first look's reports are what the file held when it
			// was found: spent before this observer watched.
			u.Backfill = !o.looked
			evs = append(evs, sessions.Event{Kind: sessions.EvMetrics, AgentSessionID: o.files.SessionID(o.pair, sum), PID: o.es.PID, Usage: &u})
		}
	}
	if o.files.RateWindows != nil {
		evs = append(evs, o.newWindows(o.files.RateWindows(o.pair, sum), o.files.SessionID(o.pair, sum))...)
	}
	o.looked = true
	if gone {
		return append(evs, Ended(o.es.PID, o.files.Gone)), true
	}
	return evs, false
}

// newWindows are the events of the windows in ws not sent yet as they are
// (one window per event), a window that has reset already left out.
func (o *FileObserver[F, T, S]) newWindows(ws []sessions.RateWindow, id string) []sessions.Event {
	var evs []sessions.Event
	now := time.Now()
	for _, w := range ws {
		if last, ok := o.windows[w.Kind]; ok && last == w || !w.ResetsAt.IsZero() && !w.ResetsAt.After(now) {
			continue
		}
		if o.windows == nil {
			o.windows = map[string]sessions.RateWindow{}
		}
		o.windows[w.Kind] = w
		evs = append(evs, sessions.Event{Kind: sessions.EvMetrics, Detail: "rate limits", AgentSessionID: id, PID: o.es.PID, RateWindow: &w})
	}
	return evs
}
