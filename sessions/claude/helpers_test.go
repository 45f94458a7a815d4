package claude

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// t0 is the fixed clock the Apply replays start from.
var t0 = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

// decodeAll drains a Decoder over r and returns every event in order, plus
// one summary entry per line (its events' summaries, or "skip:<reason>").
func decodeAll(t testing.TB, r io.Reader, maxLine int) ([]sessions.Event, []string, Counters) {
	t.Helper()
	d := NewDecoder(r, maxLine)
	var events []sessions.Event
	var lines []string
	for _, l := range agenttest.Drain(t, d) {
		events = append(events, l.Events...)
		lines = append(lines, lineSummary(l))
	}
	return events, lines, d.Stats()
}

func decodeFile(t testing.TB, name string) ([]sessions.Event, Counters) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, _, stats := decodeAll(t, f, 0)
	return events, stats
}

func decodeLines(t testing.TB, lines ...string) []string {
	t.Helper()
	_, out, _ := decodeAll(t, strings.NewReader(strings.Join(lines, "\n")+"\n"), 0)
	return out
}

func lineSummary(l Line) string {
	if l.Info.Skip != agentkit.SkipNone {
		return "skip:" + string(l.Info.Skip)
	}
	if len(l.Events) == 0 {
		return "none"
	}
	parts := make([]string, len(l.Events))
	for i, e := range l.Events {
		parts[i] = summary(e)
	}
	return strings.Join(parts, " + ")
}

// summary renders the fields of an event that matter for its kind.
func summary(e sessions.Event) string {
	s := e.Kind.String()
	switch e.Kind {
	case sessions.EvSessionInit:
		s += " " + e.AgentSessionID
	case sessions.EvToolStarted, sessions.EvToolFinished, sessions.EvTaskStarted, sessions.EvTaskFinished:
		s += fmt.Sprintf(" %s %s", e.CallID, e.Name)
	case sessions.EvCompactionFinished:
		if e.OK {
			s += " ok"
		} else {
			s += " failed: " + e.Detail
		}
	case sessions.EvWaitingOnUser:
		s += " " + e.Reason.String()
		if e.Permission != nil {
			s += fmt.Sprintf(" req=%s tool=%s", e.Permission.RequestID, e.Permission.Tool)
			if e.Permission.Input != "" {
				s += " input=" + e.Permission.Input
			}
		}
	case sessions.EvRetryScheduled:
		s += fmt.Sprintf(" %d/%d %s status=%d %s", e.Attempt, e.MaxAttempts, e.Delay, e.Status, e.Failure.Kind)
	case sessions.EvTurnFailed:
		s += " " + e.Failure.Kind.String()
		if !e.Failure.RetryAt.IsZero() {
			s += " until " + e.Failure.RetryAt.Format(time.RFC3339)
		}
	case sessions.EvActivity, sessions.EvMetrics, sessions.EvTurnAborted, sessions.EvIdle, sessions.EvUserAnswered:
		s += ": " + e.Detail
	}
	return s
}

func kinds(events []sessions.Event) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = e.Kind.String()
	}
	return strings.Join(parts, " ")
}

// replay drives sessions.Apply with a decoded stream the way the supervisor
// would: the prompt that precedes each system/init line starts a turn. It
// returns the final session and the state after every event.
func replay(events []sessions.Event, by sessions.Actor) (sessions.Session, []sessions.State) {
	now := t0
	s := sessions.Session{ID: "s1", Agent: "claude", Source: sessions.Managed, ProcessAlive: true, CreatedAt: now}
	var states []sessions.State
	step := func(e sessions.Event) {
		now = now.Add(time.Second)
		s = sessions.Apply(s, e, now)
		states = append(states, s.State)
	}
	for _, e := range events {
		if e.Kind == sessions.EvSessionInit {
			step(sessions.Event{Kind: sessions.EvTurnStarted, By: by})
		}
		step(e)
	}
	return s, states
}
