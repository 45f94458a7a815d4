package view

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// KindLabel makes a timeline kind readable: "stall_interrupt" → "stall
// interrupt".
func KindLabel(kind string) string { return strings.ReplaceAll(kind, "_", " ") }

// TurnTitle names the group of rows of one turn generation.
func TurnTitle(gen int64) string {
	if gen <= 0 {
		return "Before the first turn"
	}
	return fmt.Sprintf("Turn %d", gen)
}

// TimelineDetail is the human text of a timeline row's JSON detail: the
// state change first when there is one ("Working → Suspect"), then the
// message, then every other field as key=value in key order, so nothing
// recorded is hidden (an action's outcome, a failure's kind):
//
//	Working → Suspect: 12 min silent · failure=rate_limit
//
// A detail that is not a JSON object is shown as it is.
func TimelineDetail(detail json.RawMessage) string {
	var d sessions.TimelineDetail
	if len(detail) == 0 || json.Unmarshal(detail, &d) != nil {
		return strings.TrimSpace(string(detail))
	}
	lead := d.Message
	if d.From != "" && d.To != "" {
		lead = stateLabel(d.From) + " → " + stateLabel(d.To)
		if d.Message != "" {
			lead += ": " + d.Message
		}
		d.From, d.To = "", ""
	}
	// The rest, known fields and unknown alike, in key order: through the
	// detail's own encoding, which writes only the keys that are set.
	var rest map[string]any
	if b, err := json.Marshal(d); err == nil {
		_ = json.Unmarshal(b, &rest)
	}
	delete(rest, "message")
	keys := make([]string, 0, len(rest))
	for k := range rest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+1)
	if lead != "" {
		parts = append(parts, lead)
	}
	for _, k := range keys {
		parts = append(parts, k+"="+formatValue(rest[k]))
	}
	return strings.Join(parts, " · ")
}

// stateLabel is a stored state name's label; an unknown name (a newer
// build's) is shown as stored.
func stateLabel(name string) string {
	if st, err := sessions.ParseState(name); err == nil {
		return st.Label()
	}
	return name
}

// formatValue writes a JSON value compactly: numbers without exponents,
// strings bare, the rest as JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
