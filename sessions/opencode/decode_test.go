package opencode

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// decodeAll runs a whole stream through a Decoder.
func decodeAll(t *testing.T, r io.Reader, maxEvent int) ([]sessions.Event, []Frame, *Decoder) {
	t.Helper()
	d := NewDecoder(r, maxEvent, "")
	var evs []sessions.Event
	var frames []Frame
	for {
		f, err := d.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("decoder: %v", err)
			}
			return evs, frames, d
		}
		frames = append(frames, f)
		evs = append(evs, f.Events...)
	}
}

// significant are the events that move a state (not activity or metrics).
func significant(evs []sessions.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case sessions.EvActivity, sessions.EvMetrics:
			continue
		case sessions.EvTurnFailed:
			out = append(out, "turn_failed:"+e.Failure.Kind.String())
		case sessions.EvRetryScheduled:
			out = append(out, "retry:"+e.Failure.Kind.String())
		case sessions.EvToolStarted, sessions.EvToolFinished:
			out = append(out, e.Kind.String()+":"+e.Name)
		case sessions.EvCompactionFinished:
			if e.OK {
				out = append(out, "compaction_finished:ok")
			} else {
				out = append(out, "compaction_finished:failed")
			}
		default:
			out = append(out, e.Kind.String())
		}
	}
	return out
}

// TestDecodeCaptures decodes event streams the real `opencode serve`
// 1.18.33 sent against the fake API (captured with measure_test.go; the
// plugin and catalogue noise of a start left out).
func TestDecodeCaptures(t *testing.T) {
	retries := slices.Repeat([]string{"retry:rate_limit"}, 5)
	tests := []struct {
		file string
		want []string
	}{
		{"text.sse", []string{"turn_completed"}},
		{"tool.sse", []string{"tool_started:bash", "tool_finished:bash", "turn_completed"}},
		{"401.sse", []string{"turn_failed:auth"}},
		{"429.sse", append(retries, "turn_failed:rate_limit")},
		{"overflow_once.sse", []string{"compaction_started", "compaction_finished:ok", "turn_completed"}},
		{"overflow.sse", []string{"compaction_started", "compaction_finished:failed", "turn_failed:context_overflow"}},
		{"hang_interrupted.sse", []string{"turn_aborted"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			evs, _, d := decodeAll(t, f, 0)
			if got := significant(evs); !slices.Equal(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if st := d.Stats(); st.Skipped() != 0 {
				t.Errorf("skipped %+v", st)
			}
			if d.Busy() {
				t.Error("still busy after the turn ended")
			}
		})
	}
}

// TestDecodeRateLimitRetryTime: the turn's 429 carries retry-after; the
// failure's RetryAt is that long after the event was read.
func TestDecodeRateLimitRetryTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := state{now: func() time.Time { return now }}
	steps := []string{
		`{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"busy"}}}`,
		`{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"retry","attempt":2,"message":"Rate limit reached for requests","next":` +
			strconv.FormatInt(now.Add(1500*time.Millisecond).UnixMilli(), 10) + `}}}`,
		`{"type":"session.error","properties":{"sessionID":"ses_a","error":{"name":"APIError","data":{"message":"Rate limit reached","statusCode":429,"isRetryable":true,"responseHeaders":{"Retry-After":"20"}}}}}`,
		`{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"idle"}}}`,
	}
	var evs []sessions.Event
	for _, line := range steps {
		got, _, err := s.decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, got...)
	}
	retry, end := evs[1], evs[len(evs)-1]
	if retry.Kind != sessions.EvRetryScheduled || retry.Attempt != 2 || retry.Delay != 1500*time.Millisecond || retry.Failure.Kind != sessions.RateLimit {
		t.Errorf("retry %+v", retry)
	}
	if end.Kind != sessions.EvTurnFailed || end.Failure.Kind != sessions.RateLimit || !end.Failure.RetryAt.Equal(now.Add(20*time.Second)) || end.Status != 429 {
		t.Errorf("end %+v, want a rate limit until %v", end, now.Add(20*time.Second))
	}
}

// TestClassify: OpenCode's named errors and the providers' statuses and
// phrasings map onto the failure kinds recovery acts on.
func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		err  apiError
		want sessions.FailureKind
		at   time.Time
	}{
		{"auth error", mkErr("ProviderAuthError", "no key", 0, nil), sessions.Auth, time.Time{}},
		{"overflow", mkErr("ContextOverflowError", "too long", 0, nil), sessions.ContextOverflow, time.Time{}},
		{"401", mkErr("APIError", "Incorrect API key provided", 401, nil), sessions.Auth, time.Time{}},
		{"429 retry-after seconds", mkErr("APIError", "slow down", 429, map[string]string{"retry-after": "30"}), sessions.RateLimit, now.Add(30 * time.Second)},
		{"429 retry-after-ms", mkErr("APIError", "slow down", 429, map[string]string{"retry-after-ms": "2500"}), sessions.RateLimit, now.Add(2500 * time.Millisecond)},
		{"429 retry-after date", mkErr("APIError", "slow down", 429, map[string]string{"retry-after": now.Add(time.Hour).Format(http.TimeFormat)}), sessions.RateLimit, now.Add(time.Hour)},
		{"429 bad retry-after", mkErr("APIError", "slow down", 429, map[string]string{"retry-after": "soon"}), sessions.RateLimit, time.Time{}},
		{"529 overloaded", mkErr("APIError", "Overloaded", 529, nil), sessions.Overloaded, time.Time{}},
		{"503", mkErr("APIError", "unavailable", 503, nil), sessions.Overloaded, time.Time{}},
		{"500", mkErr("APIError", "boom", 500, nil), sessions.Network, time.Time{}},
		{"400 with an overflow text", mkErr("APIError", "maximum context length is 8192 tokens", 400, nil), sessions.ContextOverflow, time.Time{}},
		{"402", mkErr("APIError", "pay", 402, nil), sessions.Billing, time.Time{}},
		{"no status, rate text", mkErr("APIError", "Rate limit exceeded", 0, nil), sessions.RateLimit, time.Time{}},
		{"unknown error, connection", mkErr("UnknownError", "fetch failed: ECONNREFUSED", 0, nil), sessions.Network, time.Time{}},
		{"output length", mkErr("MessageOutputLengthError", "", 0, nil), sessions.OtherFailure, time.Time{}},
		{"too large to compact", mkErr("UnknownError", "Session too large to compact", 0, nil), sessions.ContextOverflow, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := state{now: func() time.Time { return now }}
			f := s.classify(&tc.err)
			if f.Kind != tc.want || !f.RetryAt.Equal(tc.at) || f.Message == "" {
				t.Errorf("got %+v, want %s at %v", f, tc.want, tc.at)
			}
		})
	}
}

func mkErr(name, msg string, status int, headers map[string]string) apiError {
	var e apiError
	e.Name = name
	e.Data.Message = msg
	e.Data.StatusCode = status
	e.Data.ResponseHeaders = headers
	return e
}

// TestDecodeSessionFilter: other sessions' events are not ours; a
// subagent's session (parentID ours) is our turn's activity.
func TestDecodeSessionFilter(t *testing.T) {
	s := state{session: "ses_ours", now: time.Now}
	tests := []struct {
		line string
		want []sessions.EventKind
	}{
		{`{"type":"session.status","properties":{"sessionID":"ses_other","status":{"type":"busy"}}}`, nil},
		{`{"type":"session.status","properties":{"sessionID":"ses_ours","status":{"type":"busy"}}}`, []sessions.EventKind{sessions.EvActivity}},
		{`{"type":"session.created","properties":{"sessionID":"ses_child","info":{"id":"ses_child","parentID":"ses_ours"}}}`, []sessions.EventKind{sessions.EvActivity}},
		{`{"type":"message.part.updated","properties":{"sessionID":"ses_child","part":{"type":"tool","tool":"bash","callID":"c9","state":{"status":"running"}}}}`, []sessions.EventKind{sessions.EvActivity}},
		{`{"type":"session.status","properties":{"sessionID":"ses_child","status":{"type":"idle"}}}`, nil},
		// A subagent's permission ask holds our turn; another session's does not.
		{`{"type":"permission.asked","properties":{"id":"per_c","sessionID":"ses_child","permission":"bash"}}`, []sessions.EventKind{sessions.EvWaitingOnUser}},
		{`{"type":"permission.asked","properties":{"id":"per_o","sessionID":"ses_other","permission":"bash"}}`, nil},
		{`{"type":"session.error","properties":{"sessionID":"ses_other","error":{"name":"APIError","data":{"message":"x","statusCode":401}}}}`, nil},
		{`{"type":"session.status","properties":{"sessionID":"ses_ours","status":{"type":"idle"}}}`, []sessions.EventKind{sessions.EvTurnCompleted}},
		{`{"type":"session.status","properties":{"sessionID":"ses_ours","status":{"type":"idle"}}}`, nil},
	}
	for i, tc := range tests {
		evs, _, err := s.decode([]byte(tc.line))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		var got []sessions.EventKind
		for _, e := range evs {
			got = append(got, e.Kind)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d %s: got %v, want %v", i, tc.line, got, tc.want)
		}
	}
}

// TestDecodePermissions: a permission or question request waits on the
// user; its reply is an answer given elsewhere unless the app gave it.
func TestDecodePermissions(t *testing.T) {
	s := state{session: "ses_a", now: time.Now}
	ask := `{"type":"permission.asked","properties":{"id":"per_1","sessionID":"ses_a","permission":"bash","patterns":["rm x"],"tool":{"messageID":"msg_1","callID":"call_1"}}}`
	evs, _, _ := s.decode([]byte(ask))
	if len(evs) != 1 || evs[0].Kind != sessions.EvWaitingOnUser || evs[0].Reason != sessions.WaitPermission ||
		evs[0].Permission == nil || evs[0].Permission.RequestID != "per_1" || evs[0].Permission.Tool != "bash" || evs[0].CallID != "call_1" {
		t.Fatalf("ask: %+v", evs)
	}
	evs, _, _ = s.decode([]byte(`{"type":"permission.replied","properties":{"sessionID":"ses_a","requestID":"per_1","reply":"once"}}`))
	if len(evs) != 1 || evs[0].Kind != sessions.EvUserAnswered {
		t.Errorf("reply given elsewhere: %+v", evs)
	}
	_, _, _ = s.decode([]byte(strings.Replace(ask, "per_1", "per_2", 1)))
	s.forget("per_2")
	evs, _, _ = s.decode([]byte(`{"type":"permission.replied","properties":{"sessionID":"ses_a","requestID":"per_2","reply":"reject"}}`))
	if len(evs) != 1 || evs[0].Kind != sessions.EvMetrics {
		t.Errorf("reply the app gave: %+v", evs)
	}
	evs, _, _ = s.decode([]byte(`{"type":"question.asked","properties":{"id":"que_1","sessionID":"ses_a","questions":[]}}`))
	if len(evs) != 1 || evs[0].Reason != sessions.WaitQuestion || evs[0].Permission.Tool != "question" {
		t.Errorf("question: %+v", evs)
	}
}

// TestDecodeSkips: malformed and unknown events are counted and skipped;
// known bookkeeping is not counted.
func TestDecodeSkips(t *testing.T) {
	tests := []struct {
		data string
		skip agentkit.SkipReason
		err  error
	}{
		{`not json`, agentkit.SkipMalformed, ErrMalformed},
		{`{"type":`, agentkit.SkipMalformed, ErrMalformed},
		{`{"type":"brand.new.event","properties":{}}`, agentkit.SkipUnknown, ErrUnknown},
		{`{"type":"server.heartbeat","properties":{}}`, agentkit.SkipNone, nil},
		{`{"type":"session.status","properties":{"status":"busy"}}`, agentkit.SkipNone, nil},
		{`   `, agentkit.SkipEmpty, nil},
	}
	for _, tc := range tests {
		_, info, err := DecodeEvent([]byte(tc.data))
		if info.Skip != tc.skip || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("%q: skip %q err %v, want %q %v", tc.data, info.Skip, err, tc.skip, tc.err)
		}
	}
}

// TestDecoderFraming: the SSE framing (multi-line data, CRLF, comments and
// other fields, an oversize event, a last event without its blank line).
func TestDecoderFraming(t *testing.T) {
	busy := `{"type":"session.status","properties":{"status":{"type":"busy"}}}`
	idle := `{"type":"session.status","properties":{"status":{"type":"idle"}}}`
	big := `{"type":"message.part.updated","properties":{"part":{"type":"text","text":"` + strings.Repeat("x", 300) + `"}}}`
	stream := ": comment\r\n" +
		"event: message\r\nid: 1\r\ndata: " + busy + "\r\n\r\n" +
		"data: " + big + "\n\n" +
		"data: {\"type\":\"session.status\",\n" + "data: \"properties\":{\"status\":{\"type\":\"retry\",\"attempt\":1}}}\n\n" +
		"\n\n" +
		"data: " + idle
	evs, frames, d := decodeAll(t, strings.NewReader(stream), 200)
	if got := significant(evs); !slices.Equal(got, []string{"retry:other", "turn_completed"}) {
		t.Errorf("events %v", got)
	}
	if len(frames) != 4 || frames[1].Info.Skip != agentkit.SkipOversize {
		t.Errorf("frames %+v, want 4 with the second oversize", frames)
	}
	if st := d.Stats(); st.Oversize != 1 || st.Frames != 4 || st.Skipped() != 1 {
		t.Errorf("stats %+v", st)
	}
	// A line longer than the read buffer is assembled, not split.
	long := `{"type":"message.part.updated","properties":{"part":{"type":"reasoning","text":"` + strings.Repeat("y", 200<<10) + `"}}}`
	evs, _, d = decodeAll(t, strings.NewReader("data: "+long+"\n\n"), 0)
	if len(evs) != 1 || evs[0].Detail != "thinking" || d.Stats().Skipped() != 0 {
		t.Errorf("long line: %+v %+v", evs, d.Stats())
	}
}

// FuzzDecode: no input panics the decoder or breaks its bookkeeping.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"text.sse", "tool.sse", "429.sse", "overflow.sse"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: {\"type\":\"session.status\",\"properties\":{\"status\":{\"type\":\"retry\",\"next\":1e300}}}\n\n"))
	f.Add([]byte("data: {\"type\":\"session.error\",\"properties\":{\"error\":{\"name\":\"APIError\",\"data\":{\"statusCode\":429,\"responseHeaders\":{\"retry-after\":\"1e308\"}}}}}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(strings.NewReader(string(b)), 4096, "ses_x")
		for _, fr := range agenttest.Drain(t, d) {
			for _, e := range fr.Events {
				if e.Kind == sessions.EvUnknown {
					t.Fatalf("unknown event kind from %q", b)
				}
				if e.Delay < 0 {
					t.Fatalf("negative delay from %q", b)
				}
			}
		}
		st := d.Stats()
		if st.Skipped() > st.Frames {
			t.Fatalf("stats %+v", st)
		}
	})
}
