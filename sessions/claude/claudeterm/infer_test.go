package claudeterm

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// A transcript the real CLI wrote (2.1.328, three turns: a prompt, a
// follow-up, a resume), fed line by line as a tail would see it grow: the
// inferred state after each line.
func TestInferOnRealTranscript(t *testing.T) {
	f, err := os.Open("testdata/transcript_sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum Summary
	var got []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, observe.MaxLine)
	for sc.Scan() {
		sum.Feed(sc.Bytes())
		st, _ := Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Transcript: sum})
		w := st.State.String()
		if st.Wait != sessions.NoWait {
			w += "/" + st.Wait.String()
		}
		if len(got) == 0 || got[len(got)-1] != w {
			got = append(got, w)
		}
	}
	want := "idle working waiting_on_user/review working waiting_on_user/review working waiting_on_user/review"
	if strings.Join(got, " ") != want {
		t.Fatalf("states %v\nwant    %s", got, want)
	}
	if sum.FirstPrompt != "first question" {
		t.Errorf("first prompt %q", sum.FirstPrompt)
	}
}

// Synthetic records in the CLI's shapes (agent-cli-protocols.md §1.3 and
// the measured session file).
const (
	recPrompt       = `{"type":"user","message":{"role":"user","content":"fix the build"},"timestamp":"2026-11-30T10:00:00Z"}`
	recToolUseInput = `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make build","description":"build it"}}]},"timestamp":"2026-11-30T10:00:01Z"}`
	recToolUse      = `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash"}]},"timestamp":"2026-11-30T10:00:01Z"}`
	recToolResult   = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"timestamp":"2026-11-30T10:00:05Z"}`
	recAsk          = `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"q1","name":"AskUserQuestion"}]}}`
	recPlan         = `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"p1","name":"ExitPlanMode"}]}}`
	recEnd          = `{"type":"assistant","message":{"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"done"}]}}`
	recPartial      = `{"type":"assistant","message":{"role":"assistant","stop_reason":null,"content":[{"type":"text","text":"thinking"}]}}`
	recDuration     = `{"type":"system","subtype":"turn_duration","durationMs":59902}`
	recRateLimit    = `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,"message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your session limit · resets 9:50pm (Asia/Saigon)"}]},"timestamp":"2026-11-30T10:00:00Z"}`
	recOverloaded   = `{"type":"assistant","isApiErrorMessage":true,"error":"server_error","message":{"content":[{"type":"text","text":"API Error: 529 Overloaded."}]}}`
	recTooLong      = `{"type":"assistant","isApiErrorMessage":true,"error":"invalid_request","message":{"content":[{"type":"text","text":"Prompt is too long"}]}}`
	recNotError     = `{"type":"assistant","isApiErrorMessage":false,"message":{"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`
	recRetry        = `{"type":"system","subtype":"api_error","level":"error","error":{"status":529,"message":"529 overloaded"},"retryInMs":601,"retryAttempt":1,"maxRetries":10,"timestamp":"2026-11-30T10:00:00Z"}`
	recInterrupt    = `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`
	recCompactCmd   = `{"type":"user","message":{"role":"user","content":"<command-name>/compact</command-name>"}}`
	recBoundary     = `{"type":"system","subtype":"compact_boundary","content":"Conversation compacted"}`
	recMeta         = `{"type":"user","isMeta":true,"message":{"role":"user","content":"Caveat: resumed"}}`
	recPeer         = `{"type":"user","isMeta":true,"turnOrigin":"peer","origin":{"kind":"peer","from":"uds:session-supervisor"},"message":{"role":"user","content":"Another Claude session sent a message:\nYour previous turn was interrupted before it finished. Please continue where you left off."},"timestamp":"2026-11-30T10:00:09Z"}`
	recAutoContinue = `{"type":"user","isMeta":true,"turnOrigin":"auto_continuation","origin":{"kind":"auto-continuation"},"promptSource":"system","message":{"role":"user","content":"Your claude.ai usage limit has reset. Continue the task you were working on when the limit was reached; do not repeat work that is already complete."},"timestamp":"2026-11-30T10:00:09Z"}`
	recSidechain    = `{"type":"assistant","isSidechain":true,"message":{"role":"assistant","content":[{"type":"text","text":"sub"}]}}`
)

// at is a status time in Unix ms, seconds after the records' 10:00:00.
func at(sec int) int64 { return time.Date(2026, 11, 30, 10, 0, sec, 0, time.UTC).UnixMilli() }

// ruleCase is one row of a rule stack table: the transcript's records,
// the session file, the process gone or not, the newest hook event, and the
// state, wait, failure, turn and rule the stack must decide, with a word of
// its evidence.
type ruleCase struct {
	name    string
	records []string
	file    SessionFile
	gone    bool
	hook    *HookEvent
	state   sessions.State
	wait    sessions.WaitReason
	failure sessions.FailureKind
	inTurn  bool
	rule    string
	evid    string
}

// checkRules runs a rule stack table.
func checkRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, r := range tc.records {
				sum.Feed([]byte(r))
			}
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: !tc.gone, Known: true}, File: tc.file, Transcript: sum, Hook: tc.hook})
			if st.State != tc.state || st.Wait != tc.wait || st.Failure.Kind != tc.failure || st.InTurn != tc.inTurn || rule != tc.rule {
				t.Fatalf("got %v/%q failure %v inTurn %v by rule %q (%s); want %v/%q %v %v by %q",
					st.State, st.Wait, st.Failure.Kind, st.InTurn, rule, st.Evidence, tc.state, tc.wait, tc.failure, tc.inTurn, tc.rule)
			}
			if st.Evidence == "" || !strings.Contains(st.Evidence, tc.evid) {
				t.Fatalf("evidence %q does not mention %q", st.Evidence, tc.evid)
			}
		})
	}
}

func TestRuleStack(t *testing.T) {
	checkRules(t, []ruleCase{
		{"nothing yet", nil, SessionFile{}, false, nil, sessions.Idle, 0, 0, false, "idle", "no prompt yet"},
		{"prompt sent", []string{recPrompt}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", "turn in flight"},
		{"busy status alone", nil, SessionFile{Status: "busy"}, false, nil, sessions.Working, 0, 0, true, "turn in flight", "says busy"},
		{"open tool", []string{recPrompt, recToolUse}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "open tool", "running Bash"},
		{"tool finished", []string{recPrompt, recToolUse, recToolResult}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"mid-message", []string{recPrompt, recPartial}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"turn ended", []string{recPrompt, recEnd}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", "turn ended"},
		{"turn_duration ends it", []string{recPrompt, recToolUse, recToolResult, recPartial, recDuration}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", ""},
		{"an idle status newer than the transcript beats it", []string{recPrompt, recPartial}, SessionFile{Status: "idle", StatusUpdatedAt: at(2)}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", "not in the transcript yet"},
		{"an idle status older than the prompt is the last turn's", []string{recPrompt, recPartial}, SessionFile{Status: "idle", StatusUpdatedAt: at(-1)}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"an idle status of unknown age is not trusted", []string{recPrompt}, SessionFile{Status: "idle"}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"question", []string{recPrompt, recAsk}, SessionFile{Status: "busy"}, false, nil, sessions.WaitingOnUser, sessions.WaitQuestion, 0, true, "waiting on the user", "question"},
		{"plan", []string{recPrompt, recPlan}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitPlan, 0, true, "waiting on the user", "plan"},
		{"permission as 2.1.328 writes it", []string{recPrompt}, SessionFile{Status: "waiting", WaitingFor: "permission prompt"}, false, nil, sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", "asks permission in the terminal"},
		{"another wait", []string{recPrompt}, SessionFile{Status: "waiting", WaitingFor: "dialog open"}, false, nil, sessions.WaitingOnUser, sessions.WaitQuestion, 0, true, "waiting on the user", "dialog open"},
		{"permission from the session file", []string{recPrompt}, SessionFile{Status: "waiting", WaitingFor: "approve Bash"}, false, nil, sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", "asks permission in the terminal: Bash — allow?"},
		// Auto mode (2.1.328's default) writes the tool_use first, then
		// opens its dialog: a permission naming the call.
		{"a dialog over an open tool call", []string{recPrompt, recToolUseInput}, SessionFile{Status: "waiting", WaitingFor: "dialog open"}, false, nil, sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", "Bash: make build — allow? (answer it there)"},
		{"approve names the open call", []string{recPrompt, recToolUseInput}, SessionFile{Status: "waiting", WaitingFor: "approve Bash"}, false, nil, sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", "Bash: make build — allow?"},
		{"rate limit: errored, the CLI's idle is not the truth", []string{recPrompt, recRateLimit}, SessionFile{Status: "idle"}, false, nil, sessions.Errored, 0, sessions.RateLimit, false, "API error", "resets at"},
		{"overload", []string{recPrompt, recOverloaded}, SessionFile{}, false, nil, sessions.Errored, 0, sessions.Overloaded, false, "API error", "overloaded"},
		{"context too long", []string{recPrompt, recTooLong}, SessionFile{}, false, nil, sessions.Errored, 0, sessions.ContextOverflow, false, "API error", ""},
		{"isApiErrorMessage false is no error", []string{recPrompt, recNotError}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", ""},
		{"an error followed by a new prompt is over", []string{recPrompt, recRateLimit, recPrompt}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"the CLI retries", []string{recPrompt, recRetry}, SessionFile{Status: "busy"}, false, nil, sessions.Recovering, 0, sessions.Overloaded, true, "API error", "attempt 1/10"},
		{"a retry followed by progress is over", []string{recPrompt, recRetry, recPartial}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"stopped by the user", []string{recPrompt, recToolUse, recInterrupt}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", "you stopped"},
		{"compacting", []string{recPrompt, recEnd, recCompactCmd}, SessionFile{Status: "busy"}, false, nil, sessions.Compacting, 0, 0, true, "compacting", "compact"},
		{"compaction done", []string{recPrompt, recEnd, recCompactCmd, recBoundary}, SessionFile{}, false, nil, sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", ""},
		{"a meta note is no prompt", []string{recMeta}, SessionFile{}, false, nil, sessions.Idle, 0, 0, false, "idle", "nothing in flight"},
		{"a message from the inbox starts a turn", []string{recPrompt, recEnd, recPeer}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", "turn in flight"},
		{"a subagent's line is progress", []string{recPrompt, recToolUse, recToolResult, recEnd, recSidechain}, SessionFile{}, false, nil, sessions.Working, 0, 0, true, "turn in flight", ""},
		{"process gone mid-turn", []string{recPrompt, recToolUse}, SessionFile{Status: "busy"}, true, nil, sessions.Interrupted, 0, 0, false, "process gone", "gone mid-turn"},
		{"process gone after the turn", []string{recPrompt, recEnd}, SessionFile{}, true, nil, sessions.Idle, 0, 0, false, "process gone", "gone"},
	})
}

// The order of the stack is the design: each rule must be shadowed by the
// ones above it. Every rule is reached by some evidence (none is dead).
func TestRuleStackEveryRuleReachable(t *testing.T) {
	hit := map[string]bool{}
	for _, recs := range [][]string{nil, {recPrompt}, {recPrompt, recToolUse}, {recPrompt, recEnd}, {recPrompt, recAsk}, {recPrompt, recRateLimit}, {recPrompt, recEnd, recCompactCmd}} {
		var sum Summary
		for _, r := range recs {
			sum.Feed([]byte(r))
		}
		for _, gone := range []bool{false, true} {
			_, rule := Infer(Evidence{Liveness: observe.Liveness{Alive: !gone, Known: true}, Transcript: sum})
			hit[rule] = true
		}
		for _, h := range []HookEvent{{Name: "StopFailure"}, {Name: "Notification", NotificationType: "permission_prompt"},
			{Name: "PreCompact"}, {Name: "UserPromptSubmit"}, {Name: "Stop"}} {
			h.At = time.UnixMilli(at(60))
			_, rule := Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Transcript: sum, Hook: &h})
			hit[rule] = true
		}
	}
	for _, r := range Rules {
		if !hit[r.Name] {
			t.Errorf("rule %q is never reached", r.Name)
		}
	}
}

func TestResetTime(t *testing.T) {
	saigon, _ := time.LoadLocation("Asia/Saigon")
	at := time.Date(2026, 11, 30, 10, 0, 16, 0, time.UTC) // 17:00 in Saigon
	cases := []struct {
		text string
		want time.Time
	}{
		{"You've hit your session limit · resets 9:50pm (Asia/Saigon)", time.Date(2026, 11, 30, 21, 50, 0, 0, saigon)},
		{"limit reached · resets 3pm (Asia/Saigon)", time.Date(2026, 12, 1, 15, 0, 0, 0, saigon)},
		{"…reset time was 11:20am Asia/Saigon", time.Date(2026, 12, 1, 11, 20, 0, 0, saigon)},
		{"resets 12:30am", time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC)},
		// Named to the minute, rounded down: the error's own minute is this
		// reset (the end of that minute), not tomorrow's.
		{"You've hit your 5-hour limit · resets 10am (UTC)", time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)},
		{"Number of requests has exceeded your rate limit", time.Time{}},
	}
	for _, tc := range cases {
		if got := ResetTime(tc.text, at); !got.Equal(tc.want) {
			t.Errorf("ResetTime(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestMangle(t *testing.T) {
	if got := Mangle("/home/user/work/my_proj.v2"); got != "-home-user-work-my-proj-v2" {
		t.Fatalf("Mangle = %q", got)
	}
}

// A plan's usage limit as 2.1.328 writes it (measured against the fake
// API's unified rate-limit headers): the text names the reset to the minute
// ("10:48pm" for 22:48:16), the record carries the exact second. The exact
// reset wins; the minute alone once read as tomorrow's 22:48.
func TestUsageLimitResetIsTheRecordsExactSecond(t *testing.T) {
	rec := `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiError":"usage_limit_reached","apiErrorStatus":429,` +
		`"apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1796078896,"rateLimitType":"five_hour"}},` +
		`"message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 10:48pm (UTC)"}]},"timestamp":"2026-11-30T22:48:04.724Z"}`
	var sum Summary
	sum.Feed([]byte(recPrompt))
	sum.Feed([]byte(rec))
	st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: true, Known: true}, File: SessionFile{Status: "idle"}, Transcript: sum})
	want := time.Unix(1796078896, 0)
	if st.State != sessions.Errored || st.Failure.Kind != sessions.RateLimit || !st.Failure.RetryAt.Equal(want) {
		t.Fatalf("got %v %v retry at %v (%s); want errored, rate limit, retry at %v", st.State, st.Failure.Kind, st.Failure.RetryAt, st.Evidence, want)
	}
}

// After a plan's usage limit 2.1.328 announces that it continues the turn
// by itself after the reset (measured: a system/informational record, then
// a prompt of its own 30–90 s after the reset). The supervisor's continue
// then waits past that window, so the session gets one prompt, not two;
// once the user cancels the CLI's continue (Esc), it is due at the reset.
func TestUsageLimitAutoContinueDefersTheContinue(t *testing.T) {
	limit := `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,` +
		`"apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1796078896}},` +
		`"message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 10:48pm (UTC)"}]},"timestamp":"2026-11-30T22:48:04.724Z"}`
	notice := `{"type":"system","subtype":"informational","content":"Usage limit reached · continuing automatically at 10:48pm · esc to cancel","isMeta":false,"timestamp":"2026-11-30T22:48:05.000Z","level":"notice"}`
	cancel := `{"type":"system","subtype":"informational","content":"Automatic continue cancelled","timestamp":"2026-11-30T22:48:09.000Z","level":"notice"}`
	other := `{"type":"system","subtype":"informational","content":"Something else","timestamp":"2026-11-30T22:48:06.000Z"}`
	reset := time.Unix(1796078896, 0)
	for _, tc := range []struct {
		name    string
		records []string
		want    time.Time
		says    string
	}{
		{"no notice: at the reset", []string{recPrompt, limit}, reset, ""},
		{"another notice: at the reset", []string{recPrompt, limit, other}, reset, ""},
		{"the CLI continues by itself: after its window", []string{recPrompt, limit, notice}, reset.Add(AutoContinueWindow), "continues by itself"},
		{"cancelled: at the reset again", []string{recPrompt, limit, notice, cancel}, reset, ""},
		{"a notice before any error means nothing", []string{recPrompt, notice, limit}, reset, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, r := range tc.records {
				sum.Feed([]byte(r))
			}
			st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: true, Known: true}, File: SessionFile{Status: "idle"}, Transcript: sum})
			if st.State != sessions.Errored || st.Failure.Kind != sessions.RateLimit || !st.Failure.RetryAt.Equal(tc.want) {
				t.Fatalf("got %v %v retry at %v (%s); want errored, rate limit, retry at %v", st.State, st.Failure.Kind, st.Failure.RetryAt, st.Evidence, tc.want)
			}
			if tc.says != "" && !strings.Contains(st.Evidence, tc.says) {
				t.Errorf("evidence %q does not say %q", st.Evidence, tc.says)
			}
		})
	}
}

// A nudge through the inbox socket (turnOrigin "peer") and the CLI's own
// continue after a usage limit resets (turnOrigin "auto_continuation") are
// written (2.1.328, measured) as meta user records: each is a new turn, so
// the app gives it a new generation whether or not it saw the session file
// say busy. A meta record with no origin is the CLI's own note.
func TestInboxMessageCountsAsATurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  string
		want int
	}{
		{"an inbox message", recPeer, 2},
		{"the CLI's continue after a usage limit", recAutoContinue, 2},
		{"a meta note", recMeta, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, r := range []string{recPrompt, recEnd, recMeta, tc.rec} {
				sum.Feed([]byte(r))
			}
			if sum.Turns != tc.want || sum.InTurn != (tc.want == 2) || sum.FirstPrompt != "fix the build" {
				t.Fatalf("turns %d, in turn %v, first prompt %q; want %d turns", sum.Turns, sum.InTurn, sum.FirstPrompt, tc.want)
			}
		})
	}
}

// A turn that ends with the interrupt marker is reported aborted, so the
// runtime can tell the supervisor's interrupt (sent through the inbox) from
// the user's Esc, which the CLI writes alike; a turn that ended by itself
// or a new prompt after the marker is not (issue 20, item 3).
func TestInterruptMarkerIsReportedAborted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []string
		aborted bool
	}{
		{"interrupted", []string{recPrompt, recToolUse, recInterrupt}, true},
		{"ended", []string{recPrompt, recEnd}, false},
		{"the nudge after the interrupt", []string{recPrompt, recInterrupt, recPeer}, false},
	} {
		var sum Summary
		for _, r := range tc.records {
			sum.Feed([]byte(r))
		}
		st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: true, Known: true}, File: SessionFile{Status: "idle"}, Transcript: sum})
		if st.Aborted != tc.aborted {
			t.Errorf("%s: aborted %v, want %v (%v: %s)", tc.name, st.Aborted, tc.aborted, st.State, st.Evidence)
		}
	}
}
