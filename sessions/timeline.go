package sessions

import (
	"encoding/json"
	"reflect"
	"strings"
)

// TimelineDetail is a timeline row's detail: what the supervisor records
// about a row beyond its kind, and what the views read back. It is stored as
// JSON in SQLite and served as it is over the local API, so its keys are a
// contract: the fields are declared in the order of their JSON keys, which
// makes the encoding byte for byte the one the untyped maps it replaced had
// (encoding/json writes a map's keys sorted).
type TimelineDetail struct {
	// Action is an action's kind (an intent row, a failed nudge).
	Action string `json:"action,omitempty"`
	// AgentSession is the agent's own session id a hand-over continues in
	// a terminal; AgentSessionWas the one the managed session ran, when
	// the agent's resume made a new one.
	AgentSession    string `json:"agent_session,omitempty"`
	AgentSessionWas string `json:"agent_session_was,omitempty"`
	// Allow is a permission answer; a pointer, as a denial is written.
	Allow *bool `json:"allow,omitempty"`
	// By is who caused the row ("user", "supervisor").
	By string `json:"by,omitempty"`
	// Bytes is the size of a write the agent did not read.
	Bytes int `json:"bytes,omitempty"`
	// Cause is why a session became Interrupted (marked_interrupted):
	// "exit_event", "abort", "observed_death", "probe", "boot".
	Cause string `json:"cause,omitempty"`
	// Channel is where a notification went ("ntfy", "webhook").
	Channel string `json:"channel,omitempty"`
	// Failure is the failure kind a state change came with.
	Failure string `json:"failure,omitempty"`
	// From and To are a state change's states.
	From string `json:"from,omitempty"`
	// IntentID is the intent row an uncertain outcome is about.
	IntentID int64 `json:"intent_id,omitempty"`
	// Message is the row's sentence; every row the supervisor writes has one.
	Message string `json:"message"`
	// Orphan is what the boot found of a process an earlier run lost.
	Orphan string `json:"orphan,omitempty"`
	// Outcome is an action's outcome: "pending", "ok", "failed: …", "uncertain".
	Outcome string `json:"outcome,omitempty"`
	// PID is a started or discovered process.
	PID int `json:"pid,omitempty"`
	// Reason is what a session waiting on the user waits for.
	Reason string `json:"reason,omitempty"`
	// ResumedAs and ResumedFrom link a terminal session and its managed
	// resume.
	ResumedAs   string `json:"resumed_as,omitempty"`
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Status is the HTTP status a channel answered a notification with.
	Status int    `json:"status,omitempty"`
	To     string `json:"to,omitempty"`
	// Tool is the tool a permission answer was for.
	Tool string `json:"tool,omitempty"`
	// Urgent: the nudge went with the interrupt (priority now).
	Urgent *bool `json:"urgent,omitempty"`

	// Other holds the keys this build does not know (a row an older or a
	// newer build wrote), so reading a row and writing it back loses none.
	Other map[string]json.RawMessage `json:"-"`
}

// timelineDetailFields is TimelineDetail without its methods, for encoding
// its known fields.
type timelineDetailFields TimelineDetail

// timelineDetailKeys are the JSON keys of TimelineDetail's fields, taken
// from their tags so a field added is a key known.
var timelineDetailKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[timelineDetailFields]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// MarshalJSON writes the known fields, and the unknown ones kept from a
// decoded row, in key order.
func (d TimelineDetail) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(timelineDetailFields(d))
	if err != nil || len(d.Other) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range d.Other {
		if !timelineDetailKeys[k] {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// UnmarshalJSON reads a row's detail, keeping the keys it does not know in
// Other.
func (d *TimelineDetail) UnmarshalJSON(b []byte) error {
	var f timelineDetailFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	f.Other = nil
	for k, v := range all {
		if !timelineDetailKeys[k] {
			if f.Other == nil {
				f.Other = map[string]json.RawMessage{}
			}
			f.Other[k] = v
		}
	}
	*d = TimelineDetail(f)
	return nil
}

// JSON is the detail as stored; a detail that cannot be encoded (it always
// can: strings, numbers and booleans) is stored as an empty object.
func (d TimelineDetail) JSON() json.RawMessage {
	b, err := d.MarshalJSON()
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// Flag returns a pointer to b, for TimelineDetail's booleans.
func Flag(b bool) *bool { return &b }
