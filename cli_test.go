package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// runCLI runs one command line in-process and returns exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut}
	code := c.main(args)
	return code, out.String(), errOut.String()
}

func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage: session-supervisor"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"bad flag", []string{"--data-dir", dir, "timeline", "--bogus", "x"}, "flag provided but not defined"},
		{"missing data dir value", []string{"ls", "--data-dir"}, "--data-dir needs a directory"},
		{"settings without subcommand", []string{"--data-dir", dir, "settings"}, "needs a subcommand"},
		{"settings get without key", []string{"--data-dir", dir, "settings", "get"}, "takes 1 argument"},
		{"timeline bad limit", []string{"--data-dir", dir, "timeline", "x", "--limit", "-3"}, "--limit must be"},
		{"version with args", []string{"version", "extra"}, "takes no arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
			if !strings.Contains(stderr, "usage:") {
				t.Errorf("stderr does not show usage: %q", stderr)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != 0 || !strings.Contains(out, "settings") || !strings.Contains(out, "timeline") {
		t.Fatalf("help: code %d, out %q", code, out)
	}
	code, out, _ = runCLI(t, "help", "timeline")
	if code != 0 || !strings.Contains(out, "SESSION [--json] [--limit N]") {
		t.Fatalf("help timeline: code %d, out %q", code, out)
	}
	code, out, _ = runCLI(t, "version")
	if code != 0 || out != "session-supervisor "+version+"\n" {
		t.Fatalf("version: code %d, out %q", code, out)
	}
}

func TestSettingsCommands(t *testing.T) {
	dir := t.TempDir()
	// --data-dir after the command name works too.
	code, out, errOut := runCLI(t, "settings", "set", "supervisor.tick_seconds", "99", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("set: code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "supervisor.tick_seconds = 60") || !strings.Contains(out, "clamped from 99") {
		t.Errorf("set output %q does not say it was clamped to 60", out)
	}
	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "get", "supervisor.tick_seconds")
	if code != 0 || out != "60\n" {
		t.Errorf("get: code %d, out %q, want 60", code, out)
	}

	code, _, errOut = runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.stall_suspect_minutes", "abc")
	if code != exitFail || !strings.Contains(errOut, "supervisor.stall_suspect_minutes") || !strings.Contains(errOut, "abc") {
		t.Errorf("invalid value: code %d, stderr %q; want exit 1 naming key and value", code, errOut)
	}
	code, _, errOut = runCLI(t, "--data-dir", dir, "settings", "get", "no.such.key")
	if code != exitFail || !strings.Contains(errOut, "no.such.key") {
		t.Errorf("unknown key: code %d, stderr %q", code, errOut)
	}

	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.stall_suspect_minutes", "0.1")
	if code != 0 || !strings.Contains(out, "= 0.1") {
		t.Errorf("fraction: code %d, out %q", code, out)
	}

	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "list", "--json")
	if code != 0 {
		t.Fatalf("list --json: code %d", code)
	}
	var vals []settings.Value
	if err := json.Unmarshal([]byte(out), &vals); err != nil {
		t.Fatalf("list --json is not JSON: %v\n%s", err, out)
	}
	got := map[string]settings.Value{}
	for _, v := range vals {
		got[v.Key] = v
	}
	if v := got["supervisor.tick_seconds"]; v.Value != "60" || v.Default != "15" || v.IsDefault {
		t.Errorf("tick in list = %+v", v)
	}
	if v := got["supervisor.enabled"]; v.Value != "true" || !v.IsDefault {
		t.Errorf("enabled in list = %+v", v)
	}
	if len(vals) != len(settingsRegistry.Defs()) {
		t.Errorf("list has %d settings, registry %d", len(vals), len(settingsRegistry.Defs()))
	}

	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "reset", "supervisor.tick_seconds")
	if code != 0 || !strings.Contains(out, "= 15 (default)") {
		t.Errorf("reset: code %d, out %q", code, out)
	}
	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "list")
	if code != 0 || !strings.Contains(out, "supervisor.stall_suspect_minutes") || !strings.Contains(out, "0.1 *") {
		t.Errorf("list: code %d, out %q; want the changed value marked", code, out)
	}
}

func TestSessionSupervisorHomeEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(storage.EnvHome, dir)
	if code, _, errOut := runCLI(t, "settings", "set", "supervisor.nudge_max_attempts", "3"); code != 0 {
		t.Fatalf("set: %d %s", code, errOut)
	}
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set, err := settingsRegistry.On(st).LoadSettings(context.Background())
	if err != nil || set.NudgeMaxAttempts != 3 {
		t.Fatalf("settings in $%s: %+v, %v", storage.EnvHome, set, err)
	}
}

func TestTimelineFromDatabase(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s := sessions.Session{ID: "7f3a9c1e-0000-4000-8000-000000000001", Name: "refactor", Agent: "claude", State: sessions.Suspect, CreatedAt: t0, UpdatedAt: t0}
	rows := []storage.TimelineEvent{
		{SessionID: s.ID, Time: t0, Kind: "state_changed", TurnGeneration: 1, Detail: json.RawMessage(`{"message":"turn 1 started","from":"idle","to":"working"}`)},
		{SessionID: s.ID, Time: t0.Add(12 * time.Minute), Kind: "marked_suspect", TurnGeneration: 1, Detail: json.RawMessage(`{"message":"12 min silent, Bash open"}`)},
	}
	if err := st.SaveSessionWithEvents(ctx, s, rows); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errOut := runCLI(t, "--data-dir", dir, "timeline", "7f3a")
	if code != 0 {
		t.Fatalf("timeline: %d %s", code, errOut)
	}
	first := strings.Index(out, "state changed")
	second := strings.Index(out, "marked suspect")
	if first < 0 || second < first {
		t.Errorf("timeline not oldest-first readable:\n%s", out)
	}
	if !strings.Contains(out, "12 min silent, Bash open") || !strings.Contains(out, "Idle → Working: turn 1 started") {
		t.Errorf("timeline lacks the details:\n%s", out)
	}

	code, out, _ = runCLI(t, "--data-dir", dir, "timeline", s.ID, "--json", "--limit", "1")
	if code != 0 {
		t.Fatalf("timeline --json: %d", code)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0]["kind"] != "marked_suspect" || got[0]["turn_generation"] != float64(1) {
		t.Fatalf("timeline --json --limit 1 = %v", got)
	}
	// Every key the README's JSON contract promises.
	for _, key := range []string{"id", "session_id", "time", "kind", "turn_generation", "detail"} {
		if _, ok := got[0][key]; !ok {
			t.Errorf("timeline row lacks %q", key)
		}
	}
	if id, _ := got[0]["id"].(float64); id <= 0 || got[0]["session_id"] != s.ID {
		t.Errorf("timeline row id %v session_id %v; want the stored row's id and %s", got[0]["id"], got[0]["session_id"], s.ID)
	}

	code, _, errOut = runCLI(t, "--data-dir", dir, "timeline", "nope")
	if code != exitFail || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown session: %d %q", code, errOut)
	}

	// Forgotten with its timeline kept (issue 20, item 11): still readable
	// by the full id.
	st, err = storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(ctx, s.ID, storage.KeepTimeline); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errOut = runCLI(t, "--data-dir", dir, "timeline", s.ID)
	if code != 0 || !strings.Contains(out, "12 min silent, Bash open") {
		t.Errorf("timeline of a forgotten session: %d %q\n%s", code, errOut, out)
	}
}

func TestAppCommandsNeedTheApp(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"ls"}, {"show", "x"}, {"send", "x", "hi"}, {"ack", "x"}, {"resume", "x"}} {
		code, _, errOut := runCLI(t, append([]string{"--data-dir", dir}, args...)...)
		if code != exitFail || !strings.Contains(errOut, "not running") {
			t.Errorf("%v without the app: code %d, stderr %q; want exit 1 saying it is not running", args, code, errOut)
		}
	}
}

func TestResumeUsage(t *testing.T) {
	for _, args := range [][]string{{"resume"}, {"resume", "a", "b"}} {
		code, _, errOut := runCLI(t, append([]string{"--data-dir", t.TempDir()}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "resume takes one session id") {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
	}
}

// `ls` lists in the tray's and the window's order and words: the most
// urgent first, then the newest state change — the API's order (needing
// attention, then newest created) is not kept.
func TestLsOrderAndStateText(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	mk := func(id, name string, st sessions.State, changed, created time.Duration) sessions.Session {
		return sessions.Session{ID: id, Name: name, Agent: "claude", State: st, Evidence: "ev " + name,
			StateChangedAt: now.Add(-changed), CreatedAt: now.Add(-created)}
	}
	idle := mk("11111111-a", "newest-idle", sessions.Idle, time.Minute, time.Minute)
	work := mk("22222222-b", "working", sessions.Working, 2*time.Minute, time.Hour)
	perm := mk("33333333-c", "asks", sessions.WaitingOnUser, 3*time.Minute, 2*time.Hour)
	perm.WaitReason = sessions.WaitPermission
	esc := mk("44444444-d", "stuck", sessions.Interrupted, 4*time.Minute, 3*time.Hour)
	esc.NeedsAttention = true
	var out bytes.Buffer
	printSessions(&cli{stdout: &out}, []sessions.Session{esc, idle, work, perm}, now)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		got = append(got, strings.Join(strings.Fields(line)[1:2], ""))
	}
	if want := "stuck asks working newest-idle"; strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q\n%s", strings.Join(got, " "), want, out.String())
	}
	for _, want := range []string{"Needs attention (Interrupted)", "Waiting on user (permission)", "4m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ls lacks %q:\n%s", want, out.String())
		}
	}
}

func TestShowWindowAtStart(t *testing.T) {
	for _, tc := range []struct {
		launch packaging.Launch
		tray   bool
		want   bool
	}{
		{packaging.LaunchTerminal, false, true},
		{packaging.LaunchTerminal, true, false},
		{packaging.LaunchSystemd, false, false},
		{packaging.LaunchLaunchd, false, false},
		{packaging.LaunchWindowsService, false, false},
	} {
		if got := showWindowAtStart(tc.launch, tc.tray); got != tc.want {
			t.Errorf("launch %s, --tray %t: show %t, want %t", tc.launch, tc.tray, got, tc.want)
		}
	}
}

// A session's name, evidence and timeline detail can carry words from an
// agent; every human-readable printout drops the escape sequences and
// control characters in them (a reply could otherwise retitle, recolour or
// rewrite the user's terminal), while --json keeps the bytes (escaped by the
// encoder) and the tables stay aligned.
func TestHumanOutputDropsEscapeSequences(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	hostile := sessions.Session{ID: "55555555-e", Name: "x\x1b]0;pwned\x07y", Agent: "claude", State: sessions.Working,
		Evidence: "model said \x1b[2J\x1b[31mred\u202e", StateChangedAt: now, CreatedAt: now}
	plain := sessions.Session{ID: "66666666-f", Name: "plain", Agent: "claude", State: sessions.Idle, Evidence: "ok", StateChangedAt: now, CreatedAt: now}
	detail := []byte(`{"message":"tool said \u001b[1mbold\u001b[0m"}`)
	prints := []struct {
		name  string
		print func(c *cli)
		want  []string
	}{
		{"ls", func(c *cli) { printSessions(c, []sessions.Session{hostile, plain}, now) }, []string{"xy", "model said red"}},
		{"show", func(c *cli) { printSession(c, hostile, time.Now()) }, []string{"xy", "model said red"}},
		{"watch", func(c *cli) {
			names := map[string]string{}
			printMessage(c, localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{hostile}}, names)
			printMessage(c, localapi.Message{Type: localapi.MsgSession, Session: &hostile}, names)
			printMessage(c, localapi.Message{Type: localapi.MsgTimeline, Event: &localapi.TimelineRow{SessionID: hostile.ID, Kind: "tool", Detail: detail}}, names)
			printMessage(c, localapi.Message{Type: localapi.MsgEscalation, Session: &hostile}, names)
		}, []string{"xy", "model said red", "tool said bold"}},
		{"timeline", func(c *cli) {
			printTimeline(c, hostile.Name, []storage.TimelineEvent{{SessionID: hostile.ID, Time: now, Kind: "tool", Detail: detail}})
		}, []string{"tool said bold"}},
	}
	for _, p := range prints {
		t.Run(p.name, func(t *testing.T) {
			var out bytes.Buffer
			p.print(&cli{stdout: &out})
			got := out.String()
			if strings.ContainsAny(got, "\x1b\x07\u202e") {
				t.Errorf("%s printed a control character or escape sequence: %q", p.name, got)
			}
			for _, w := range p.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s lacks %q: %q", p.name, w, got)
				}
			}
		})
	}
	// The ls columns are measured on the cleaned text: the evidence column
	// starts at the same offset on both rows as a terminal shows them
	// (escape sequences take no width there).
	var out bytes.Buffer
	printSessions(&cli{stdout: &out}, []sessions.Session{hostile, plain}, now)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if a, b := strings.Index(textsafe.Clean(lines[1]), "model said"), strings.Index(textsafe.Clean(lines[2]), "ok"); a != b {
		t.Errorf("columns misaligned (%d vs %d):\n%s", a, b, out.String())
	}
	// JSON keeps the text, escaped.
	out.Reset()
	if err := writeJSON(&cli{stdout: &out}, hostile); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `x\u001b]0;pwned\u0007y`) {
		t.Errorf("--json changed the name: %s", out.String())
	}
}

// `new` and `send` take their prompt as words, from standard input ("-")
// or from --file, so a prompt need not stand in the process list.
func TestPromptSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(file, []byte("fix the build\nthen run the tests\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.txt")
	if err := os.WriteFile(huge, bytes.Repeat([]byte("x"), maxPromptBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		stdin   io.Reader
		file    string
		words   []string
		want    string
		wantErr string
		usage   bool
	}{
		{name: "words", words: []string{"fix", "the", "build"}, want: "fix the build"},
		{name: "a lone dash word is stdin", stdin: strings.NewReader("from a pipe\n"), words: []string{"-"}, want: "from a pipe"},
		{name: "stdin keeps inner lines", stdin: strings.NewReader("one\ntwo\r\n"), words: []string{"-"}, want: "one\ntwo"},
		{name: "a dash among words is a word", words: []string{"a", "-", "b"}, want: "a - b"},
		{name: "file", file: file, want: "fix the build\nthen run the tests"},
		{name: "no prompt", wantErr: "needs a prompt", usage: true},
		{name: "words and file", file: file, words: []string{"x"}, wantErr: "not both", usage: true},
		{name: "empty stdin", stdin: strings.NewReader(""), words: []string{"-"}, wantErr: "is empty", usage: true},
		{name: "no stdin", words: []string{"-"}, wantErr: "no standard input", usage: true},
		{name: "empty file", file: empty, wantErr: "is empty", usage: true},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: "reading the prompt: open"},
		{name: "oversized file", file: huge, wantErr: "is over 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cli{stdin: tt.stdin}
			got, err := c.prompt("new", tt.file, tt.words)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("prompt = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			var u usageError
			if errors.As(err, &u) != tt.usage {
				t.Errorf("usage error: %v, want %v (%v)", !tt.usage, tt.usage, err)
			}
		})
	}
	// Through the command line: a usage mistake exits 2 and names the fix.
	code, _, stderr := runCLI(t, "--data-dir", dir, "send", "abc", "--file", file, "extra")
	if code != exitUsage || !strings.Contains(stderr, "not both") {
		t.Errorf("send with words and --file: exit %d, stderr %q", code, stderr)
	}
}

// `show` lists every open permission request with its id, and approve/deny
// take the one to answer (issue 20, item 10): the flags parse, and only the
// missing app stops them.
func TestShowListsOpenRequestsAndAnswersNameOne(t *testing.T) {
	s := sessions.Session{ID: "77777777-a", Name: "perm", Agent: "claude", State: sessions.WaitingOnUser, WaitReason: sessions.WaitPermission,
		Permissions: []sessions.Permission{{RequestID: "req_a", Tool: "Bash"}, {RequestID: "req_b", Tool: "Write"}}}
	s.Permission = &s.Permissions[0]
	var out bytes.Buffer
	printSession(&cli{stdout: &out}, s, time.Now())
	for _, want := range []string{"Bash (approve or deny) request req_a", "Write (approve or deny) request req_b"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"approve", "x", "--request", "req_a"}, {"deny", "x", "--request", "req_b", "--message", "no"}} {
		code, _, errOut := runCLI(t, append([]string{"--data-dir", dir}, args...)...)
		if code != 1 || !strings.Contains(errOut, "not running") {
			t.Errorf("%v: exit %d, %q; want the app's absence, not a usage error", args, code, errOut)
		}
	}
}

// show prices a session's tokens with the data directory's prices: the
// built-in table, or pricing.csv over it; labelled as the equivalent API
// cost, never a charge. A bad override is said and the built-in used.
func TestShowPricesTheTokens(t *testing.T) {
	s := sessions.Session{ID: "77777777-a", Name: "priced", Agent: "claude", State: sessions.Idle,
		Usage: sessions.SessionUsage{Total: sessions.Usage{"claude-sonnet-4-5-20250929": {Input: 1_000_000, Output: 100_000}}}}
	show := func(dir string) (string, string) {
		var out, errOut bytes.Buffer
		printSession(&cli{stdout: &out, stderr: &errOut, dataDir: dir}, s, time.Now())
		return out.String(), errOut.String()
	}
	dir := t.TempDir()
	out, _ := show(dir)
	if !strings.Contains(out, "1000000 in · 100000 out · 0 cache write · 0 cache read") || !strings.Contains(out, "equivalent API cost") {
		t.Fatalf("show:\n%s", out)
	}
	// An override pricing that model at $1 in and $10 out per million.
	override := "# key,input,output,cache_write,cache_read,source,date\nclaude-sonnet-4-5,1,10,1.25,0.1,https://example.com/prices,2026-12-01\n"
	if err := os.WriteFile(filepath.Join(dir, pricing.OverrideFile), []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut := show(dir); !strings.Contains(out, "$2.00 equivalent API cost") || errOut != "" {
		t.Fatalf("with the override:\n%s\n%s", out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, pricing.OverrideFile), []byte("claude-sonnet-4-5,not-a-price\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut := show(dir); !strings.Contains(out, "equivalent API cost") || !strings.Contains(errOut, "pricing override") {
		t.Fatalf("with a bad override:\n%s\n%s", out, errOut)
	}
}

// show names the other session whose process runs the same conversation.
func TestShowNamesTheOtherProcessOfItsConversation(t *testing.T) {
	s := sessions.Session{ID: "77777777-b", Agent: "claude", State: sessions.Idle, SharedWith: "88888888-0000-4000-8000-000000000001"}
	var out bytes.Buffer
	printSession(&cli{stdout: &out}, s, time.Now())
	if !strings.Contains(out.String(), "also run by session 88888888: not resumed or nudged while both run") {
		t.Fatalf("show:\n%s", out.String())
	}
	out.Reset()
	s.SharedWith = ""
	printSession(&cli{stdout: &out}, s, time.Now())
	if strings.Contains(out.String(), "also run by") {
		t.Fatalf("show names a share there is not:\n%s", out.String())
	}
}

// show says how long the turn has left (the band and the signals it used,
// each alone), the plan's windows, and a window the session will hit;
// `ls --json` and `show --json` carry the same as fields beside the
// session's own, with the equivalent API cost.
func TestShowTimeLeftAndWindows(t *testing.T) {
	now := time.Now()
	reset := now.Add(3 * time.Hour)
	s := sessions.Session{ID: "77777777-c", Agent: "claude", State: sessions.Working, InTurn: true,
		TurnStarted: now.Add(-12 * time.Minute), Todos: sessions.TodoProgress{Total: 7, Completed: 3}, TodosSince: now.Add(-12 * time.Minute),
		PastTurns:   []sessions.TurnRecord{{Duration: 20 * time.Minute, Tools: 30}, {Duration: 40 * time.Minute, Tools: 50}, {Duration: 30 * time.Minute, Tools: 40}},
		RateWindows: []sessions.RateWindow{{Kind: "five_hour", Used: 90, FirstUsed: 50, ResetsAt: reset, At: now, FirstAt: now.Add(-time.Hour)}},
		Usage:       sessions.SessionUsage{Total: sessions.Usage{"claude-sonnet-4-5-20250929": {Input: 1_000_000}}}}
	var out bytes.Buffer
	c := &cli{stdout: &out, stderr: &bytes.Buffer{}, dataDir: t.TempDir()}
	printSession(c, s, now)
	for _, want := range []string{"time left", "(todos 3/7, past turns)", "each signal", "todos ", "past turns ",
		"plan window", "five_hour 90% used, resets", "plan limit", "will hit the five_hour window at about"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := writeJSON(c, c.sessionsJSON([]sessions.Session{s}, now)); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID   string `json:"id"`
		Cost struct {
			Label string `json:"label"`
			Total int64  `json:"total_micro_usd"`
		} `json:"equivalent_api_cost"`
		TimeLeft struct {
			Low     int64    `json:"low_ns"`
			High    int64    `json:"high_ns"`
			Signals []string `json:"signals"`
		} `json:"time_left"`
		Warning string `json:"window_warning"`
		Windows []struct {
			Kind string  `json:"kind"`
			Used float64 `json:"used_percent"`
		} `json:"rate_windows"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	g := got[0]
	if g.ID != s.ID || g.Cost.Label != "equivalent API cost" || g.Cost.Total != 3_000_000 ||
		!(0 < g.TimeLeft.Low && g.TimeLeft.Low < g.TimeLeft.High) || !slices.Equal(g.TimeLeft.Signals, []string{"todos", "past turns"}) ||
		g.Warning == "" || len(g.Windows) != 1 || g.Windows[0].Used != 90 {
		t.Fatalf("json: %+v\n%s", g, out.String())
	}
	if list := c.sessionsJSON(nil, now); list == nil || len(list) != 0 {
		t.Fatalf("an empty list is %#v, want []", list)
	}
}
