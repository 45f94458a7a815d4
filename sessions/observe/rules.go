package observe

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Rule is one step of a source's rule stack over its evidence E: it
// matches or not, and when it matches it decides the state and writes the
// evidence sentence.
type Rule[E any] struct {
	Name  string
	Match func(E) (sessions.ObservedState, bool)
}

// Infer walks the rule stack in order and returns the first match's state
// and the rule's name; a stack that matches nothing says Idle ("nothing
// observed") rather than guessing.
func Infer[E any](rules []Rule[E], ev E) (sessions.ObservedState, string) {
	for _, r := range rules {
		if o, ok := r.Match(ev); ok {
			return o, r.Name
		}
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: "nothing observed"}, "idle"
}

// Stack is the rule stack of a source whose evidence answers the generic
// questions in the generic order (Codex, Copilot, Gemini): the process
// first (a gone process ends everything: ProcessGone, from the evidence's
// Liveness, InTurn and Witness), then a failed turn, a wait on the user,
// compaction, an open tool, a turn in flight, an ended turn, idle. A source
// fills in the slots its evidence answers; an empty one is left out.
// (Claude's stack interleaves its hook rules and lists its own.)
type Stack[E interface{ Probed() Liveness }] struct {
	// InTurn tells whether the evidence shows a turn in flight; Witness
	// says how the file shows it ("its rollout shows no end of the turn").
	InTurn  func(E) bool
	Witness string

	Failed, Waiting, Compacting, OpenTool, Working, Ended, Idle func(E) (sessions.ObservedState, bool)
}

// Rules is the stack in its order, each rule under its generic name.
func (s Stack[E]) Rules() []Rule[E] {
	out := []Rule[E]{{"process gone", s.gone}}
	for _, r := range s.slots() {
		if r.Match != nil {
			out = append(out, r)
		}
	}
	return out
}

// Infer walks the stack (as Infer walks Rules) and returns the first
// match's state and the rule's name. It builds no slice: a source infers
// at every look.
func (s Stack[E]) Infer(ev E) (sessions.ObservedState, string) {
	if o, ok := s.gone(ev); ok {
		return o, "process gone"
	}
	for _, r := range s.slots() {
		if r.Match == nil {
			continue
		}
		if o, ok := r.Match(ev); ok {
			return o, r.Name
		}
	}
	return Infer[E](nil, ev)
}

// gone is the first rule: ProcessGone for the evidence's process.
func (s Stack[E]) gone(ev E) (sessions.ObservedState, bool) {
	return ev.Probed().Gone(s.InTurn(ev), s.Witness)
}

// slots are the rules after the first, in order (an empty slot's Match
// is nil).
func (s Stack[E]) slots() [7]Rule[E] {
	return [7]Rule[E]{
		{"turn failed", s.Failed}, {"waiting on the user", s.Waiting}, {"compacting", s.Compacting},
		{"open tool", s.OpenTool}, {"turn in flight", s.Working}, {"turn ended", s.Ended}, {"idle", s.Idle},
	}
}

// Liveness is what the pid probe said of a session's process at one look.
type Liveness struct {
	PID int
	// Alive and Known are the probe's answer (Known false: cannot tell).
	Alive, Known bool
}

// Probed is the probe's answer itself: evidence that embeds a Liveness
// gives it to the generic rules (Stack).
func (l Liveness) Probed() Liveness { return l }

// Gone is the first rule of every stack (ProcessGone) for this process.
func (l Liveness) Gone(inTurn bool, witness string) (sessions.ObservedState, bool) {
	return ProcessGone(l.PID, l.Alive, l.Known, inTurn, witness)
}

// The generic rules: what every source concludes the same way once its
// summary answered the agent-specific question. Each is pure.

// ProcessGone is the first rule of every stack: a process the probe knows
// is gone ends the session, Interrupted when it died mid-turn (witness says
// how the file shows it, e.g. "its rollout shows no end of the turn"),
// else Idle. It does not match while the process lives or the probe cannot
// tell.
func ProcessGone(pid int, alive, known, inTurn bool, witness string) (sessions.ObservedState, bool) {
	if !known || alive {
		return sessions.ObservedState{}, false
	}
	if inTurn {
		return sessions.ObservedState{State: sessions.Interrupted,
			Evidence: fmt.Sprintf("process %d is gone mid-turn (%s)", pid, witness)}, true
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: fmt.Sprintf("process %d is gone", pid)}, true
}

// TurnFailed is a turn that ended on an API error f: Errored with the
// failure's class in the sentence, and when it can be retried at a known
// time, that time after retryWord ("the limit resets at", "retry after")
// in layout.
func TurnFailed(f sessions.Failure, retryWord, layout string) sessions.ObservedState {
	text := fmt.Sprintf("the turn failed (%s)", f.Kind.Label())
	if !f.RetryAt.IsZero() && retryWord != "" {
		text += fmt.Sprintf("; %s %s", retryWord, f.RetryAt.Format(layout))
	}
	return sessions.ObservedState{State: sessions.Errored, Failure: f, Evidence: text}
}

// Waiting is a turn stopped on the user (a question or an approval drawn
// in the terminal only) while tool runs.
func Waiting(wait sessions.WaitReason, tool, evidence string) sessions.ObservedState {
	return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: wait, InTurn: true, Tool: tool, Evidence: evidence}
}

// RunningTool is a turn with a tool open: Working, naming it ("a tool"
// when the file does not).
func RunningTool(tool string) sessions.ObservedState {
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Tool: tool,
		Evidence: fmt.Sprintf("running %s", OrDefault(tool, "a tool"))}
}

// Working is a turn in flight with nothing more specific to say than
// evidence.
func Working(evidence string) sessions.ObservedState {
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Evidence: evidence}
}

// TurnEnded is a turn that ended (evidence says how): the user reviews it.
func TurnEnded(evidence string) sessions.ObservedState {
	return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview, Evidence: evidence}
}

// Stopped is a turn that ended with an interrupt: a review when the user
// stopped it in the terminal, which is all an agent's files can say. When
// the supervisor had sent that interrupt, Apply makes it Interrupted
// instead (Aborted tells it to look).
func Stopped() sessions.ObservedState {
	st := TurnEnded("you stopped the turn in the terminal; waiting for review")
	st.Aborted = true
	return st
}

// Idle is a live session with no turn in flight; prompted false means no
// turn was ever seen (a TUI just opened, or its file not written yet).
func Idle(prompted bool) sessions.ObservedState {
	if !prompted {
		return sessions.ObservedState{State: sessions.Idle, Evidence: "no prompt yet in the terminal"}
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: "nothing in flight"}
}

// OrDefault is s, or def when s is empty (a name the file left out).
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
