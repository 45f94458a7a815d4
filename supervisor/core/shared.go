package core

import (
	"cmp"
	"slices"
	"time"
)

// Two processes on one conversation: an agent session the app manages can
// be resumed by the user in a terminal (`claude --resume ID`, `codex
// resume ID`), and a terminal session by the app in the background. Each
// process then writes its own turns into the same agent session, and
// anything the supervisor typed into either would interleave with the
// other's. The tick names, for every session, another session whose live
// process runs its conversation; Reconcile then holds its recovery and
// escalates once (sharedConversation).

// ConversationProcess is what SharedConversations reads of one session.
type ConversationProcess struct {
	ID, Agent, AgentSessionID string
	// Live: the session's agent process runs (a managed session's process
	// of ours, a terminal session's process as its source last saw it).
	Live bool
	// ResumedFrom links a background resume to the terminal session it
	// continues: the app's own resume shares nothing with its source.
	ResumedFrom string
	CreatedAt   time.Time
	// Archived sessions are history: never a subject, never a runner.
	Archived bool
}

// SharedConversations maps the id of each session whose agent conversation
// another session's live process also runs to that other session (the
// oldest of them, for a stable answer). A session that is not live itself
// is named too: resuming it would start the second process.
func SharedConversations(list []ConversationProcess) map[string]string {
	type conv struct{ agent, id string }
	groups := map[conv][]ConversationProcess{}
	for _, p := range list {
		if p.AgentSessionID == "" || p.Archived {
			continue
		}
		k := conv{p.Agent, p.AgentSessionID}
		groups[k] = append(groups[k], p)
	}
	var out map[string]string
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b ConversationProcess) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		for _, p := range g {
			for _, q := range g {
				if q.ID == p.ID || !q.Live || q.ResumedFrom == p.ID || p.ResumedFrom == q.ID {
					continue
				}
				if out == nil {
					out = map[string]string{}
				}
				out[p.ID] = q.ID
				break
			}
		}
	}
	return out
}
