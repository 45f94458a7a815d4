package claudeterm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its session file (status, sessionId after
// /clear or /resume), its process, and its transcript's tail. It sends an
// EvObserved whenever the inferred state changes or the transcript grows
// (growth is activity: the stall clock), and ends with EvSessionEnded when
// the session goes away.
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	f, ok := s.current(es, SessionFile{})
	if !ok {
		return nil, fmt.Errorf("session %s: its session file (or process) is gone", es.Key)
	}
	out := make(chan sessions.Event, 8)
	go s.observe(ctx, es, f, out)
	return out, nil
}

// observer is one Observe loop's memory.
type observer struct {
	src     *Source
	es      sessions.ExternalSession
	file    SessionFile
	tail    *observe.Tailer
	sum     Summary
	title   string
	last    sessions.ObservedState
	emitted bool
	// turns is the transcript's prompt count at the last observation.
	turns int
	// history: the transcript existed when following began, so the turns
	// its first read finds are the past, not news.
	history bool
	// busyCredit: a turn was reported started from the session file's
	// status before its prompt reached the transcript; that prompt is the
	// same turn, not another.
	busyCredit bool
	// unreadable is when the session file was first found missing or
	// unreadable while its process still ran (zero when it is readable).
	unreadable time.Time
	// hook wakes the loop on the session's hook events (nil: no hooks).
	hook *hookSub
	// usage counts the transcript's tokens (usagefollow.go); usageRead
	// wakes the loop when its first read ended.
	usage     *usageFollow
	usageRead chan struct{}
	// window is the plan window last sent.
	window *sessions.RateWindow
}

// fileGoneGrace is how long a live session's file may stay unreadable
// before the session counts as closed.
const fileGoneGrace = 2 * time.Second

// unreadableSince notes the first time the file could not be read.
func (o *observer) unreadableSince() time.Time {
	if o.unreadable.IsZero() {
		o.unreadable = time.Now()
	}
	return o.unreadable
}

func (s *Source) observe(ctx context.Context, es sessions.ExternalSession, f SessionFile, out chan<- sessions.Event) {
	o := &observer{src: s, es: es, file: f, hook: s.hookHub().subscribe(f.SessionID), usageRead: make(chan struct{}, 1)}
	defer o.hook.close()
	o.follow(f)
	defer func() { o.usage.close() }()
	dirs := []string{s.SessionsDir(), filepath.Dir(o.tail.Path())}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake, stop := s.wake(ctx, dirs, observe.Merge(mctx, o.hook.C(), o.usageRead), nil)
	defer stop()
	// While the file is unreadable nothing may wake the loop (no write
	// comes): look again once the grace is over.
	observe.RelaySooner(ctx, wake, o.step, out, func() time.Duration {
		if !o.unreadable.IsZero() {
			return fileGoneGrace
		}
		return 0
	})
}

// follow starts tailing the transcript of the file's current sessionId.
func (o *observer) follow(f SessionFile) {
	path := o.src.TranscriptPath(f.Cwd, f.SessionID)
	o.tail = observe.NewTailer(path)
	if o.usage != nil {
		o.usage.close()
	}
	o.usage = followUsage(path, f.SessionID, o.usageRead)
	o.hook.follow(f.SessionID)
	o.sum = Summary{}
	o.turns, o.busyCredit = 0, false
	_, err := os.Stat(path)
	o.history = err == nil
	o.title = observe.Title(FirstPrompt(path))
}

// name is the session's name: one the user gave it, else its first
// prompt's title, else the CLI's own derived name.
func (o *observer) name(f SessionFile) string {
	if f.Name != "" && f.NameSource != "derived" {
		return f.Name
	}
	if o.title == "" && o.sum.FirstPrompt != "" {
		if o.title = observe.Title(FirstPrompt(o.tail.Path())); o.title == "" {
			o.title = observe.Title(o.sum.FirstPrompt)
		}
	}
	if o.title != "" {
		return o.title
	}
	return f.Name
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	f, ok := o.src.current(o.es, o.file)
	if !ok && o.file.PID != 0 {
		if alive, known := ProcessAlive(o.file); known && alive && time.Since(o.unreadableSince()) < fileGoneGrace {
			// The CLI rewrites its file, so a read can find it half
			// written or briefly absent while its process runs on. Only a
			// file gone for longer than the grace (a clean exit, whose
			// process ends right after) ends the session.
			return nil, false
		}
	}
	o.unreadable = time.Time{}
	if !ok {
		// The transcript's last lines count before the session ends.
		evs = o.usage.events(true)
		// The CLI removes its file on a clean exit (/exit, Ctrl-D, a closed
		// terminal): the user ended it, so a turn cut short is theirs to
		// review, never a nudge.
		if o.last.InTurn {
			evs = append(evs, o.observed(observe.TurnEnded("the session was closed in the terminal during a turn; waiting for review")))
		}
		return append(evs, sessions.Event{Kind: sessions.EvSessionEnded, Detail: "the session was closed in the terminal"}), true
	}
	if f.SessionID != o.file.SessionID {
		// /clear or /resume: the same process now writes another transcript.
		o.follow(f)
	}
	statusChanged := f.Status != o.file.Status || f.WaitingFor != o.file.WaitingFor
	o.file = f
	before := o.tail.BytesRead
	lines, reset, _ := o.tail.Poll()
	// The usage is read again only when the transcript changed.
	evs = o.usage.events(reset || o.tail.BytesRead != before)
	if reset {
		o.sum.Reset()
		o.turns = 0
	}
	first := reset && o.history
	if reset {
		o.history = false // a later truncation or rotation brings new turns
	}
	for _, l := range lines {
		o.sum.Feed(l)
	}
	alive, known := o.src.probe(f)
	hook, hooked := o.src.hookHub().latest(f.SessionID)
	evd := Evidence{Liveness: observe.Liveness{PID: f.PID, Alive: alive, Known: known}, File: f, Transcript: o.sum}
	if hooked {
		evd.Hook = &hook
	}
	st, _ := Infer(evd)
	st.Name = o.name(f)
	st.Hooked = hooked
	// Turns that started since the last observation; the history a first
	// read finds is not news.
	delta := o.sum.Turns - o.turns
	o.turns = o.sum.Turns
	if first {
		delta = 0
	}
	counted := false
	if o.busyCredit && delta > 0 {
		// The prompt of a turn already counted when the status said busy.
		delta--
		o.busyCredit, counted = false, true
	}
	if st.InTurn && !o.last.InTurn && delta == 0 && !counted {
		// A turn seen starting without a new prompt: the status said busy
		// first (its prompt, when written, is this turn), or the first
		// read began inside a turn.
		delta = 1
		o.busyCredit = !o.sum.InTurn
	}
	// The credit stays when the status flips back before the prompt is
	// written: the prompt that follows is still that turn.
	st.NewTurns = delta
	gone := known && !alive
	if !o.emitted || st != o.last || len(lines) > 0 || statusChanged || gone {
		evs = append(evs, o.observed(st))
	}
	if w := o.sum.Window; w != nil && (o.window == nil || *o.window != *w) && (w.ResetsAt.IsZero() || w.ResetsAt.After(time.Now())) {
		// A window that has reset says nothing of the account now.
		o.window = w
		evs = append(evs, sessions.Event{Kind: sessions.EvMetrics, Detail: "rate limits", AgentSessionID: o.file.SessionID, PID: o.file.PID, RateWindow: w})
	}
	o.usage.begin()
	if gone {
		why := "its session file was left behind: killed or crashed"
		if isProcKey(o.es.Key) {
			why = "found in the process table: an older CLI leaves no file to tell a crash from an exit"
		}
		return append(evs, observe.Ended(f.PID, why)), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	o.last, o.emitted = st, true
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.file.SessionID, PID: o.file.PID, Observed: &st}
}
