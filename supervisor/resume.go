package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// "Resume in the background": a session the app did not launch (an agent
// in a terminal) whose process is gone mid-turn cannot be nudged, because
// nothing is left to deliver to. It can be continued as a managed session
// of the same agent: the agent's launcher resumes the agent's own session
// id in the same directory (Claude: `claude --resume ID`; Codex: the thread
// id), and the constant nudge is its first prompt. The supervisor names no
// agent: the session's Agent picks the launcher from the registry.
//
// The observed session records where it went (resumed_as) and settles to
// Idle (it leaves the needs-attention set: the work goes on elsewhere); the
// new managed session records where it came from (resumed_from, and
// Session.ResumedFrom).

// Resume resumes a terminal session in the background at the user's
// request and returns the new managed session.
func (r *Runtime) Resume(ctx context.Context, id string) (sessions.Session, error) {
	e, err := r.find(id)
	if err != nil {
		return sessions.Session{}, err
	}
	var started sessions.Session
	_, err = r.job(ctx, e, func() (<-chan writeResult, error) {
		s, done, err := r.resumeInBackground(e, sessions.ByUser)
		started = s
		return done, err
	})
	if err != nil {
		return sessions.Session{}, err
	}
	return started, nil
}

// resumeInBackground launches e's agent session as a new managed session
// with the nudge. It runs on e's queue; the launch and the nudge run on the
// new session's own queue (so the tick never decides for it mid-launch),
// and this waits for them.
func (r *Runtime) resumeInBackground(e *entry, by sessions.Actor) (sessions.Session, <-chan writeResult, error) {
	r.mu.Lock()
	s, h := e.s.Clone(), e.ext
	// Asked now, not as the last tick saw it: a resume beside a live
	// process on the same conversation would be its second writer.
	s.SharedWith = r.sharedConversationsLocked()[s.ID]
	var release func()
	var claimErr error
	if s.SharedWith == "" && s.AgentSessionID != "" {
		release, claimErr = r.claimConversationLocked(e)
	}
	r.mu.Unlock()
	if claimErr != nil {
		return sessions.Session{}, nil, fmt.Errorf("session %s cannot be resumed in the background: %w", s.DisplayName(), claimErr)
	}
	if release != nil {
		defer release()
	}
	if why := sessions.WhyNotResumable(s); why != "" {
		return sessions.Session{}, nil, conflictf("session %s cannot be resumed in the background: %s", s.DisplayName(), why)
	}
	if _, ok := r.agents[s.Agent]; !ok {
		return sessions.Session{}, nil, conflictf("session %s cannot be resumed in the background: no launcher for agent %q", s.DisplayName(), s.Agent)
	}
	if h != nil {
		// The recorded state may lag the process: ask the source (outside
		// the lock). Two processes writing one agent session would corrupt it.
		if alive, known := h.src.Alive(h.es); alive && known {
			return sessions.Session{}, nil, conflictf("session %s cannot be resumed in the background: its process still runs in its terminal", s.DisplayName())
		}
	}
	now := time.Now()
	ne := r.newEntry(sessions.Session{
		ID: sessions.NewUUID(), Name: s.Name, Agent: s.Agent, AgentSessionID: s.AgentSessionID, Cwd: s.Cwd, Source: sessions.Managed,
		ResumedFrom: s.ID, CreatedAt: now, UpdatedAt: now, StateChangedAt: now, Evidence: "resuming in the background",
	})
	if by == sessions.BySupervisor {
		// The supervisor's resume was a nudge of the incident's budget
		// (the terminal session's, counted when it was decided): the
		// incident goes on in the new session, and so does its budget. A
		// resume the user asked for starts afresh, as a turn they start does.
		ne.s.Nudge = s.Nudge
	}
	started, err := r.job(context.Background(), ne, func() (<-chan writeResult, error) {
		proc, err := r.spawn(ne, s.AgentSessionID)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.sess[ne.s.ID] = ne
		r.commitRowsLocked(ne, ne.s, []storage.TimelineEvent{newRow(ne.s, time.Now(), core.TimelineResumedFrom, sessions.TimelineDetail{
			Message:     fmt.Sprintf("resumed in the background from %s session %s (its process was gone mid-turn)", s.Source, s.DisplayName()),
			ResumedFrom: s.ID, By: by.String(),
		})}, false, false)
		r.attachLocked(ne, proc, s.AgentSessionID)
		r.mu.Unlock()
		done, err := r.deliverPrompt(ne, core.NudgeText, by, core.TimelineNudgeSent)
		if err != nil {
			return done, r.launchError(ne, proc, err)
		}
		return done, nil
	})
	if err != nil {
		return sessions.Session{}, nil, fmt.Errorf("resuming %s in the background: %w", s.DisplayName(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf("resumed in the background as session %s (%s resuming its session %s in %s)",
		sessions.ShortID(started.ID), s.Agent, s.AgentSessionID, s.Cwd)
	done := r.applyLocked(e, sessions.Event{Kind: sessions.EvAcknowledged, Detail: msg},
		newRow(e.s, time.Now(), core.TimelineResumedAs, sessions.TimelineDetail{Message: msg, ResumedAs: started.ID, By: by.String()}))
	e.changed = e.s.Clone()
	return started, done, nil
}
