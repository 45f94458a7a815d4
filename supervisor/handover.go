package supervisor

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// "Continue in terminal": a managed session is handed to a terminal. The
// runtime waits for its turn to end (or interrupts it at the user's word),
// stops its process cleanly, and answers the agent's own resume (`claude
// --resume ID`); the caller opens that where the person is (their tmux,
// their display), as focus does. The session is marked (HandoverAt): the
// first terminal session its agent's source finds on its agent session id
// becomes this session (adoptHandoverLocked), the same id and timeline,
// observed and recovered by the terminal rules from then on, listed once.
// The supervisor names no agent: the resume line is the agent's
// (sessions.TerminalResumer), and a terminal source of the same name must
// exist to follow it.

// Grace periods of the stop: the process is asked to end by closing its
// input (the agent finishes and exits), then SIGTERM, then SIGKILL.
var (
	handoverCloseGrace = 10 * time.Second
	handoverTermGrace  = 5 * time.Second
	handoverKillGrace  = 5 * time.Second
)

// handoverAdoptWindow bounds how long after the stop a terminal session
// whose agent session id differs (an agent whose resume makes a new id)
// is still taken for the hand-over, by its agent and directory.
const handoverAdoptWindow = 2 * time.Minute

// Handover stops managed session id's process to continue it in a
// terminal and returns the command that continues it there.
func (r *Runtime) Handover(ctx context.Context, id string, req localapi.HandoverRequest) (localapi.Handover, error) {
	e, err := r.find(id)
	if err != nil {
		return localapi.Handover{}, err
	}
	r.mu.Lock()
	s := e.s.Clone()
	s.SharedWith = r.sharedConversationsLocked()[s.ID]
	r.mu.Unlock()
	argv, err := r.handoverArgv(s)
	if err != nil {
		return localapi.Handover{}, err
	}
	wait := localapi.DefaultHandoverWait
	if req.WaitSeconds > 0 {
		wait = time.Duration(req.WaitSeconds) * time.Second
	}
	if s.InTurn && req.Interrupt {
		if _, err := r.Interrupt(ctx, s.ID); err != nil && r.current(e).InTurn {
			return localapi.Handover{}, fmt.Errorf("handing %s over: interrupting its turn: %w", s.DisplayName(), err)
		}
	}
	if err := r.awaitTurnEnd(ctx, e, wait, req.Interrupt); err != nil {
		return localapi.Handover{}, err
	}
	var stopped string
	got, err := r.job(ctx, e, func() (<-chan writeResult, error) {
		r.mu.Lock()
		if e.s.InTurn {
			r.mu.Unlock()
			return nil, conflictf("session %s started another turn before it could be stopped: it goes on as it was", e.s.DisplayName())
		}
		proc, exited := e.proc, e.exited
		r.mu.Unlock()
		var err error
		if proc != nil {
			if stopped, err = stopProcess(proc, exited); err != nil {
				return nil, fmt.Errorf("handing %s over: %w", s.DisplayName(), err)
			}
		} else {
			stopped = "its process had already ended"
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		now := time.Now()
		next := e.s.Clone()
		next.HandoverAt = now
		msg := fmt.Sprintf("stopped to continue in a terminal (%s): %s in %s; the session continues there once the app finds its process",
			stopped, strings.Join(argv, " "), next.Cwd)
		done := r.commitRowsLocked(e, next, []storage.TimelineEvent{newRow(next, now, core.TimelineHandoverStopped,
			sessions.TimelineDetail{Message: msg, By: sessions.ByUser.String(), AgentSession: next.AgentSessionID})}, false, true)
		e.changed = e.s.Clone()
		return done, nil
	})
	if err != nil {
		return localapi.Handover{}, err
	}
	return localapi.Handover{Session: got, Argv: argv, Cwd: got.Cwd, Stopped: stopped}, nil
}

// handoverArgv is the line that continues s in a terminal, or why s
// cannot be handed over.
func (r *Runtime) handoverArgv(s sessions.Session) ([]string, error) {
	if why := sessions.WhyNoHandover(s); why != "" {
		return nil, conflictf("session %s cannot be continued in a terminal: %s", s.DisplayName(), why)
	}
	tr, ok := r.agents[s.Agent].(sessions.TerminalResumer)
	if !ok {
		return nil, conflictf("session %s cannot be continued in a terminal: the %s agent has no terminal resume", s.DisplayName(), s.Agent)
	}
	if !r.observes(s.Agent) {
		return nil, conflictf("session %s cannot be continued in a terminal: %s sessions in a terminal are not observed, so the app would lose it", s.DisplayName(), s.Agent)
	}
	argv, err := tr.TerminalResumeArgs(agentCommand(r.settings(), s.Agent), s.AgentSessionID)
	if err != nil {
		return nil, conflictf("session %s cannot be continued in a terminal: %v", s.DisplayName(), err)
	}
	return argv, nil
}

// observes reports whether a terminal source follows agent's sessions.
func (r *Runtime) observes(agent string) bool {
	for _, src := range r.external {
		if src.Name() == agent {
			return true
		}
	}
	return false
}

// handoverPoll is how often the wait for a turn's end re-reads the
// session: the stream's events change it under the lock.
const handoverPoll = 100 * time.Millisecond

// awaitTurnEnd waits, outside the lock and the session's queue (so the
// stream and the tick go on), until e has no turn in flight; past wait it
// gives up and says so, the session left as it was.
func (r *Runtime) awaitTurnEnd(ctx context.Context, e *entry, wait time.Duration, interrupted bool) error {
	deadline := time.Now().Add(wait)
	for {
		s := r.current(e)
		if !s.InTurn {
			return nil
		}
		if !time.Now().Before(deadline) {
			how := "hand it over with --interrupt (the window's Interrupt and continue) to stop it"
			if interrupted {
				how = "the agent did not stop it when asked; stop it with `stop`, or try again"
			}
			return conflictf("session %s's turn %d did not end within %s: it goes on as it was, not handed over (%s)",
				s.DisplayName(), s.TurnGeneration, core.HumanSpan(wait), how)
		}
		select {
		case <-ctx.Done():
			return unavailablef("waiting for session %s's turn to end: %v; it goes on as it was", s.DisplayName(), ctx.Err())
		case <-time.After(min(handoverPoll, time.Until(deadline))):
		}
	}
}

// stopProcess ends an agent process between turns: its input closed (it
// exits by itself), then SIGTERM, then SIGKILL, each with a grace, and says
// how it ended. exited is closed once its exit was observed.
func stopProcess(proc Process, exited <-chan struct{}) (string, error) {
	_ = proc.CloseInput()
	if waitClosed(exited, handoverCloseGrace) {
		return "it exited when its input closed", nil
	}
	if err := proc.Signal(syscall.SIGTERM); err == nil && waitClosed(exited, handoverTermGrace) {
		return fmt.Sprintf("it did not exit within %s of its input closing and was terminated (SIGTERM)", core.HumanSpan(handoverCloseGrace)), nil
	}
	if err := proc.Signal(syscall.SIGKILL); err == nil && waitClosed(exited, handoverKillGrace) {
		return fmt.Sprintf("it did not exit on its input closing nor on SIGTERM and was killed (SIGKILL) after %s",
			core.HumanSpan(handoverCloseGrace+handoverTermGrace)), nil
	}
	return "", fmt.Errorf("its process %d did not stop, even on SIGKILL: it is left running, not handed over", proc.PID())
}

func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// adoptHandoverLocked finds the managed session waiting to be handed over
// that es (a terminal session just found, not yet known) continues: the
// same agent and agent session id, or, for an agent whose resume makes a
// new id, the same directory within handoverAdoptWindow of the stop. It
// turns that session into a terminal one (same id and timeline), records
// handed_over, and returns it; nil when es continues none.
func (r *Runtime) adoptHandoverLocked(src sessions.ExternalSource, es sessions.ExternalSession, now time.Time) *entry {
	var found *entry
	for _, e := range r.sess {
		s := e.s
		if s.HandoverAt.IsZero() || s.Source != sessions.Managed || e.proc != nil || s.Agent != src.Name() || e.forgotten {
			continue
		}
		if s.AgentSessionID == es.AgentSessionID {
			found = e
			break
		}
		if es.AgentSessionID != "" && s.Cwd == es.Cwd && now.Sub(s.HandoverAt) < handoverAdoptWindow &&
			(es.StartedAt.IsZero() || !es.StartedAt.Before(s.HandoverAt.Add(-time.Second))) {
			found = e
		}
	}
	if found == nil {
		return nil
	}
	next := found.s.Clone()
	was := next.AgentSessionID
	next.Source, next.TerminalKey, next.HandoverAt, next.AgentSessionID = sessions.Observed, es.Key, time.Time{}, es.AgentSessionID
	detail := sessions.TimelineDetail{AgentSession: es.AgentSessionID, PID: es.PID}
	how := fmt.Sprintf("its resume keeps the agent session id %s", es.AgentSessionID)
	if was != es.AgentSessionID {
		detail.AgentSessionWas = was
		how = fmt.Sprintf("its resume made a new agent session id %s (it was %s)", es.AgentSessionID, was)
	}
	detail.Message = fmt.Sprintf("handed over: continues in a terminal as %s process %d in %s (%s); observed as a terminal session from now on",
		src.DisplayName(), es.PID, es.Cwd, how)
	r.commitRowsLocked(found, next, []storage.TimelineEvent{newRow(next, now, core.TimelineHandedOver, detail)}, false, false)
	return found
}
