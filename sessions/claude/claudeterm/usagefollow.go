package claudeterm

import (
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// usageFollow counts the followed transcript's usage for its session: the
// whole file read once in the background when following begins (a long
// session's transcript runs to hundreds of megabytes; its first observation
// does not wait for it), then what was appended, at each look. Each model's
// total goes out as the running total of a counter named by the
// transcript and the model (sessions.UsageCumulative), which the session
// keeps: reading the same file again (the app restarted, the observer
// started over) adds nothing already counted, and only a total read to the
// file's end is ever sent, never the partial one of a read under way.
type usageFollow struct {
	r       *UsageReader
	sid     string
	started bool
	// read is told when the first read ended (the observer's wake-up).
	read chan<- struct{}
	// caughtUp: a look after the first read has read to the file's end.
	caughtUp bool
	// reported: the first look after the first read is done (its
	// reports were backfill).
	reported bool
	ready    chan struct{}
	sent     map[string]sessions.Tokens
}

// coldReads bounds the first reads running at once in the process: when
// the app starts beside a hundred sessions, reading their transcripts takes
// one core, never the one discovering and following them.
var coldReads = make(chan struct{}, 1)

// followUsage counts path's usage; read is told when its first read ended.
func followUsage(path, sid string, read chan<- struct{}) *usageFollow {
	return &usageFollow{r: NewUsageReader(path), sid: sid, read: read, ready: make(chan struct{}), sent: map[string]sessions.Tokens{}}
}

// begin starts the first read; the observer calls it once its session's
// first state is sent, so that read never delays it.
func (u *usageFollow) begin() {
	if u == nil || u.started {
		return
	}
	u.started = true
	go func() {
		defer func() {
			close(u.ready)
			observe.Poke(u.read)
		}()
		coldReads <- struct{}{}
		defer func() { <-coldReads }()
		if !u.r.stopped.Load() {
			_, _ = u.r.Poll() // a failed read is read again at the next look
		}
	}()
}

// scanning reports whether the first read is still under way. A nil
// usageFollow reads nothing (the follow benchmark's baseline).
func (u *usageFollow) scanning() bool {
	if u == nil {
		return false
	}
	if !u.started {
		return true
	}
	select {
	case <-u.ready:
		return false
	default:
		return true
	}
}

// close stops a first read under way (the observer ended).
func (u *usageFollow) close() {
	if u != nil {
		u.r.stopped.Store(true)
	}
}

// events reads what the transcript gained and returns a report for each
// model whose total moved; none while the first read runs.
// grew says the file changed since the last look (the tail read something
// or started over); the first look after the first read always reads, for
// what was appended while that read ran.
func (u *usageFollow) events(grew bool) []sessions.Event {
	if u == nil || u.scanning() || u.caughtUp && !grew {
		return nil
	}
	u.caughtUp = true
	if reset, _ := u.r.Poll(); reset {
		// Truncated or replaced: what it holds now is counted afresh (a
		// lower running total counts whole).
		clear(u.sent)
	}
	var evs []sessions.Event
	for _, m := range u.r.Tally.Usage.Models() {
		t := u.r.Tally.Usage[m]
		if u.sent[m] == t {
			continue
		}
		u.sent[m] = t
		// The reports after the first read are the transcript as it was
		// found (a resumed conversation's whole past): spent before it
		// was watched.
		evs = append(evs, sessions.Event{Kind: sessions.EvMetrics, AgentSessionID: u.sid, Usage: &sessions.UsageReport{
			Model: m, Tokens: t, Mode: sessions.UsageCumulative, Counter: "transcript " + u.sid + " " + m, Backfill: !u.reported}})
	}
	u.reported = true
	return evs
}
