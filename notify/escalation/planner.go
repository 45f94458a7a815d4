// Package escalation decides when a session that needs the user is pushed
// beyond the desktop (ntfy, a webhook): the desktop is told at once (package
// notify); a push follows when the incident is still open after a delay, at
// once when no desktop is there, never during quiet hours (one summary when
// they end), never twice per incident per channel, and a burst goes out as
// one message. The Planner is pure: it is given every session change and
// the time, and answers what to send; the Runner does the sending.
package escalation

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
)

// Kind is what an incident is about.
type Kind int

// The incident kinds.
const (
	// NeedsYou is an escalation: nothing automatic is left.
	NeedsYou Kind = iota + 1
	// Waiting is a session waiting on the user (a question, a plan, a
	// permission, or a finished turn): pushed only when the setting asks.
	Waiting
)

var kindNames = [...]string{NeedsYou: "needs_you", Waiting: "waiting"}

func (k Kind) String() string { return enum.Name(k, "kind", kindNames[:]) }

// Incident is one open reason to reach the user.
type Incident struct {
	// Key names the incident: a session, its turn and what it needs.
	Key  string
	Kind Kind
	// Session is the session's latest state.
	Session sessions.Session
	// Since is when the incident opened (the app saw it).
	Since time.Time
}

// incidentOf is the incident s is in, if any. An escalation is keyed by
// the generation escalated, a wait by the turn and what it waits for:
// the same keys as the desktop's, so an incident is one incident
// everywhere.
func incidentOf(s sessions.Session, waiting bool) (key string, kind Kind, ok bool) {
	if s.NeedsAttention {
		return fmt.Sprintf("escalated/%s/%d", s.ID, s.TurnGeneration), NeedsYou, true
	}
	if waiting && s.State == sessions.WaitingOnUser {
		return fmt.Sprintf("wait/%s/%d/%s", s.ID, s.TurnGeneration, s.WaitReason), Waiting, true
	}
	return "", 0, false
}

// Policy is the settings the planner obeys.
type Policy struct {
	// PushAfter is how long an incident stays open, unacknowledged, before
	// it is pushed while a desktop is there; 0 pushes at once.
	PushAfter time.Duration
	// PushWaiting pushes sessions waiting on the user too.
	PushWaiting bool
	// Quiet holds pushes; one summary goes out when they end.
	Quiet settings.QuietHours
	// RetryFor is how long failed deliveries of one push are retried.
	RetryFor time.Duration
	// Gather pulls forward an incident due within this long of another, so
	// a burst goes out as one message.
	Gather time.Duration
}

// DefaultRetryFor and DefaultGather are the policy's fixed parts.
const (
	DefaultRetryFor = 30 * time.Minute
	DefaultGather   = time.Minute
)

// Shape is what a push says.
type Shape int

// The shapes.
const (
	// One incident.
	Single Shape = iota + 1
	// Several incidents due together: "N sessions need attention".
	Burst
	// What stayed open through quiet hours, sent when they end.
	QuietSummary
)

var shapeNames = [...]string{Single: "single", Burst: "burst", QuietSummary: "quiet_summary"}

func (s Shape) String() string { return enum.Name(s, "shape", shapeNames[:]) }

// Push is one message for one channel.
type Push struct {
	Channel   string
	Shape     Shape
	Incidents []Incident
	// Attempt counts deliveries of this push, from 1.
	Attempt int
}

// Keys are the incidents' keys.
func (p Push) Keys() []string {
	out := make([]string, len(p.Incidents))
	for i, in := range p.Incidents {
		out[i] = in.Key
	}
	return out
}

// delivery is one channel's progress on one incident.
type delivery struct {
	done     bool      // delivered, or given up
	inflight bool      // handed out by Due, not yet Done
	attempts int       // deliveries tried
	first    time.Time // first attempt
	next     time.Time // retry not before
	gaveUp   bool
}

type incident struct {
	Incident
	// quiet: the incident came due during quiet hours; it goes out in the
	// summary when they end.
	quiet bool
	per   map[string]*delivery
}

// Planner holds the open incidents and what each channel has sent of them.
type Planner struct {
	policy   Policy
	channels []string
	open     map[string]*incident
	// bySession is each session's open incident key.
	bySession map[string]string
}

// NewPlanner returns a planner for the named channels.
func NewPlanner(p Policy, channels ...string) *Planner {
	if p.RetryFor == 0 {
		p.RetryFor = DefaultRetryFor
	}
	return &Planner{policy: p, channels: slices.Clone(channels), open: map[string]*incident{}, bySession: map[string]string{}}
}

// SetPolicy replaces the policy (a settings change); open incidents keep
// what they have sent.
func (p *Planner) SetPolicy(pol Policy) {
	if pol.RetryFor == 0 {
		pol.RetryFor = DefaultRetryFor
	}
	p.policy = pol
}

// SetChannels replaces the channels; a channel kept keeps its progress.
func (p *Planner) SetChannels(channels ...string) { p.channels = slices.Clone(channels) }

// Observe takes a session's new state at now: it opens the incident the
// session is in (keeping the one already open with the same key), and
// closes the one it left (acknowledged, answered, recovered).
func (p *Planner) Observe(s sessions.Session, now time.Time) {
	key, kind, ok := incidentOf(s, p.policy.PushWaiting)
	if old, had := p.bySession[s.ID]; had && (!ok || old != key) {
		delete(p.open, old)
		delete(p.bySession, s.ID)
	}
	if !ok {
		return
	}
	if in, had := p.open[key]; had {
		in.Session = s
		return
	}
	p.open[key] = &incident{Incident: Incident{Key: key, Kind: kind, Session: s, Since: now}, per: map[string]*delivery{}}
	p.bySession[s.ID] = key
}

// Sync takes a whole snapshot: every session in it is observed, and the
// incidents of sessions absent from it (forgotten, archived) close.
func (p *Planner) Sync(list []sessions.Session, now time.Time) {
	present := make(map[string]bool, len(list))
	for _, s := range list {
		present[s.ID] = true
		p.Observe(s, now)
	}
	for id, key := range p.bySession {
		if !present[id] {
			delete(p.open, key)
			delete(p.bySession, id)
		}
	}
}

// Open lists the open incidents, oldest first.
func (p *Planner) Open() []Incident {
	out := make([]Incident, 0, len(p.open))
	for _, in := range p.open {
		out = append(out, in.Incident)
	}
	sortIncidents(out)
	return out
}

func sortIncidents(list []Incident) {
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Since.Equal(list[j].Since) {
			return list[i].Since.Before(list[j].Since)
		}
		return list[i].Key < list[j].Key
	})
}

// dueAt is when an incident may first be pushed.
func (p *Planner) dueAt(in *incident, desktop bool) time.Time {
	if !desktop {
		return in.Since
	}
	return in.Since.Add(p.policy.PushAfter)
}

// ready reports whether channel c may send in now: due, not done, not in
// flight, and past its retry time.
func (p *Planner) ready(in *incident, c string, now time.Time, desktop bool) bool {
	d := in.per[c]
	if d != nil && (d.done || d.inflight || now.Before(d.next)) {
		return false
	}
	return !now.Before(p.dueAt(in, desktop))
}

// Due returns what to send now, at most one push per channel, and marks
// it in flight until Done. desktop says whether a desktop shows the
// notifications (a desktop that is not there cannot be waited for).
func (p *Planner) Due(now time.Time, desktop bool) []Push {
	quiet := p.policy.Quiet.Contains(now)
	var out []Push
	for _, c := range p.channels {
		var due []*incident
		anyQuiet := false
		for _, in := range p.open {
			if !p.ready(in, c, now, desktop) {
				continue
			}
			if quiet {
				in.quiet = true
				continue
			}
			due = append(due, in)
			anyQuiet = anyQuiet || in.quiet
		}
		if len(due) == 0 {
			continue
		}
		// A burst: what would come due within Gather goes now, together.
		if p.policy.Gather > 0 {
			for _, in := range p.open {
				if slices.Contains(due, in) || in.per[c] != nil {
					continue
				}
				if at := p.dueAt(in, desktop); at.After(now) && !at.After(now.Add(p.policy.Gather)) {
					due = append(due, in)
				}
			}
		}
		push := Push{Channel: c, Shape: Single}
		for _, in := range due {
			push.Incidents = append(push.Incidents, in.Incident)
			d := in.per[c]
			if d == nil {
				d = &delivery{}
				in.per[c] = d
			}
			d.inflight = true
			d.attempts++
			if d.first.IsZero() {
				d.first = now
			}
			push.Attempt = max(push.Attempt, d.attempts)
		}
		sortIncidents(push.Incidents)
		switch {
		case anyQuiet:
			push.Shape = QuietSummary
		case len(push.Incidents) > 1:
			push.Shape = Burst
		}
		out = append(out, push)
	}
	return out
}

// Outcome is how a delivery went.
type Outcome int

// The outcomes.
const (
	Delivered Outcome = iota + 1
	// Failed: worth retrying (refused, timed out, a 5xx or 429).
	Failed
	// Refused: retrying cannot help (a 4xx: a wrong token or URL).
	Refused
)

var outcomeNames = [...]string{Delivered: "delivered", Failed: "failed", Refused: "refused"}

func (o Outcome) String() string { return enum.Name(o, "outcome", outcomeNames[:]) }

// Backoff is the wait before retry n (1-based): 30 s doubling, at most
// 8 min, so a 30-minute window gets about seven tries.
func Backoff(n int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < n && d < 8*time.Minute; i++ {
		d *= 2
	}
	return min(d, 8*time.Minute)
}

// Done records how push went. A delivered push is never sent again on its
// channel; a failed one is retried with Backoff until RetryFor has passed
// since its first attempt; a refused one is given up. gaveUp reports that
// the push will not be retried without having been delivered.
func (p *Planner) Done(push Push, o Outcome, now time.Time) (gaveUp bool) {
	for _, k := range push.Keys() {
		in, ok := p.open[k]
		if !ok {
			continue // closed meanwhile
		}
		d := in.per[push.Channel]
		if d == nil {
			continue
		}
		d.inflight = false
		switch {
		case o == Delivered:
			d.done = true
			in.quiet = false
		case o == Refused || now.Sub(d.first)+Backoff(d.attempts) > p.policy.RetryFor:
			d.done, d.gaveUp = true, true
			gaveUp = true
		default:
			d.next = now.Add(Backoff(d.attempts))
		}
	}
	return gaveUp
}

// Next is the earliest time after now at which Due may return something
// new (zero: nothing pending), so the runner arms one timer instead of
// ticking.
func (p *Planner) Next(now time.Time, desktop bool) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.After(now) {
			t = now
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, in := range p.open {
		for _, c := range p.channels {
			d := in.per[c]
			if d != nil && (d.done || d.inflight) {
				continue
			}
			at := p.dueAt(in, desktop)
			if d != nil && d.next.After(at) {
				at = d.next
			}
			if !at.After(now) && p.policy.Quiet.Contains(now) {
				at = p.policy.Quiet.End(now)
			}
			consider(at)
		}
	}
	return next
}
