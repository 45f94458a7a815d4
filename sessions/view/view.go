// Package view holds the rules every view of a session shares: the CLI, the
// tray and the window. How urgent a session is and in which order sessions
// are listed, the words for its state, its failure and its timeline rows,
// and which of the user's actions its state allows. Each rule is written
// once here so the three views cannot drift apart. It imports only the
// standard library and sessions, so a desktop fed by the local API renders
// with exactly the same rules as one running in the supervisor's process.
package view

import (
	"fmt"
	"sort"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Urgency is how much a session needs the user now. Lower is more urgent;
// the tray's icon is the most urgent session's, and every list puts the
// most urgent first.
type Urgency int

// The urgencies, most urgent first.
const (
	// NeedsAttention: the supervisor escalated; nothing automatic is left.
	NeedsAttention Urgency = iota
	// Waiting: the agent waits on the user (a question, a plan, a
	// permission, a finished turn to review).
	Waiting
	// Recovering: something went wrong and the supervisor is still on it
	// (recovering, suspect, and errored or interrupted not yet escalated).
	Recovering
	// Working: a turn is making progress (working, compacting).
	Working
	// Quiet: nothing in flight and nothing to do.
	Quiet
)

var urgencyNames = []string{"needs_attention", "waiting", "recovering", "working", "idle"}

func (u Urgency) String() string {
	if u >= 0 && int(u) < len(urgencyNames) {
		return urgencyNames[u]
	}
	return fmt.Sprintf("urgency(%d)", int(u))
}

// Marker is a text sign per urgency, so a label never relies on colour
// alone (the tray menu shows it before each session).
func (u Urgency) Marker() string {
	switch u {
	case NeedsAttention:
		return "⚠"
	case Waiting:
		return "●"
	case Recovering:
		return "◐"
	case Working:
		return "▶"
	}
	return "○"
}

// UrgencyOf is a session's urgency: needs attention > waiting on user >
// recovering / suspect (and errored / interrupted not yet escalated) >
// working / compacting > idle.
func UrgencyOf(s sessions.Session) Urgency {
	switch {
	case s.NeedsAttention:
		return NeedsAttention
	case s.State == sessions.WaitingOnUser:
		return Waiting
	case s.State == sessions.Recovering, s.State == sessions.Suspect,
		s.State == sessions.Errored, s.State == sessions.Interrupted:
		return Recovering
	case s.State == sessions.Working, s.State == sessions.Compacting:
		return Working
	}
	return Quiet
}

// Most is the most urgent of the sessions (Quiet for none): the tray icon.
func Most(list []sessions.Session) Urgency {
	best := Quiet
	for _, s := range list {
		best = min(best, UrgencyOf(s))
	}
	return best
}

// Less is the one list order: most urgent first, then the most recent
// state change, then the id so the order is total and stable.
func Less(a, b sessions.Session) bool {
	if ua, ub := UrgencyOf(a), UrgencyOf(b); ua != ub {
		return ua < ub
	}
	if !a.StateChangedAt.Equal(b.StateChangedAt) {
		return a.StateChangedAt.After(b.StateChangedAt)
	}
	return a.ID < b.ID
}

// Sort orders list in place by Less.
func Sort(list []sessions.Session) {
	sort.SliceStable(list, func(i, j int) bool { return Less(list[i], list[j]) })
}

// Badge is the short state word: the state's label, or "Needs attention"
// when the supervisor escalated (the state stays honest underneath and
// StateText shows both).
func Badge(s sessions.Session) string {
	if s.NeedsAttention {
		return "Needs attention"
	}
	return s.State.Label()
}

// Title is the session's name as every listing shows it, with the mark
// "(terminal)" on a session the app did not launch (found running in a
// terminal or an IDE): it is supervised alike but answered where it runs.
func Title(s sessions.Session) string {
	if s.Source != sessions.Managed {
		return s.DisplayName() + " (terminal)"
	}
	return s.DisplayName()
}

// SharedText says which other session's process runs s's conversation and
// what that means for it, or "" when none does (show, the window's detail).
func SharedText(s sessions.Session) string {
	if s.SharedWith == "" {
		return ""
	}
	return fmt.Sprintf("also run by session %s: not resumed or nudged while both run", sessions.ShortID(s.SharedWith))
}

// RecoveryText says why the supervisor does not recover s, when it is for
// s alone: a budget it is past (the sentence that named it), or the user's
// switch; "" when recovery applies as the settings say (show, the window's
// detail).
func RecoveryText(s sessions.Session) string {
	switch {
	case s.Supervision.Budget != "":
		return "stopped: " + s.Supervision.Budget + "; not nudged, continued or resumed while it lasts"
	case s.RecoveryOff:
		return "switched off for this session: not nudged, continued or resumed"
	}
	return ""
}

// StateText is the state in full, for one-line listings (the tray, `ls`):
// "Needs attention (Interrupted)", "Waiting on user (permission)",
// "Working".
func StateText(s sessions.Session) string {
	label := s.State.Label()
	switch {
	case s.NeedsAttention:
		return "Needs attention (" + label + ")"
	case s.State == sessions.WaitingOnUser && s.WaitReason != sessions.NoWait:
		return label + " (" + s.WaitReason.String() + ")"
	}
	return label
}

// FailureText is a failure in words: "rate limited — 429: rate limit
// reached"; "" when there is none. When the agent or the supervisor
// retries is said apart (RetryText, or a countdown), since the views show
// it differently.
func FailureText(f sessions.Failure) string {
	if f.Kind == sessions.NoFailure && f.Message == "" {
		return ""
	}
	text := f.Kind.Label()
	if f.Kind == sessions.NoFailure {
		text = "error"
	}
	if f.Message != "" {
		text += " — " + f.Message
	}
	return text
}

// RetryText is when a failed turn is retried, in loc: "retry at 2026-11-29
// 15:04:05"; "" when unknown.
func RetryText(f sessions.Failure, loc *time.Location) string {
	if f.RetryAt.IsZero() {
		return ""
	}
	return "retry at " + f.RetryAt.In(loc).Format(time.DateTime)
}

// Action is a command the user can give a session.
type Action int

// The actions.
const (
	Acknowledge Action = iota
	Interrupt
	Nudge
	Approve
	Deny
	// Resume launches a terminal session whose process is gone mid-turn as
	// a managed session with the nudge ("Resume in the background").
	Resume
	// GoToTerminal brings the terminal a session runs in to the front
	// ("Go to terminal").
	GoToTerminal
	// Forget removes an ended session from the app (its timeline kept or
	// deleted).
	Forget
	// ContinueInTerminal hands a managed session over to a terminal: its
	// process stopped, the agent's own resume opened in tmux or an emulator.
	ContinueInTerminal
)

var actionNames = []string{"acknowledge", "interrupt", "nudge", "approve", "deny", "resume", "go_to_terminal", "forget", "continue_in_terminal"}

func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Allows reports whether s's state allows the action, by the same rules the
// supervisor applies, so a view never offers a command that can only fail
// or do nothing:
//   - Acknowledge changes something: it always clears needs-attention, and
//     with no turn in flight it settles a reviewed turn, an error, an
//     interruption or a recovery the supervisor holds (which it stops) to
//     Idle (sessions.Apply, EvAcknowledged).
//   - Interrupt needs a turn in flight; a nudge needs none.
//   - Approve and Deny answer a pending permission request.
//   - Resume needs a session the app did not launch, whose process is gone
//     and whose turn died (Interrupted or Errored), with the agent's own
//     session id to resume (the runtime's resumable is the same rule).
//   - GoToTerminal needs a session the app did not launch whose process
//     runs: a managed one has no terminal, a gone one's terminal is gone
//     (Resume is offered beside it).
//   - Forget needs a session that ended: no process, no turn in flight
//     (the runtime's Forget refuses the others).
//   - ContinueInTerminal needs a managed session whose agent session id
//     is known and that no other process runs (sessions.WhyNoHandover, the
//     runtime's rule); a turn in flight is waited for or interrupted.
func Allows(s sessions.Session, a Action) bool {
	switch a {
	case Acknowledge:
		return s.NeedsAttention || (!s.InTurn && settlesOnAck(s))
	case Interrupt:
		return s.InTurn
	case Nudge:
		return !s.InTurn
	case Approve, Deny:
		// A request without an id is a terminal's dialog: answered there.
		return s.Permission != nil && s.Permission.RequestID != "" && s.State == sessions.WaitingOnUser
	case Resume:
		return sessions.WhyNotResumable(s) == ""
	case GoToTerminal:
		return s.Source != sessions.Managed && s.PID > 0 && s.ProcessAlive
	case Forget:
		return !s.ProcessAlive && !s.InTurn
	case ContinueInTerminal:
		return sessions.WhyNoHandover(s) == ""
	}
	return false
}

// settlesOnAck mirrors the states sessions.Apply moves to Idle on
// acknowledgement.
func settlesOnAck(s sessions.Session) bool {
	switch s.State {
	case sessions.Errored, sessions.Interrupted:
		return true
	case sessions.Recovering:
		// A recovery the supervisor holds: acknowledging stops it.
		return true
	case sessions.WaitingOnUser:
		return s.WaitReason == sessions.WaitReview
	}
	return false
}
