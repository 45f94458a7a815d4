package agentkit

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Adapter is what an agent adapter gives the registry: its names, how one
// of its processes starts from the registry's options, and how one that an
// earlier run of the app lost is stopped. P is the adapter's process type.
type Adapter[P sessions.Process] struct {
	Info Info
	// Start starts one process (the adapter's own Start, its options mapped
	// from the registry's).
	Start func(sessions.StartOptions) (P, error)
	// ReapOrphan stops pid when it still is one of this agent's processes
	// that an earlier run of the app lost, never an unrelated process that
	// reused the pid: one whose start stamp is not stamp, when stamp is set
	// (sessions.OrphanReaper).
	ReapOrphan func(pid int, stamp string) (bool, error)
}

// Definer is a zero-size type that gives an agent's Adapter.
type Definer[P sessions.Process] interface{ Adapter() Adapter[P] }

// Agent implements sessions.ManagedAgent and sessions.OrphanReaper from
// D's Adapter. An adapter embeds it in its own Agent struct, given that
// struct as D (type Agent struct{ agentkit.Agent[Agent, *Process] }, with
// an Adapter method), which so stays a zero-size value the registry lists
// as Agent{}; the adapter itself is left with its protocol.
type Agent[D Definer[P], P sessions.Process] struct{}

func (Agent[D, P]) adapter() Adapter[P] {
	var d D
	return d.Adapter()
}

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.NAME.command.
func (a Agent[D, P]) Name() string { return a.adapter().Info.Name }

// DisplayName is how the UI calls the agent.
func (a Agent[D, P]) DisplayName() string { return a.adapter().Info.Display }

// DefaultCommand is the executable on PATH that the installer puts there.
func (a Agent[D, P]) DefaultCommand() string { return a.adapter().Info.Command }

// InstallHint is how the agent's CLI is installed.
func (a Agent[D, P]) InstallHint() string { return a.adapter().Info.Install }

// Start starts one process of the agent.
func (a Agent[D, P]) Start(_ context.Context, o sessions.StartOptions) (sessions.Process, error) {
	p, err := a.adapter().Start(o)
	if err != nil {
		// Not p: a nil *Process in the interface would not be nil.
		return nil, err
	}
	return p, nil
}

// ReapOrphan stops a process of the agent that an earlier run of the app
// lost.
func (a Agent[D, P]) ReapOrphan(pid int, stamp string) (bool, error) {
	return a.adapter().ReapOrphan(pid, stamp)
}

// TerminalResumeArgs is the command line (command, else the default one)
// that continues the agent's session id interactively in a terminal
// (sessions.TerminalResumer).
func (a Agent[D, P]) TerminalResumeArgs(command, id string) ([]string, error) {
	return a.adapter().Info.ResumeArgs(command, id)
}
