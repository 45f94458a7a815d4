package sessions

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The stable names are a storage and API contract: a rename is a migration,
// so each one is spelled out here rather than derived from the code under test.
func TestStateNamesAndLabels(t *testing.T) {
	tests := []struct {
		st    State
		name  string
		label string
	}{
		{Working, "working", "Working"},
		{Compacting, "compacting", "Compacting"},
		{WaitingOnUser, "waiting_on_user", "Waiting on user"},
		{Recovering, "recovering", "Recovering"},
		{Suspect, "suspect", "Suspect"},
		{Interrupted, "interrupted", "Interrupted"},
		{Errored, "errored", "Errored"},
		{Idle, "idle", "Idle"},
	}
	if len(tests) != len(AllStates) {
		t.Fatalf("AllStates has %d states, the spec has %d", len(AllStates), len(tests))
	}
	seen := map[State]bool{}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if AllStates[i] != tt.st {
				t.Errorf("AllStates[%d] = %v, want %v (spec order)", i, AllStates[i], tt.st)
			}
			if !tt.st.Valid() {
				t.Errorf("Valid() = false")
			}
			if got := tt.st.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.st.Label(); got != tt.label {
				t.Errorf("Label() = %q, want %q", got, tt.label)
			}
			got, err := ParseState(tt.name)
			if err != nil || got != tt.st {
				t.Errorf("ParseState(%q) = %v, %v; want %v, nil", tt.name, got, err, tt.st)
			}
			b, err := tt.st.MarshalText()
			if err != nil || string(b) != tt.name {
				t.Errorf("MarshalText() = %q, %v; want %q, nil", b, err, tt.name)
			}
			var back State = -1
			if err := back.UnmarshalText(b); err != nil || back != tt.st {
				t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, back, err, tt.st)
			}
		})
		if seen[tt.st] {
			t.Errorf("state %v listed twice", tt.st)
		}
		seen[tt.st] = true
	}
	if State(0) != Idle {
		t.Errorf("the zero State is %v, want idle (a fresh session is honest by default)", State(0))
	}
}

func TestStateJSONRoundTrip(t *testing.T) {
	type holder struct {
		S State `json:"s"`
	}
	for _, st := range AllStates {
		b, err := json.Marshal(holder{S: st})
		if err != nil {
			t.Fatalf("marshal %v: %v", st, err)
		}
		want := `{"s":"` + st.String() + `"}`
		if string(b) != want {
			t.Errorf("json of %v = %s, want %s", st, b, want)
		}
		var h holder
		h.S = -1
		if err := json.Unmarshal(b, &h); err != nil || h.S != st {
			t.Errorf("unmarshal %s = %v, %v; want %v", b, h.S, err, st)
		}
	}
	// Concrete spellings, independent of String().
	for name, st := range map[string]State{
		"working": Working, "compacting": Compacting, "waiting_on_user": WaitingOnUser,
		"recovering": Recovering, "suspect": Suspect, "interrupted": Interrupted,
		"errored": Errored, "idle": Idle,
	} {
		var h holder
		if err := json.Unmarshal([]byte(`{"s":"`+name+`"}`), &h); err != nil || h.S != st {
			t.Errorf("unmarshal %q = %v, %v; want %v", name, h.S, err, st)
		}
	}
}

func TestStateRejectsUnknown(t *testing.T) {
	for _, name := range []string{"", "Working", "WORKING", "waiting-on-user", "waitingonuser", "Waiting on user", " idle", "idle ", "stalled", "state(3)", "3"} {
		if st, err := ParseState(name); err == nil {
			t.Errorf("ParseState(%q) = %v, nil; want an error", name, st)
		}
		st := Suspect
		if err := st.UnmarshalText([]byte(name)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", name)
		} else if st != Suspect {
			t.Errorf("UnmarshalText(%q) failed but changed the value to %v", name, st)
		}
		var h struct {
			S State `json:"s"`
		}
		if err := json.Unmarshal([]byte(`{"s":`+strconvQuote(name)+`}`), &h); err == nil {
			t.Errorf("json.Unmarshal accepted state %q", name)
		}
	}
	_, err := ParseState("stalled")
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("error %v does not name the bad input", err)
	}

	for _, bad := range []State{-1, 8, 99} {
		if bad.Valid() {
			t.Errorf("State(%d).Valid() = true", int(bad))
		}
		if _, err := bad.MarshalText(); err == nil {
			t.Errorf("State(%d).MarshalText() succeeded; an invalid state must not be stored", int(bad))
		}
		if _, err := json.Marshal(struct{ S State }{bad}); err == nil {
			t.Errorf("json.Marshal of State(%d) succeeded", int(bad))
		}
		if got := bad.String(); got == "" || parseStateOK(got) {
			t.Errorf("State(%d).String() = %q, want a non-empty non-state name", int(bad), got)
		}
		if bad.Label() != bad.String() {
			t.Errorf("State(%d).Label() = %q, want String() %q", int(bad), bad.Label(), bad.String())
		}
	}
}

// parseStateOK reports whether name parses as a state.
func parseStateOK(name string) bool { _, err := ParseState(name); return err == nil }

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// textEnum is what every small enum implements.
type textEnum interface {
	encoding.TextMarshaler
	String() string
}

func TestSmallEnumsRoundTrip(t *testing.T) {
	type tc struct {
		v    textEnum
		name string
		// parse decodes name into a fresh value of the same type.
		parse func(string) (textEnum, error)
	}
	src := func(s string) (textEnum, error) { var v Source = 99; err := v.UnmarshalText([]byte(s)); return v, err }
	wait := func(s string) (textEnum, error) {
		var v WaitReason = 99
		err := v.UnmarshalText([]byte(s))
		return v, err
	}
	fail := func(s string) (textEnum, error) {
		var v FailureKind = 99
		err := v.UnmarshalText([]byte(s))
		return v, err
	}
	act := func(s string) (textEnum, error) { var v Actor = 99; err := v.UnmarshalText([]byte(s)); return v, err }
	ev := func(s string) (textEnum, error) {
		var v EventKind = 99
		err := v.UnmarshalText([]byte(s))
		return v, err
	}
	tests := []tc{
		{Managed, "managed", src}, {Hooked, "hooked", src}, {Observed, "observed", src},
		{NoWait, "", wait}, {WaitQuestion, "question", wait}, {WaitPlan, "plan", wait},
		{WaitPermission, "permission", wait}, {WaitReview, "review", wait},
		{NoFailure, "", fail}, {RateLimit, "rate_limit", fail}, {Overloaded, "overloaded", fail},
		{Network, "network", fail},
		{ContextOverflow, "context_overflow", fail}, {Auth, "auth", fail}, {Billing, "billing", fail},
		{OtherFailure, "other", fail}, {Launch, "launch", fail},
		{ByUser, "user", act}, {BySupervisor, "supervisor", act},
		{EvUnknown, "unknown", ev}, {EvProcessStarted, "process_started", ev}, {EvSessionInit, "session_init", ev},
		{EvTurnStarted, "turn_started", ev}, {EvActivity, "activity", ev}, {EvMetrics, "metrics", ev},
		{EvToolStarted, "tool_started", ev}, {EvToolFinished, "tool_finished", ev},
		{EvTaskStarted, "task_started", ev}, {EvTaskFinished, "task_finished", ev},
		{EvCompactionStarted, "compaction_started", ev}, {EvCompactionFinished, "compaction_finished", ev},
		{EvWaitingOnUser, "waiting_on_user", ev}, {EvUserAnswered, "user_answered", ev},
		{EvRetryScheduled, "retry_scheduled", ev}, {EvTurnCompleted, "turn_completed", ev},
		{EvTurnFailed, "turn_failed", ev}, {EvInterruptRequested, "interrupt_requested", ev},
		{EvTurnAborted, "turn_aborted", ev}, {EvIdle, "idle", ev}, {EvAcknowledged, "acknowledged", ev},
		{EvProcessExited, "process_exited", ev}, {EvSessionEnded, "session_ended", ev},
		{EvPromptAdded, "prompt_added", ev},
	}
	for _, tt := range tests {
		label := reflect.TypeOf(tt.v).Name() + "/" + tt.name
		t.Run(label, func(t *testing.T) {
			if got := tt.v.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			b, err := tt.v.MarshalText()
			if err != nil || string(b) != tt.name {
				t.Fatalf("MarshalText() = %q, %v; want %q", b, err, tt.name)
			}
			back, err := tt.parse(string(b))
			if err != nil || back != tt.v {
				t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, back, err, tt.v)
			}
		})
	}
	// Every event kind is listed above, so a new kind must get a name here too.
	if n := len(AllEventKinds()) + 1; n != 25 {
		t.Errorf("there are %d event kinds (with unknown); update this test's names", n)
	}
	// Unknown names are rejected, and the value is left as it was.
	for _, p := range []func(string) (textEnum, error){src, wait, fail, act, ev} {
		for _, bad := range []string{"bogus", "Managed", "RATE_LIMIT", "rate-limit", "Review", "USER", "turn-started", "0", "1"} {
			v, err := p(bad)
			if err == nil {
				t.Errorf("%T accepted %q as %v", v, bad, v)
				continue
			}
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("%T error %q does not name the bad input %q", v, err, bad)
			}
			if v.String() != "99" {
				t.Errorf("%T: failed UnmarshalText(%q) changed the value to %v", v, bad, v)
			}
		}
	}
	// Empty is a valid name only where the zero value means "none".
	for _, p := range []func(string) (textEnum, error){src, act, ev} {
		if v, err := p(""); err == nil {
			t.Errorf("%T accepted the empty name as %v", v, v)
		}
	}
}

func TestAllEventKinds(t *testing.T) {
	kinds := AllEventKinds()
	seen := map[EventKind]bool{}
	for _, k := range kinds {
		if k == EvUnknown {
			t.Errorf("AllEventKinds includes EvUnknown")
		}
		if seen[k] {
			t.Errorf("AllEventKinds lists %v twice", k)
		}
		seen[k] = true
	}
	for k := EvProcessStarted; k <= EvObserved; k++ {
		if !seen[k] {
			t.Errorf("AllEventKinds misses %v", k)
		}
	}
	if len(kinds) != int(EvObserved) {
		t.Errorf("AllEventKinds has %d kinds, want %d", len(kinds), int(EvObserved))
	}
	// The result is a fresh slice: callers may sort or trim it.
	kinds[0] = EvUnknown
	if AllEventKinds()[0] != EvProcessStarted {
		t.Errorf("AllEventKinds returns a shared slice")
	}
}

func TestEventKindGenuine(t *testing.T) {
	notGenuine := map[EventKind]bool{
		EvUnknown: true, EvMetrics: true, EvAcknowledged: true, EvInterruptRequested: true,
		EvProcessExited: true, EvSessionEnded: true, EvProcessStarted: true,
		// The app's own prompt into a running turn is not the agent's activity.
		EvPromptAdded: true,
	}
	for k := EvUnknown; k <= EvPromptAdded; k++ {
		if got, want := k.Genuine(), !notGenuine[k]; got != want {
			t.Errorf("%v.Genuine() = %v, want %v", k, got, want)
		}
	}
}

func TestFailureKindLabel(t *testing.T) {
	want := map[FailureKind]string{
		NoFailure: "no failure", RateLimit: "rate limited", Overloaded: "API overloaded", Network: "network or server error",
		ContextOverflow: "context overflow", Auth: "authentication failed", Billing: "billing error",
		Launch:       "launch failed",
		OtherFailure: "error",
	}
	for k, w := range want {
		if got := k.Label(); got != w {
			t.Errorf("%v.Label() = %q, want %q", k, got, w)
		}
	}
}

// The JSON form of a Session is the documented contract of `--json` and the
// local API: enums are names, not numbers, and a round trip loses nothing.
func TestSessionJSONContract(t *testing.T) {
	code := 137
	by := BySupervisor
	s := Session{
		ID: "0123456789abcdef", Name: "api", Agent: "claude", AgentSessionID: "a-1", Source: Hooked,
		Cwd: "/src", PID: 77, State: WaitingOnUser, Evidence: "the agent asks permission to use Bash",
		WaitReason: WaitPermission, Failure: Failure{Kind: RateLimit, RetryAt: t0.Add(time.Hour), Message: "limit"},
		NeedsAttention: true, TurnGeneration: 9, InTurn: true, TurnStarted: t0.Add(-time.Minute),
		LastEventAt: t0, OpenTools: map[string]OpenCall{"t1": {Name: "Bash", Started: t0}},
		OpenTasks: map[string]OpenCall{"b1": {Name: "npm test", Started: t0}}, CompactionStarted: t0,
		Permission: &Permission{RequestID: "r1", Tool: "Bash"}, InterruptBy: &by,
		Nudge: NudgeBudget{Attempts: 2, LastNudge: t0}, ProcessAlive: true, LastExitCode: &code,
		PermissionMode: "default", SkippedLines: 3, StateChangedAt: t0, CreatedAt: t0, UpdatedAt: t0,
		// The supervisor's bookkeeping is persisted through this JSON: a
		// transient incident must survive an app restart whole.
		Supervision: Supervision{Recovery: "transient", RecoveryAttempts: 4, NextAttemptAt: t0.Add(time.Minute),
			EscalatedGeneration: 8, IncidentStarted: t0.Add(-time.Hour), OfflineSince: t0.Add(-time.Minute), OfflineFor: 90 * time.Second},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{
		`"state":"waiting_on_user"`, `"wait_reason":"permission"`, `"source":"hooked"`,
		`"kind":"rate_limit"`, `"interrupt_by":"supervisor"`, `"last_exit_code":137`,
	} {
		if !strings.Contains(string(b), frag) {
			t.Errorf("session JSON lacks %s: %s", frag, b)
		}
	}
	var back Session
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("JSON round trip changed the session:\n got %+v\nwant %+v", back, s)
	}
}

func TestSanitizeMessage(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, in, want string
	}{
		{"plain text unchanged", "rate limit reached; resets at 5pm", "rate limit reached; resets at 5pm"},
		{"empty", "", ""},
		{"anthropic key", "request failed: key sk-ant-api03-AbCdEf123456_xyz-789QRS invalid", "request failed: key [redacted] invalid"},
		{"openai key", "Incorrect API key provided: sk-proj-abcdefghijklmnop.", "Incorrect API key provided: [redacted]."},
		{"bearer header", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: [redacted]"},
		{"bearer lower case", "sent bearer   abcdefgh12345 upstream", "sent [redacted] upstream"},
		{"api_key=", "GET /v1?api_key=abcd1234efgh&x=1 failed", "GET /v1?api_key=[redacted] failed"},
		{"api-key: quoted", `{"x-api-key": "secretvalue", "ok": true}`, `{"x-api-key": "[redacted]", "ok": true}`},
		{"API_KEY upper", "API_KEY=zzz", "API_KEY=[redacted]"},
		{"token=", "token=abc", "token=[redacted]"},
		{"password:", "db password: hunter2 rejected", "db password: [redacted] rejected"},
		{"whitespace and control characters", "line one\n\tline two\r\n   three\x00four\x7f\x1b[31m", "line one line two three four"},
		{"escape sequences removed whole", "\x1b[1mbold\x1b[0m \x1b]0;retitled\x07error", "bold error"},
		{"an unterminated OSC ends at the line break", "oops \x1b]0;title\nreal message", "oops real message"},
		{"C1 controls and bidi overrides", "a\u009b2Jb \u202eevil\u202c", "ab evil"},
		{"leading and trailing space", "  \n overloaded \t ", "overloaded"},
		{"exactly 200 runes kept", strings.Repeat("a", 200), strings.Repeat("a", 200)},
		{"201 runes cut", strings.Repeat("a", 201), strings.Repeat("a", 199) + "…"},
		{"multi-byte runes cut on rune boundaries", long, strings.Repeat("é", 199) + "…"},
		// Redaction happens before the cut: a key across rune 200 must not
		// leave its "sk-ant-" prefix behind.
		{"a key straddling the cut is redacted, not cut", strings.Repeat("x", 195) + " sk-ant-api03-" + strings.Repeat("Z", 40), strings.Repeat("x", 195) + " [re…"},
		{"a redacted key shortens the message", strings.Repeat("y", 180) + " sk-ant-api03-" + strings.Repeat("Q", 40) + " tail", strings.Repeat("y", 180) + " [redacted] tail"},
		{"short sk- words are not keys", "task-runner sk-1 ok", "task-runner sk-1 ok"},
		{"credentials in a URL", "fetch https://bob:hunter2@git.example.com/r.git failed", "fetch https://[redacted]@git.example.com/r.git failed"},
		{"a URL without credentials is kept", "see https://example.com/a@b and git@github.com:o/r", "see https://example.com/a@b and git@github.com:o/r"},
		{"basic authorization", "Authorization: Basic dXNlcjpodW50ZXIy denied", "Authorization: [redacted] denied"},
		{"basic as a word is kept", "a basic explanation of Basic information", "a basic explanation of Basic information"},
		{"jwt alone", "id token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl expired", "id token [redacted] expired"},
		{"github tokens", "ghp_abcdefghijklmnopqrstuvwxyz0123456789 and github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[redacted] and [redacted]"},
		{"google api key and oauth token", "key AIzaSyA1234567890abcdefghijklmnopqrstuv token ya29.a0AfH6SMBx-abcdefghij", "key [redacted] token [redacted]"},
		{"aws keys", "AKIAIOSFODNN7EXAMPLE aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[redacted] aws_secret_access_key=[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeMessage(tt.in)
			if got != tt.want {
				t.Errorf("SanitizeMessage(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > 200 {
				t.Errorf("result has %d runes, want at most 200", n)
			}
			for _, leak := range []string{"sk-ant", "sk-proj", "eyJhbG", "abcd1234", "hunter2", "secretvalue", "dXNlcjpo", "ghp_", "github_pat_", "AIzaSy", "ya29.", "AKIA", "wJalr", "\n", "\t", "\x00"} {
				if strings.Contains(got, leak) {
					t.Errorf("result %q still contains %q", got, leak)
				}
			}
			if again := SanitizeMessage(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

// The --json contract: failure always has kind, retry_at and message;
// retry_at is null when unknown and RFC 3339 when known.
func TestFailureJSONContract(t *testing.T) {
	cases := []struct {
		f    Failure
		want string
	}{
		{Failure{}, `{"kind":"","retry_at":null,"message":""}`},
		{Failure{Kind: RateLimit, RetryAt: time.Date(2026, 11, 29, 15, 45, 0, 0, time.UTC), Message: "session limit"},
			`{"kind":"rate_limit","retry_at":"2026-11-29T15:45:00Z","message":"session limit"}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("Marshal(%+v) = %s, want %s", tc.f, b, tc.want)
		}
		var back Failure
		if err := json.Unmarshal(b, &back); err != nil || !back.RetryAt.Equal(tc.f.RetryAt) || back.Kind != tc.f.Kind || back.Message != tc.f.Message {
			t.Errorf("round trip of %s = %+v, %v", b, back, err)
		}
	}
}
