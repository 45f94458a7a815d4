package copilotterm

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/copilot"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// This file reads the events file of a TUI session
// ($COPILOT_HOME/session-state/<id>/events.jsonl): the same
// {type,data,id,timestamp,parentId} events `copilot -p --output-format
// json` prints, less the ephemeral ones (deltas, session.idle) and the
// final `result`, which a TUI never writes. Measured on 1.0.102
// (testdata/): the file appears at the first prompt, with the session's
// start buffered until then; a prompt is user.message, each model round
// assistant.turn_start … assistant.turn_end, a round whose
// assistant.message asks for tools is followed by the next round, a tool
// waiting for approval is permission.requested until permission.completed,
// a failed turn ends on session.error after its turn_end, and a clean exit
// writes session.shutdown. What the managed decoder
// (sessions/copilot) already knows — tools, failures and their class,
// compaction, retries, aborts — is taken from it; the rest (the prompt,
// the rounds, the approvals, the exit) is read here.

// line is the part of an event read here: one json.Unmarshal, the rest
// (system prompt, tool results) skipped unallocated.
type line struct {
	Type string `json:"type"`
	Data struct {
		SessionID string `json:"sessionId"`
		// user.message
		Content string `json:"content"`
		// assistant.message
		ToolRequests []struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolRequests"`
		// permission.*, user_input.*, elicitation.*
		RequestID         string `json:"requestId"`
		PermissionRequest *struct {
			Kind            string `json:"kind"`
			FullCommandText string `json:"fullCommandText"`
		} `json:"permissionRequest"`
	} `json:"data"`
}

// decoded are the event types whose meaning is the managed decoder's.
var decoded = map[string]bool{
	"tool.execution_start": true, "tool.execution_complete": true, "session.error": true, "abort": true,
	"session.compaction_start": true, "session.compaction_complete": true, "assistant.turn_retry": true,
	"model.call_failure": true, "subagent.started": true, "subagent.completed": true, "subagent.failed": true,
	"session.usage_record": true,
}

// Call is a tool call in flight.
type Call struct {
	ID   string
	Name string
}

// Ask is a question the TUI puts to the user and waits on.
type Ask struct {
	ID string
	// Wait is what kind: a tool's approval or a question.
	Wait sessions.WaitReason
	// What is the command or tool asked about, for the evidence.
	What string
}

// Summary is what the events read so far say. Feed it every line in
// order; Reset it when the file is truncated or replaced.
type Summary struct {
	SessionID string
	// Records counts decoded lines; Skipped counts lines that were not
	// JSON events.
	Records, Skipped int
	// Turns counts the prompts that started a turn.
	Turns  int
	InTurn bool
	// Open are the tool calls in flight; Asks the questions waiting on
	// the user.
	Open []Call
	Asks []Ask
	// moreRounds: the round's message asked for tools, so its turn_end
	// is not the turn's end.
	moreRounds bool
	// Ended: the last turn ended; Aborted is the abort's reason; Failure
	// the error it failed on.
	Ended   bool
	Aborted string
	Failure *sessions.Failure
	// Compacting: a compaction started and has not finished.
	Compacting bool
	// Retries counts the provider failures Copilot is retrying in the
	// turn in flight.
	Retries int
	// Shutdown: the TUI wrote its clean exit.
	Shutdown    bool
	FirstPrompt string
	// Usage is every model call's tokens the file records (one
	// session.usage_record each), summed by model.
	Usage sessions.Usage
	// Windows are the plan windows the file's failures reported spent
	// (the weekly rate limit), the latest of each kind.
	Windows []sessions.RateWindow
}

// maxOpen bounds the lists a broken file could grow.
const maxOpen = 64

// Reset forgets everything: the file was truncated or replaced.
func (s *Summary) Reset() { *s = Summary{} }

// TurnCount is how many turns the events read so far started
// (observe.Summary).
func (s *Summary) TurnCount() int { return s.Turns }

// Feed reads one line. A line that is not an event is counted and skipped.
func (s *Summary) Feed(raw []byte) {
	if typ := leadingType(raw); decoded[typ] {
		// The managed decoder's alone: one pass over what can be a tool's
		// whole result.
		evs, info, _ := copilot.DecodeLine(raw)
		if info.Skip == agentkit.SkipMalformed {
			s.Skipped++
			return
		}
		s.Records++
		for _, ev := range evs {
			s.apply(ev)
		}
		return
	}
	var l line
	if err := json.Unmarshal(raw, &l); err != nil || l.Type == "" {
		s.Skipped++
		return
	}
	s.Records++
	d := &l.Data
	switch l.Type {
	case "session.start", "session.resume":
		if d.SessionID != "" {
			s.SessionID = d.SessionID
		}
		s.Shutdown = false
	case "user.message":
		if s.FirstPrompt == "" {
			s.FirstPrompt = strings.TrimSpace(d.Content)
		}
		s.startTurn()
	case "assistant.turn_start":
		// A round; a turn when none is in flight (the tail began inside
		// one, or a queued prompt went straight to the model).
		s.startTurn()
		s.moreRounds = false
	case "assistant.message":
		s.moreRounds = len(d.ToolRequests) > 0
	case "assistant.turn_end":
		if s.InTurn && !s.moreRounds && len(s.Open) == 0 {
			s.endTurn()
		}
	case "permission.requested":
		what := ""
		if p := d.PermissionRequest; p != nil {
			what = observe.OrDefault(p.FullCommandText, p.Kind)
		}
		s.ask(Ask{ID: d.RequestID, Wait: sessions.WaitPermission, What: what})
	case "user_input.requested", "elicitation.requested":
		s.ask(Ask{ID: d.RequestID, Wait: sessions.WaitQuestion})
	case "permission.completed", "user_input.completed", "elicitation.completed":
		s.Asks = observe.Closed(s.Asks, func(a Ask) bool { return a.ID == d.RequestID })
	case "session.shutdown":
		s.Shutdown = true
		if s.InTurn {
			s.endTurn()
		}
	}
	if decoded[l.Type] {
		evs, _, _ := copilot.DecodeLine(raw)
		for _, ev := range evs {
			s.apply(ev)
		}
	}
}

// leadingType is the event's type when the line starts with it, as
// Copilot writes every event ({"type":"…","data":…}); "" otherwise (the
// line is then parsed whole).
func leadingType(raw []byte) string {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		return ""
	}
	head := raw[len(prefix):min(len(raw), len(prefix)+64)]
	if i := bytes.IndexByte(head, '"'); i > 0 {
		return string(head[:i])
	}
	return ""
}

func (s *Summary) startTurn() {
	if s.InTurn {
		return
	}
	s.Turns++
	s.InTurn, s.Ended, s.Aborted, s.Failure, s.Compacting, s.Retries = true, false, "", nil, false, 0
	s.Open, s.Asks, s.moreRounds = nil, nil, false
}

func (s *Summary) endTurn() {
	s.InTurn, s.Ended, s.Open, s.Asks, s.moreRounds, s.Compacting = false, true, nil, nil, false, false
}

func (s *Summary) ask(a Ask) {
	s.Asks = observe.Opened(s.Asks, maxOpen, a)
}

// apply reads one event of the managed decoder.
func (s *Summary) apply(ev sessions.Event) {
	switch ev.Kind {
	case sessions.EvToolStarted, sessions.EvTaskStarted:
		s.Open = observe.Opened(s.Open, maxOpen, Call{ID: ev.CallID, Name: ev.Name})
	case sessions.EvToolFinished, sessions.EvTaskFinished:
		s.Open = observe.Closed(s.Open, func(c Call) bool { return c.ID == ev.CallID })
	case sessions.EvCompactionStarted:
		s.Compacting = true
	case sessions.EvCompactionFinished:
		s.Compacting = false
	case sessions.EvRetryScheduled:
		s.Retries++
	case sessions.EvTurnFailed:
		f := ev.Failure
		s.endTurn()
		s.Failure = &f
		if w := ev.RateWindow; w != nil {
			s.Windows = append(slices.DeleteFunc(s.Windows, func(o sessions.RateWindow) bool { return o.Kind == w.Kind }), *w)
		}
	case sessions.EvTurnAborted:
		s.endTurn()
		s.Aborted = observe.OrDefault(ev.Detail, "aborted")
	case sessions.EvMetrics:
		if u := ev.Usage; u != nil {
			s.Usage = s.Usage.Add(u.Model, u.Tokens)
		}
	}
}

// usageReports is the file's usage as running totals, one counter per
// session and model: read again (the app restarted) it adds nothing.
func usageReports(w Workspace, sum *Summary) []sessions.UsageReport {
	id := observe.OrDefault(w.ID, sum.SessionID)
	var out []sessions.UsageReport
	for _, m := range sum.Usage.Models() {
		out = append(out, sessions.UsageReport{Model: m, Tokens: sum.Usage[m], Mode: sessions.UsageCumulative, Counter: copilot.UsageCounter(id, m)})
	}
	return out
}
