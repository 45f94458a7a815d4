package sessions

import (
	"context"
	"os"
	"time"
)

// This file is the adapter contract: what an agent CLI's package under
// sessions/ provides so the supervisor can run it without knowing its name.
// It lives here, in the standard-library-only core, so adapters implement it
// directly (they already import sessions for Event) and the supervisor, the
// settings and the UI read the same registry (registry.go).

// AgentInfo is how an agent is named and started by default: the registry
// derives its settings key (agents.NAME.command), the New session dialog's
// choice and the doctor's check from it.
type AgentInfo interface {
	// Name is the stable identifier stored with every session and used in
	// settings keys and the CLI's --agent: lower case, no dots or spaces.
	Name() string
	// DisplayName is how people call the agent ("Claude Code").
	DisplayName() string
	// DefaultCommand is the agents.NAME.command default: a name on PATH.
	DefaultCommand() string
	// InstallHint is the command that installs the CLI, for doctor.
	InstallHint() string
}

// StartOptions is what an agent needs to start one process.
type StartOptions struct {
	// Command is the executable (the agent's agents.NAME.command setting).
	Command        string
	Cwd            string
	PermissionMode string
	// ResumeID, when set, continues the agent's own session of that id.
	ResumeID string
	// Env is added to the inherited environment.
	Env []string
	// WriteTimeout bounds one write to the agent's stdin: an agent that
	// leaves input unread that long fails the write with an error wrapping
	// os.ErrDeadlineExceeded instead of blocking its caller (0: no bound).
	WriteTimeout time.Duration
}

// Launcher starts processes of one agent CLI.
type Launcher interface {
	Start(ctx context.Context, opts StartOptions) (Process, error)
}

// ManagedAgent is an agent CLI the app launches and owns: it decodes the
// agent's stream into Events, sends prompts, interrupts, answers permission
// requests, and classifies failures (through the Events it produces).
type ManagedAgent interface {
	AgentInfo
	Launcher
}

// OrphanReaper is optional for a ManagedAgent: it stops a process an
// earlier run of the app lost (never an unrelated process that reused the
// pid).
type OrphanReaper interface {
	ReapOrphan(pid int) (bool, error)
}

// Process is one running agent process the app owns.
type Process interface {
	PID() int
	// Events yields the decoded stream; it is closed when stdout ends.
	Events() <-chan Event
	SendPrompt(text string) error
	// Interrupt asks the agent to abort the turn in flight.
	Interrupt() error
	AnswerPermission(p Permission, allow bool, message string) error
	// Compact asks the agent to compact its context.
	Compact() error
	// CloseInput closes stdin: the turn in flight finishes, then the agent exits.
	CloseInput() error
	// Signal signals the whole process group.
	Signal(sig os.Signal) error
	// Wait waits for the process after Events is closed: exit code, or the
	// signal's name when it was killed.
	Wait() (code int, signal string, err error)
	// SkippedLines counts stream lines skipped (malformed, unknown, oversize).
	SkippedLines() int
	// StderrTail is the last few KB of stderr, for diagnostics only: it is
	// never persisted or shown in notifications.
	StderrTail() string
}

// ExternalSource is the contract for sessions the app did not launch (an
// agent running in a terminal, found through its own files or hooks). It is
// declared so the shape is fixed before the first implementation; nothing
// implements or consumes it yet.
//
// A source discovers sessions, then turns what it observes about each into
// the same Events a managed process produces, so Apply and Reconcile treat
// both alike. It can deliver a nudge only where the agent offers a way in
// (a resume command, an input channel); otherwise the supervisor escalates
// instead of nudging.
type ExternalSource interface {
	AgentInfo
	// Discover lists the sessions the source can see now.
	Discover(ctx context.Context) ([]ExternalSession, error)
	// Observe streams Events for one discovered session until ctx ends or
	// the session goes away (the channel is then closed).
	Observe(ctx context.Context, s ExternalSession) (<-chan Event, error)
	// CanNudge reports whether Nudge can reach this session at all.
	CanNudge(s ExternalSession) bool
	// Nudge delivers the constant continuation nudge text.
	Nudge(ctx context.Context, s ExternalSession, text string) error
}

// ExternalSession identifies a session found by an ExternalSource.
type ExternalSession struct {
	// AgentSessionID is the agent's own id for the session.
	AgentSessionID string
	Cwd            string
	// PID is the agent's process when known (0 otherwise), for liveness.
	PID int
}
