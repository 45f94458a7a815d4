package claude

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// TestDecoderUsage: an assistant message's usage counts once per message
// id, however many of its content blocks the CLI prints and whatever lines
// of a subagent's messages come between; the result line's totals are not
// counted again; a synthetic message has none.
func TestDecoderUsage(t *testing.T) {
	const model = "claude-sonnet-4-5-20250929"
	msg := func(id, parent, block string, in, out, cw, cr int) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"assistant","message":{"id":"` + id + `","model":"` + model + `","content":[` + block + `],` +
			`"usage":{"input_tokens":` + itoa(in) + `,"output_tokens":` + itoa(out) + `,"cache_creation_input_tokens":` + itoa(cw) + `,"cache_read_input_tokens":` + itoa(cr) + `}},"parent_tool_use_id":` + p + `,"session_id":"s"}`
	}
	text := `{"type":"text","text":"hi"}`
	tool := `{"type":"tool_use","id":"t1","name":"Task","input":{}}`
	stream := strings.Join([]string{
		initLine,
		msg("m1", "", `{"type":"thinking","thinking":"x"}`, 10, 1, 100, 1000),
		msg("m1", "", tool, 10, 30, 100, 1000), // the same message, its output grown
		msg("s1", "t1", text, 5, 7, 0, 50),     // a subagent's message in between
		msg("m1", "", tool, 10, 30, 100, 1000), // m1 again: nothing new
		msg("s1", "t1", text, 5, 7, 0, 50),
		`{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error"}],"usage":{"input_tokens":0,"output_tokens":0}},"error":"unknown","parent_tool_use_id":null,"session_id":"s"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","usage":{"input_tokens":15,"output_tokens":37,"cache_creation_input_tokens":100,"cache_read_input_tokens":1050},"modelUsage":{"` + model + `":{"inputTokens":15,"outputTokens":37}}}`,
	}, "\n") + "\n"
	s := sessions.Session{ID: "x", State: sessions.Idle}
	now := time.Unix(0, 0)
	s = sessions.Apply(s, sessions.Event{Kind: sessions.EvTurnStarted}, now)
	reports := 0
	for _, l := range agenttest.Drain(t, NewDecoder(strings.NewReader(stream), 0)) {
		for _, e := range l.Events {
			if e.Usage != nil {
				reports++
			}
			s = sessions.Apply(s, e, now)
		}
	}
	want := sessions.Usage{model: {Input: 15, Output: 37, CacheWrite: 100, CacheRead: 1050}}
	if !reflect.DeepEqual(s.Usage.Total, want) || !reflect.DeepEqual(s.Usage.Turn, want) {
		t.Errorf("usage %+v, want %+v", s.Usage, want)
	}
	if reports != 3 {
		t.Errorf("%d usage reports, want 3 (m1, its growth, s1; the result adds nothing)", reports)
	}

	// The result's usage has the final output counts the assistant lines
	// lack (they carry message_start's, an output of 1): the difference is
	// counted against the turn's model, once.
	d := NewDecoder(strings.NewReader(strings.Join([]string{
		initLine,
		msg("m1", "", tool, 10, 1, 100, 1000),
		msg("m2", "", text, 3, 1, 0, 1100),
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","usage":{"input_tokens":13,"output_tokens":60,"cache_creation_input_tokens":100,"cache_read_input_tokens":2100}}`,
		msg("m3", "", text, 1, 1, 0, 0),
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","usage":{"input_tokens":1,"output_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
	}, "\n")+"\n"), 0)
	s = sessions.Session{ID: "y", State: sessions.Idle}
	for _, l := range agenttest.Drain(t, d) {
		for _, e := range l.Events {
			s = sessions.Apply(s, e, now)
		}
	}
	want = sessions.Usage{model: {Input: 14, Output: 69, CacheWrite: 100, CacheRead: 2100}}
	if !reflect.DeepEqual(s.Usage.Total, want) {
		t.Errorf("with the results' corrections: usage %+v, want %+v", s.Usage.Total, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
