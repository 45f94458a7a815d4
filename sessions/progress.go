package sessions

import (
	"slices"
	"time"
)

// TodoProgress is the agent's own task list as it stands: Claude's todo
// list (TodoWrite, or the TaskCreate/TaskUpdate tools that replace it) and
// Codex's plan. Only the counts are kept: the items' text is the model's
// and never needed to tell how far the work is.
type TodoProgress struct {
	Total      int `json:"total"`
	Completed  int `json:"completed"`
	InProgress int `json:"in_progress"`
}

// TodoItem is one item of an agent's task list as its wire says it; only
// the status is read (Claude's todos, Codex's plan steps, OpenCode's
// todos all carry one).
type TodoItem struct {
	Status string `json:"status"`
}

// TodosOf counts a task list by each item's status, in the words the
// agents use: "completed"; "in_progress" (Claude, OpenCode) or
// "inProgress" (Codex); anything else pending. A "cancelled" item
// (OpenCode) will not be worked on, so it leaves the list.
func TodosOf(items []TodoItem) TodoProgress {
	var t TodoProgress
	for _, it := range items {
		switch it.Status {
		case "cancelled":
			continue
		case "completed":
			t.Completed++
		case "in_progress", "inProgress":
			t.InProgress++
		}
		t.Total++
	}
	return t
}

// IsZero reports whether the agent keeps no list (or an empty one).
func (t TodoProgress) IsZero() bool { return t.Total == 0 }

// Done reports whether every item of a non-empty list is completed.
func (t TodoProgress) Done() bool { return t.Total > 0 && t.Completed >= t.Total }

// Clamped is t made consistent: no negative count, and completed plus in
// progress never more than the total (a decoder that joined a list midway
// may have seen updates of items it never saw created).
func (t TodoProgress) Clamped() TodoProgress {
	t.Completed = max(t.Completed, 0)
	t.InProgress = max(t.InProgress, 0)
	t.Total = max(t.Total, t.Completed+t.InProgress)
	return t
}

// TurnRecord is one finished turn as the time-remaining estimate reads it:
// how long it took and how many tool calls it made.
type TurnRecord struct {
	Duration time.Duration `json:"duration_ns"`
	Tools    int           `json:"tools"`
}

// MaxPastTurns is how many finished turns a session keeps: enough for a
// spread, few enough that the session's recent habits dominate.
const MaxPastTurns = 8

// RateWindow is one of the plan's usage windows as the agent last reported
// it (Claude's rate_limit_event, Codex's account rate limits): how much of
// it is used and when it resets. A window belongs to the account the agent
// runs as, so every session of that agent sees the same one.
type RateWindow struct {
	// Kind names the window as the agent does ("five_hour", "seven_day",
	// Codex's "primary" and "secondary").
	Kind string `json:"kind"`
	// Used is the share of the window used, 0–100; negative when the agent
	// gave no figure (Claude's event carries one only in some versions).
	Used float64 `json:"used_percent"`
	// Status is the agent's own verdict where it gives one ("allowed",
	// "allowed_warning", "rejected").
	Status   string        `json:"status,omitempty"`
	ResetsAt time.Time     `json:"resets_at,omitzero"`
	Length   time.Duration `json:"window_ns,omitempty"`
	// At is when the report was seen; FirstUsed and FirstAt are the first
	// report of the same window (the same reset time), so the rate at which
	// it fills can be told.
	At        time.Time `json:"at"`
	FirstUsed float64   `json:"first_used_percent"`
	FirstAt   time.Time `json:"first_at"`
}

// Rejected reports whether the window is spent: the agent said so, or it
// is used to the full.
func (w RateWindow) Rejected() bool { return w.Status == "rejected" || w.Used >= 100 }

// HitAt is when the window will be used up at the pace it filled since its
// first report, if that is before it resets; ok is false when it will not
// be (or the pace cannot be told: one report, no figure). A spent window
// is hit now.
func (w RateWindow) HitAt(now time.Time) (time.Time, bool) {
	if w.Rejected() {
		return now, true
	}
	if w.Used < 0 || w.FirstUsed < 0 || w.Used <= w.FirstUsed || !w.At.After(w.FirstAt) {
		return time.Time{}, false
	}
	perSecond := (w.Used - w.FirstUsed) / w.At.Sub(w.FirstAt).Seconds()
	at := w.At.Add(time.Duration((100 - w.Used) / perSecond * float64(time.Second)))
	if !w.ResetsAt.IsZero() && !at.Before(w.ResetsAt) {
		return time.Time{}, false
	}
	return at, true
}

// ResetAfter is the latest reset time of the spent windows in ws that is
// after now: when the agent may run again. Zero when none is spent or none
// says when it resets.
func ResetAfter(ws []RateWindow, now time.Time) time.Time {
	var at time.Time
	for _, w := range ws {
		if w.Rejected() && w.ResetsAt.After(now) && w.ResetsAt.After(at) {
			at = w.ResetsAt
		}
	}
	return at
}

// applyTodos keeps the list's counts, and when the current list began: a
// list seen for the first time, or one that replaces a finished list, starts
// the clock the estimate measures its pace on.
func applyTodos(n *Session, t TodoProgress, now time.Time) {
	t = t.Clamped()
	if n.Todos.IsZero() || n.Todos.Done() && !t.Done() || t.Completed < n.Todos.Completed {
		n.TodosSince = now
	}
	n.Todos = t
}

// recordTurn keeps a finished turn's duration and tool calls, the last
// MaxPastTurns of them.
func recordTurn(n *Session, now time.Time) {
	if !n.InTurn || n.TurnStarted.IsZero() || !now.After(n.TurnStarted) {
		return
	}
	past := append(slices.Clone(n.PastTurns), TurnRecord{Duration: now.Sub(n.TurnStarted), Tools: n.TurnTools})
	if len(past) > MaxPastTurns {
		past = past[len(past)-MaxPastTurns:]
	}
	n.PastTurns = past
}

// applyRateWindow merges a reported window into the session's, by kind. A
// window reported again with the same reset time keeps its first report
// (the pace it fills at); a new reset time is a new window.
func applyRateWindow(n *Session, w RateWindow, now time.Time) {
	out := slices.Clone(n.RateWindows)
	w.At = now
	w.FirstUsed, w.FirstAt = w.Used, now
	i := slices.IndexFunc(out, func(o RateWindow) bool { return o.Kind == w.Kind })
	if i < 0 {
		out = append(out, w)
	} else {
		if old := out[i]; old.ResetsAt.Equal(w.ResetsAt) && old.Used <= w.Used {
			w.FirstUsed, w.FirstAt = old.FirstUsed, old.FirstAt
		}
		out[i] = w
	}
	n.RateWindows = out
}
