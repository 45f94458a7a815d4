package geminiterm

import (
	"encoding/json"
	"strings"
	"time"
)

// This file reads the Gemini CLI's chat files
// (<home>/tmp/<project slug>/chats/session-<YYYY-MM-DDThh-mm>-<id8>.jsonl),
// measured against the real 0.61.0 TUI (testdata/). The file is JSON Lines,
// appended to with one write per record (appendFileSync), never rewritten
// in place except when a resumed legacy .json session is converted (a new
// file under a new name) or an unreadable one is replaced (temp file and
// rename: a new inode, which the tailer reads from its start). Records:
//
//   - the metadata, first: {"sessionId","projectHash","startTime",
//     "lastUpdated","kind"};
//   - a message {"id","timestamp","type","content",…}, type user, gemini,
//     error, info or warning; a message is re-appended whole under the same
//     id when it changes (its tokens, then its toolCalls once they
//     completed): the last write of an id wins;
//   - {"$set":{…}}: metadata updates (lastUpdated after every message), and
//     {"$set":{"messages":[…]}} replacing the history with the model's
//     (the seed <session_context> at start, and again after a cancelled
//     turn);
//   - {"$rewindTo":"<id>"}: /rewind dropped that message and the later ones.
//
// What a turn leaves, in order (measured): the user's prompt; a gemini
// message with the reply's text, or with empty text when the model called a
// tool; that same message re-appended with its toolCalls (status success,
// error or cancelled) only once the tools completed, then a user message
// carrying the functionResponse, and the next gemini message. A tool
// awaiting the user's approval in the terminal is not written (the file
// shows the empty gemini message until the call completes). A failed
// request is an error message ("[API Error: <the API's JSON body>]")
// followed by an info; Esc is an info "Request cancelled." (after the
// cancelled toolCalls when a tool was asked for). A quota dialog
// ("Usage limit reached … Keep trying / Stop") writes nothing.

// Phase is where the last turn stands, as the chat file shows it.
type Phase int

// The phases, in no particular order.
const (
	// NoPrompt: nothing asked yet (the file holds only the seed context).
	NoPrompt Phase = iota
	// Prompted: the user's prompt is written, no answer yet.
	Prompted
	// CallPending: the model answered with a tool call (empty text) that
	// has not completed: it runs, or waits for the user's approval.
	CallPending
	// ToolOpen: a written tool call is still in a non-final status.
	ToolOpen
	// Approval: a written tool call awaits the user's approval.
	Approval
	// ToolDone: the calls completed; their results go back to the model.
	ToolDone
	// Replied: the model's text reply ended the turn.
	Replied
	// Failed: the turn ended on an error message.
	Failed
	// Cancelled: the user stopped the turn (Esc).
	Cancelled
	// Rewound: /rewind dropped the end of the conversation.
	Rewound
)

var phaseNames = []string{"no_prompt", "prompted", "call_pending", "tool_open", "approval", "tool_done",
	"replied", "failed", "cancelled", "rewound"}

func (p Phase) String() string {
	if int(p) < 0 || int(p) >= len(phaseNames) {
		return "phase(?)"
	}
	return phaseNames[p]
}

// InTurn reports a phase inside a turn.
func (p Phase) InTurn() bool {
	switch p {
	case Prompted, CallPending, ToolOpen, Approval, ToolDone:
		return true
	}
	return false
}

// record is the union of the fields read from any line: one struct and one
// json.Unmarshal per line; contents are kept raw and only a user message's
// parts or an error's text are decoded.
type record struct {
	ID          string          `json:"id"`
	Timestamp   time.Time       `json:"timestamp"`
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"`
	ToolCalls   []toolCall      `json:"toolCalls"`
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	RewindTo    *string         `json:"$rewindTo"`
}

type toolCall struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type part struct {
	Text             *string         `json:"text"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

// Failure is the error message a turn ended on.
type Failure struct {
	// Message is the error's text as written (the API's body inside
	// "[API Error: …]"), clipped.
	Message string
	At      time.Time
}

// maxFailureText bounds what is kept of an error message.
const maxFailureText = 4 << 10

// Summary is what the chat file read so far says. Feed it every line in
// order; Reset it when the file is truncated or replaced.
type Summary struct {
	// SessionID is the metadata's (empty until it is read).
	SessionID string
	Phase     Phase
	// Tool is the open (or approval-waiting) call's name.
	Tool string
	// Turns counts the user's prompts read.
	Turns int
	// FirstPrompt is the session's first prompt, for its name.
	FirstPrompt string
	Failure     Failure
	// PendingSince is when the model's tool call was written (CallPending):
	// an approval prompt is told from a running tool by how long nothing
	// runs under the CLI since.
	PendingSince time.Time
	// seen are the message ids read, and turn the ones since the last
	// prompt: a re-append of an older message (its tokens, a history
	// sync) is not news about the turn.
	seen map[string]bool
	turn map[string]bool
	// prompt is the id of the last prompt (written again, it is the same
	// turn).
	prompt string
}

// Reset forgets everything read.
func (s *Summary) Reset() { *s = Summary{} }

// TurnCount is how many turns the chat read so far started
// (observe.Summary).
func (s *Summary) TurnCount() int { return s.Turns }

// sessionContext opens the seed message the CLI writes (alone at start,
// merged with the prompt after a cancel): never a prompt of the user's.
const sessionContext = "<session_context>"

// Feed reads one line; a line that is not JSON (a torn write cannot
// happen with appendFileSync, but a foreign or damaged file can hold one)
// is skipped.
func (s *Summary) Feed(line []byte) {
	var r record
	if json.Unmarshal(line, &r) != nil {
		return
	}
	switch {
	case r.RewindTo != nil:
		s.Phase, s.Tool = Rewound, ""
		return
	case r.ID == "":
		if r.SessionID != "" && r.ProjectHash != "" {
			s.SessionID = r.SessionID
		}
		return // $set: metadata, or a history snapshot (no news about the turn)
	}
	if s.seen == nil {
		s.seen, s.turn = map[string]bool{}, map[string]bool{}
	}
	if s.seen[r.ID] && !s.turn[r.ID] {
		return
	}
	s.seen[r.ID] = true
	switch r.Type {
	case "user":
		s.user(r)
	case "gemini":
		s.turn[r.ID] = true
		s.gemini(r)
	case "error":
		s.turn[r.ID] = true
		var text string
		_ = json.Unmarshal(r.Content, &text)
		s.Phase, s.Tool = Failed, ""
		s.Failure = Failure{Message: clip(text, maxFailureText), At: r.Timestamp}
	case "info":
		s.turn[r.ID] = true
		var text string
		_ = json.Unmarshal(r.Content, &text)
		if strings.HasPrefix(strings.TrimSpace(text), "Request cancelled") && s.Phase != Failed {
			s.Phase, s.Tool = Cancelled, ""
		}
	}
}

func (s *Summary) user(r record) {
	var parts []part
	if json.Unmarshal(r.Content, &parts) != nil || len(parts) == 0 {
		return
	}
	if parts[0].FunctionResponse != nil {
		s.turn[r.ID] = true
		s.Phase, s.Tool = Prompted, ""
		return
	}
	var text strings.Builder
	for _, p := range parts {
		if p.Text != nil {
			text.WriteString(*p.Text)
		}
	}
	t := strings.TrimSpace(text.String())
	if t == "" || strings.HasPrefix(t, sessionContext) || r.ID == s.prompt {
		return
	}
	// A new prompt: a new turn.
	s.prompt = r.ID
	s.Turns++
	clear(s.turn)
	s.turn[r.ID] = true
	s.Phase, s.Tool, s.Failure = Prompted, "", Failure{}
	if s.FirstPrompt == "" {
		s.FirstPrompt = clip(t, 500)
	}
}

func (s *Summary) gemini(r record) {
	if len(r.ToolCalls) == 0 {
		var text string
		_ = json.Unmarshal(r.Content, &text)
		if strings.TrimSpace(text) == "" {
			if s.Phase != CallPending {
				s.PendingSince = r.Timestamp
			}
			s.Phase, s.Tool = CallPending, ""
		} else {
			s.Phase, s.Tool = Replied, ""
		}
		return
	}
	s.Phase, s.Tool = ToolDone, ""
	cancelled := 0
	for _, c := range r.ToolCalls {
		switch c.Status {
		case "awaiting_approval":
			s.Phase, s.Tool = Approval, c.Name
			return
		case "validating", "scheduled", "executing":
			s.Phase, s.Tool = ToolOpen, c.Name
		case "cancelled":
			cancelled++
		}
	}
	if s.Phase == ToolDone && cancelled == len(r.ToolCalls) {
		// Denied or stopped: the info "Request cancelled." follows.
		s.Phase = Cancelled
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
