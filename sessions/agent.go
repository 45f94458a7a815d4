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
// pid): pid and its start stamp as the session recorded them
// (Session.PIDStart; empty when none was recorded).
type OrphanReaper interface {
	ReapOrphan(pid int, stamp string) (bool, error)
}

// TerminalResumer is optional for a ManagedAgent: how its own interactive
// CLI continues one of its sessions in a terminal ("Continue in terminal":
// `claude --resume ID`, `codex resume ID`). The line is command (the
// agents.NAME.command setting, else the default) and the arguments; an
// agent whose CLI cannot resume in a terminal, or an id that is not one of
// its ids, is an error.
type TerminalResumer interface {
	TerminalResumeArgs(command, agentSessionID string) ([]string, error)
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
// agent running in a terminal, found through its own files or hooks).
//
// A source discovers sessions and infers, from outside, the state of each:
// Observe yields EvObserved events carrying the whole inferred state (its
// rule stack's verdict with the evidence sentence), which Apply takes as-is,
// plus EvSessionEnded when the session goes away. Reconcile then treats the
// session like any other (liveness from its pid, stalls, recovery), except
// that the only way in is Nudge: a session the app does not own is never
// signalled and never typed into. A nudge counts as sent only once the
// session shows it arrived (a new turn, or new evidence from Observe), so
// Observe must report the activity a nudge causes. A session whose process
// is gone mid-turn can be resumed in the background: the runtime starts the
// ManagedAgent registered under the source's Name with ResumeID set to the
// session's AgentSessionID (so that id must be what the agent's own resume
// takes: Claude's session id, Codex's thread id).
type ExternalSource interface {
	AgentInfo
	// Watch reports the sessions the source can see: every value sent is
	// the complete current list, sent at start and whenever it changes.
	// The channel is closed when ctx ends.
	Watch(ctx context.Context) (<-chan []ExternalSession, error)
	// Observe streams events for one discovered session until ctx ends or
	// the session goes away (its last event is then EvSessionEnded and
	// the channel is closed).
	Observe(ctx context.Context, s ExternalSession) (<-chan Event, error)
	// Alive probes the session's process: known is false when the probe
	// cannot tell, never a guess of alive.
	Alive(s ExternalSession) (alive, known bool)
	// CanNudge reports whether Nudge can reach this session at all.
	CanNudge(s ExternalSession) bool
	// Nudge delivers text (always the supervisor's constant nudge). Urgent
	// aborts the turn in flight first (the hard-stall interrupt); otherwise
	// the text waits for the turn, or starts one when the session is idle.
	// A nil error means handed over, not arrived: the runtime verifies that.
	Nudge(ctx context.Context, s ExternalSession, text string, urgent bool) error
}

// TurnWitness is optional for an ExternalSource: the agent's own record of a
// session (Claude's transcript), which the runtime also reads for a managed
// session of the same agent whose stream went quiet with its tools finished,
// so a turn whose end the stream lost (a result line that never came) is
// completed instead of stalling until a nudge.
type TurnWitness interface {
	// TurnEnded reads the record of the agent's session agentSessionID run
	// in cwd: ok is true when its last turn has ended, at is that record's
	// own time. ok is false when the record is missing, unreadable, or says
	// the turn goes on.
	TurnEnded(cwd, agentSessionID string) (at time.Time, ok bool)
}

// ExternalSession identifies a session found by an ExternalSource.
type ExternalSession struct {
	// Key identifies the session for as long as its process lives (the
	// agent's own session id can change under it: Claude's /clear). It is
	// stable across restarts of the app.
	Key string
	// AgentSessionID is the agent's own id for the session.
	AgentSessionID string
	Cwd            string
	// PID is the agent's process when known (0 otherwise), for liveness.
	PID int
	// Name is the agent's own name for the session, if it has one.
	Name      string
	StartedAt time.Time
}
