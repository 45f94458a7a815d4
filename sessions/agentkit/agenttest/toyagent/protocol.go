package toyagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// Message is one line of the protocol, either way (see the package doc).
type Message struct {
	Type      MessageType `json:"type"`
	Text      string      `json:"text,omitempty"`
	SessionID string      `json:"session_id,omitempty"`
	// ID and Name identify a tool call.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Status is the model API's HTTP status of an error (0: no answer).
	Status    int  `json:"status,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
}

// MessageType says what a line is.
type MessageType string

// The message types: TypePrompt and TypeInterrupt go to the CLI, the
// others come from it.
const (
	TypePrompt    MessageType = "prompt"
	TypeInterrupt MessageType = "interrupt"
	TypeSession   MessageType = "session"
	TypeTurnStart MessageType = "turn_start"
	TypeText      MessageType = "text"
	TypeToolStart MessageType = "tool_start"
	TypeToolEnd   MessageType = "tool_end"
	TypeTurnEnd   MessageType = "turn_end"
	TypeError     MessageType = "error"
)

// FlagStream selects the protocol on the CLI's command line; FlagResume
// names the session to continue.
const (
	FlagStream = "--stream"
	FlagResume = "--resume"
)

// resumeRE is a session id the CLI made (toy_ and hex); the check keeps a
// stored id from being read as another flag.
var resumeRE = regexp.MustCompile(`^toy_[0-9a-f]{1,64}$`)

// Args is the command line (after the program name) of a session,
// resuming resumeID when set.
func Args(resumeID string) ([]string, error) {
	if resumeID == "" {
		return []string{FlagStream}, nil
	}
	if !resumeRE.MatchString(resumeID) {
		return nil, fmt.Errorf("toy launch options: invalid session id %q", agentkit.Clip(resumeID))
	}
	return []string{FlagStream, FlagResume, resumeID}, nil
}

// Line is m as one protocol line, with its newline.
func Line(m Message) []byte {
	b, _ := json.Marshal(m) // a struct of strings, ints and bools always marshals
	return append(b, '\n')
}

// Why a stdout line produced no events.
var (
	ErrMalformed = errors.New("toy stream: malformed line")
	ErrUnknown   = errors.New("toy stream: unknown line")
)

// DecodeLine is what one stdout line means: its events, or why it has
// none (agentkit.SkipEmpty without an error; malformed or unknown with an
// error wrapping ErrMalformed or ErrUnknown).
func DecodeLine(line []byte) ([]sessions.Event, agentkit.SkipReason, error) {
	var m Message
	if _, skip, _, err := agentkit.UnmarshalLine(line, &m, ErrMalformed); skip != agentkit.SkipNone {
		return nil, skip, err
	}
	ev := sessions.Event{AgentSessionID: m.SessionID, CallID: m.ID, Name: m.Name}
	switch m.Type {
	case TypeSession:
		ev.Kind, ev.Detail = sessions.EvSessionInit, "session open"
	case TypeTurnStart:
		// Like Claude's init at every turn: a turn_start after the last
		// turn ended is the turn of a prompt sent as it ended (Apply).
		ev.Kind, ev.Detail = sessions.EvSessionInit, "turn started"
	case TypeText:
		ev.Kind, ev.Detail = sessions.EvActivity, "replying"
	case TypeToolStart:
		ev.Kind = sessions.EvToolStarted
	case TypeToolEnd:
		ev.Kind = sessions.EvToolFinished
	case TypeTurnEnd:
		ev.Kind = sessions.EvTurnCompleted
		if m.Cancelled {
			ev.Kind, ev.Detail = sessions.EvTurnAborted, "cancelled"
		}
	case TypeError:
		kind := sessions.KindFromStatus(m.Status)
		if m.Status == 0 {
			kind = sessions.Network // no answer at all: the connection failed
		}
		ev.Kind, ev.Status = sessions.EvTurnFailed, m.Status
		ev.Failure = sessions.Failure{Kind: kind, Message: sessions.SanitizeMessage(agentkit.OrDefault(m.Text, "the model API failed"))}
	default:
		return nil, agentkit.SkipUnknown, fmt.Errorf("%w: type %q", ErrUnknown, agentkit.Clip(string(m.Type)))
	}
	return []sessions.Event{ev}, agentkit.SkipNone, nil
}
