// Package sessions holds the session model: the activity state machine, the
// normalized event vocabulary every agent adapter emits, and Apply, the pure
// reducer that turns stream evidence into state. It imports only the standard
// library so that every other package can depend on it.
package sessions

import (
	"fmt"
)

// State is a session's activity state. Every session is in exactly one.
type State int

// The states, in the order the spec lists them. Idle is the zero value so a
// freshly created session with nothing in flight is honest by default.
const (
	Idle State = iota
	Working
	Compacting
	WaitingOnUser
	Recovering
	Suspect
	Interrupted
	Errored
)

// AllStates lists every state, for tables and filters.
var AllStates = []State{Working, Compacting, WaitingOnUser, Recovering, Suspect, Interrupted, Errored, Idle}

var stateNames = map[State]string{
	Idle:          "idle",
	Working:       "working",
	Compacting:    "compacting",
	WaitingOnUser: "waiting_on_user",
	Recovering:    "recovering",
	Suspect:       "suspect",
	Interrupted:   "interrupted",
	Errored:       "errored",
}

var stateLabels = map[State]string{
	Idle:          "Idle",
	Working:       "Working",
	Compacting:    "Compacting",
	WaitingOnUser: "Waiting on user",
	Recovering:    "Recovering",
	Suspect:       "Suspect",
	Interrupted:   "Interrupted",
	Errored:       "Errored",
}

// String returns the stable lower_snake name used in storage and JSON.
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Label returns the human name shown in the UI and CLI tables.
func (s State) Label() string {
	if n, ok := stateLabels[s]; ok {
		return n
	}
	return s.String()
}

// Valid reports whether s is one of the eight states.
func (s State) Valid() bool { _, ok := stateNames[s]; return ok }

// MarshalText implements encoding.TextMarshaler with the lower_snake name.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("invalid state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseState parses a lower_snake state name.
func ParseState(name string) (State, error) {
	for st, n := range stateNames {
		if n == name {
			return st, nil
		}
	}
	return Idle, fmt.Errorf("unknown state %q (want one of working, compacting, waiting_on_user, recovering, suspect, interrupted, errored, idle)", name)
}

// enum is the shared implementation of the small string-named enums below
// (source, wait reason, failure kind): each is an int with a fixed name table.
type enum interface {
	~int
}

func enumString[E enum](names []string, v E) string {
	if int(v) >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%d", int(v))
}

func enumParse[E enum](what string, names []string, s string) (E, error) {
	for i, n := range names {
		if n == s {
			return E(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, s)
}

// Source says how a session came under supervision.
type Source int

// The three sources (see ARCHITECTURE.md, "Three ways a session comes under supervision").
const (
	Managed Source = iota
	Hooked
	Observed
)

var sourceNames = []string{"managed", "hooked", "observed"}

func (s Source) String() string                { return enumString(sourceNames, s) }
func (s Source) MarshalText() ([]byte, error)  { return []byte(s.String()), nil }
func (s *Source) UnmarshalText(b []byte) error { return parseInto(s, "source", sourceNames, b) }
func parseInto[E enum](p *E, what string, names []string, b []byte) error {
	v, err := enumParse[E](what, names, string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// WaitReason says what a WaitingOnUser session waits for.
type WaitReason int

// The reasons. NoWait is the zero value: the session waits on nothing.
const (
	NoWait WaitReason = iota
	WaitQuestion
	WaitPlan
	WaitPermission
	WaitReview
)

var waitNames = []string{"", "question", "plan", "permission", "review"}

func (w WaitReason) String() string                { return enumString(waitNames, w) }
func (w WaitReason) MarshalText() ([]byte, error)  { return []byte(w.String()), nil }
func (w *WaitReason) UnmarshalText(b []byte) error { return parseInto(w, "wait reason", waitNames, b) }

// Asks is what a session waiting for w does, after its name in a
// notification: "has a question for you".
func (w WaitReason) Asks() string {
	switch w {
	case WaitQuestion:
		return "has a question for you"
	case WaitPlan:
		return "waits for you to approve a plan"
	case WaitPermission:
		return "asks for permission"
	}
	return "waits for you"
}

// FailureKind classifies why a turn failed.
type FailureKind int

// The kinds. NoFailure is the zero value.
const (
	NoFailure FailureKind = iota
	RateLimit
	Overloaded
	// Network: the API could not be reached, the connection dropped, or it
	// answered with a server error (5xx other than an overload). Transient.
	Network
	ContextOverflow
	Auth
	Billing
	OtherFailure
	// Launch: the agent process exited before its turn started (no init,
	// no stream event): a bad install, a bad flag, a resume that could not
	// find its session. Nudging cannot fix it.
	Launch
)

var failureNames = []string{"", "rate_limit", "overloaded", "network", "context_overflow", "auth", "billing", "other", "launch"}

func (k FailureKind) String() string               { return enumString(failureNames, k) }
func (k FailureKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
func (k *FailureKind) UnmarshalText(b []byte) error {
	return parseInto(k, "failure kind", failureNames, b)
}

// Label is the human phrase for a failure kind.
func (k FailureKind) Label() string {
	switch k {
	case RateLimit:
		return "rate limited"
	case Overloaded:
		return "API overloaded"
	case Network:
		return "network or server error"
	case ContextOverflow:
		return "context overflow"
	case Auth:
		return "authentication failed"
	case Billing:
		return "billing error"
	case OtherFailure:
		return "error"
	case Launch:
		return "launch failed"
	}
	return "no failure"
}

// Actor says who asked for something (an interrupt, a turn).
type Actor int

// The actors.
const (
	ByUser Actor = iota
	BySupervisor
)

var actorNames = []string{"user", "supervisor"}

func (a Actor) String() string                { return enumString(actorNames, a) }
func (a Actor) MarshalText() ([]byte, error)  { return []byte(a.String()), nil }
func (a *Actor) UnmarshalText(b []byte) error { return parseInto(a, "actor", actorNames, b) }
