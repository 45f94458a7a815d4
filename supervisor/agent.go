package supervisor

import (
	"context"
	"os"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// StartOptions is what an agent needs to start one process.
type StartOptions struct {
	// Command is the executable (a setting such as agents.claude.command).
	Command        string
	Cwd            string
	PermissionMode string
	// ResumeID, when set, continues the agent's own session of that id.
	ResumeID string
	// Env is added to the inherited environment.
	Env []string
	// WriteTimeout bounds one write to the agent's stdin: an agent that
	// leaves input unread that long fails the write with an error wrapping
	// os.ErrDeadlineExceeded instead of blocking its caller.
	WriteTimeout time.Duration
}

// Agent launches processes of one agent CLI. Implementations live in the
// adapters (sessions/claude, …); they satisfy this interface structurally so
// that sessions never imports supervisor.
type Agent interface {
	Start(ctx context.Context, opts StartOptions) (Process, error)
}

// Process is one running agent process the app owns.
type Process interface {
	PID() int
	// Events yields the decoded stream; it is closed when stdout ends.
	Events() <-chan sessions.Event
	SendPrompt(text string) error
	// Interrupt asks the agent to abort the turn in flight.
	Interrupt() error
	AnswerPermission(p sessions.Permission, allow bool, message string) error
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
