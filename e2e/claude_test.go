//go:build linux

package e2e

// End-to-end tests of the whole app against the real Claude Code CLI (issues
// 3 and 4): the app binary runs headless as a child process, launches the
// real CLI, which talks only to the fake Anthropic API (fakeapi) on
// loopback, and every step is driven and observed through the app's own
// command line (new, ls, show, send, approve, ack, timeline, watch), exactly
// as a user or a script would.
//
// Each test has its own HOME, data directory, fake API and refusing proxy,
// so nothing leaves the host and no state is shared. Waits poll `show
// --json` against a deadline; nothing is asserted after a fixed sleep. At
// cleanup every process the test started (the app, every claude it
// launched and the tools those ran, found by the test's unique HOME) is
// killed, whatever the outcome. Linux only: finding those processes, and
// the tools a killed agent leaves behind, reads /proc.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// ce2eWait bounds every wait for a state; reaching it fails the test.
const ce2eWait = 90 * time.Second

// ce2ePoll is the pause between two polls of `show --json`.
const ce2ePoll = 250 * time.Millisecond

// ce2eOptions configure one test's app.
type ce2eOptions struct {
	// settings are set, in order, before the app starts (key, value pairs).
	settings []string
	// env adds "KEY=VALUE" entries to the app's environment (and so to the
	// CLI's, which inherits it); a later entry overrides an earlier one.
	env []string
	// drop removes these variables from the hermetic environment.
	drop []string
}

// ce2eHarness is one test's world: a fake API, a refusing proxy, a HOME, a
// data directory, a working directory and the app running on them.
type ce2eHarness struct {
	t      *testing.T
	app    string
	claude string
	api    *fakeapi.Server
	home   string
	data   string
	work   string
	env    []string

	run     *ce2eAppRun
	watches []*ce2eWatch
	// orphans are processes a test left behind on purpose (what a killed
	// agent's tools become); a graceful quit is not blamed for them.
	orphans []int
}

// ce2eAppRun is one run of `session-supervisor run --headless`.
type ce2eAppRun struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// claudeE2EStart sets up a test's world and starts the app on it.
func claudeE2EStart(t *testing.T, o ce2eOptions) *ce2eHarness {
	t.Helper()
	claudeBin := fakeapi.ClaudeBinary(t)
	appBin, _ := testBinaries(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	proxyURL, closeProxy, err := fakeapi.StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeProxy)
	// The socket lives in the data directory and unix socket paths are
	// limited to ~108 bytes: keep it short rather than under t.TempDir.
	data, err := os.MkdirTemp("", "sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	h := &ce2eHarness{
		t: t, app: appBin, claude: claudeBin, api: api,
		home: t.TempDir(), data: data, work: t.TempDir(),
	}
	env := fakeapi.HermeticEnv(h.home, api.URL(), proxyURL)
	env = slices.DeleteFunc(env, func(kv string) bool {
		for _, k := range o.drop {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	})
	h.env = append(env, o.env...)
	// Registered last, so it runs first: every process this test started
	// is gone before the fake API and the proxy close.
	t.Cleanup(h.cleanup)

	h.mustCLI("settings", "set", "agents.claude.command", claudeBin)
	if len(o.settings)%2 != 0 {
		t.Fatalf("settings come in key, value pairs: %q", o.settings)
	}
	for i := 0; i < len(o.settings); i += 2 {
		h.mustCLI("settings", "set", o.settings[i], o.settings[i+1])
	}
	h.startApp()
	return h
}

// startApp starts the app and waits until it answers on its socket.
func (h *ce2eHarness) startApp() {
	h.t.Helper()
	if h.run != nil {
		select {
		case <-h.run.done:
		default:
			h.t.Fatal("the app is already running")
		}
	}
	cmd := exec.Command(h.app, "--data-dir", h.data, "run", "--headless")
	cmd.Env = h.env
	cmd.Dir = h.work
	run := &ce2eAppRun{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = run.stderr
	cmd.Stderr = run.stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting the app: %v", err)
	}
	go func() { run.err = cmd.Wait(); close(run.done) }()
	h.run = run
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, code := h.cli("ls", "--json")
		if code == 0 {
			return
		}
		select {
		case <-run.done:
			h.t.Fatalf("the app exited before answering (%v):\n%s", run.err, run.stderr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the app did not answer on its socket within 30 s:\n%s", run.stderr)
		}
	}
}

// stopApp quits the app with SIGINT, as Ctrl-C would, and requires exit 0.
// A graceful quit lets every turn finish, so afterwards no process of this
// test may be left running.
func (h *ce2eHarness) stopApp() {
	h.t.Helper()
	run := h.run
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		h.t.Fatalf("interrupting the app: %v", err)
	}
	select {
	case <-run.done:
	case <-time.After(60 * time.Second):
		h.t.Fatalf("the app did not quit within 60 s of SIGINT:\n%s", run.stderr)
	}
	if run.err != nil {
		h.t.Errorf("the app exited with %v after SIGINT, want exit 0:\n%s", run.err, run.stderr)
	}
	h.stopWatches()
	left := slices.DeleteFunc(claudeE2EProcsWithHome(h.home), func(pid int) bool { return slices.Contains(h.orphans, pid) })
	if len(left) > 0 {
		h.t.Errorf("processes left running after a graceful quit: %s", claudeE2EDescribe(left))
	}
}

// killApp kills the app with SIGKILL (pid only: the agents it launched are
// in their own process groups and are left orphaned, as in a crash).
func (h *ce2eHarness) killApp() {
	h.t.Helper()
	if err := h.run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		h.t.Fatalf("killing the app: %v", err)
	}
	<-h.run.done
}

// cleanup kills whatever this test started and still runs, and logs the
// app's output when the test failed.
func (h *ce2eHarness) cleanup() {
	h.stopWatches()
	if h.run != nil {
		select {
		case <-h.run.done:
		default:
			_ = h.run.cmd.Process.Signal(syscall.SIGKILL)
			<-h.run.done
		}
		if h.t.Failed() {
			h.t.Logf("app output:\n%s", h.run.stderr)
		}
	}
	claudeE2EKillAll(h.home)
}

// cli runs one app command line against the data directory.
func (h *ce2eHarness) cli(args ...string) (stdout, stderr string, code int) {
	h.t.Helper()
	return runCommand(h.t, h.app, h.data, h.work, h.env, 60*time.Second, args...)
}

// mustCLI runs a command line that must succeed and returns its stdout.
func (h *ce2eHarness) mustCLI(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.cli(args...)
	if code != 0 {
		h.t.Fatalf("session-supervisor %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// newSession launches a managed Claude session in the work directory and
// returns its id, which `new` prints alone on stdout.
func (h *ce2eHarness) newSession(prompt string, flags ...string) string {
	h.t.Helper()
	args := append([]string{"new", "--agent", "claude", "--cwd", h.work}, flags...)
	out := h.mustCLI(append(args, prompt)...)
	id := strings.TrimSpace(out)
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", out)
	}
	return id
}

// show returns the session as `show ID --json` prints it.
func (h *ce2eHarness) show(id string) sessions.Session {
	h.t.Helper()
	out := h.mustCLI("show", id, "--json")
	var s sessions.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		h.t.Fatalf("show --json is not a session: %v\n%s", err, out)
	}
	return s
}

// ls returns `ls --json`.
func (h *ce2eHarness) ls() []sessions.Session {
	h.t.Helper()
	out := h.mustCLI("ls", "--json")
	var list []sessions.Session
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		h.t.Fatalf("ls --json is not a session list: %v\n%s", err, out)
	}
	return list
}

// waitFor polls `show ID --json` until cond holds and returns the session.
// On timeout it fails the test with the session, its timeline and the app's
// output.
func (h *ce2eHarness) waitFor(id, what string, cond func(sessions.Session) bool) sessions.Session {
	h.t.Helper()
	return h.waitForWithin(id, what, ce2eWait, cond)
}

func (h *ce2eHarness) waitForWithin(id, what string, limit time.Duration, cond func(sessions.Session) bool) sessions.Session {
	h.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := h.show(id)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(s, "", "  ")
			h.t.Fatalf("waited %s for %s; the session is:\n%s\ntimeline: %s", limit, what, b, strings.Join(h.labels(id, nil), ", "))
		}
		select {
		case <-h.run.done:
			h.t.Fatalf("the app exited (%v) while waiting for %s:\n%s", h.run.err, what, h.run.stderr)
		case <-time.After(ce2ePoll):
		}
	}
}

// ce2eIn is a wait condition: the session is in state st (and, for
// waiting_on_user, waits for reason).
func ce2eIn(st sessions.State, reason ...sessions.WaitReason) func(sessions.Session) bool {
	return func(s sessions.Session) bool {
		if s.State != st {
			return false
		}
		return len(reason) == 0 || s.WaitReason == reason[0]
	}
}

// ce2eRow is one row of `timeline ID --json`.
type ce2eRow struct {
	Time           time.Time       `json:"time"`
	Kind           string          `json:"kind"`
	TurnGeneration int64           `json:"turn_generation"`
	Detail         json.RawMessage `json:"detail"`
}

func (r ce2eRow) detail() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Detail, &m)
	return m
}

func (r ce2eRow) message() string {
	s, _ := r.detail()["message"].(string)
	return s
}

// label names a row for sequence assertions: the kind, and for a
// state_changed row the state it changed to ("state_changed:errored"), with
// what a waiting session waits for ("state_changed:waiting_on_user(review)").
func (r ce2eRow) label() string {
	if r.Kind != core.TimelineStateChanged {
		return r.Kind
	}
	d := r.detail()
	to, _ := d["to"].(string)
	if to == "" {
		// Reconcile's own state changes carry only a message,
		// "From → To: evidence".
		if _, after, ok := strings.Cut(r.message(), " → "); ok {
			label, _, _ := strings.Cut(after, ":")
			for _, st := range sessions.AllStates {
				if st.Label() == label {
					to = st.String()
				}
			}
		}
	}
	l := "state_changed:" + to
	if reason, _ := d["reason"].(string); reason != "" {
		l += "(" + reason + ")"
	}
	return l
}

// timeline returns `timeline ID --json`, oldest first (it prints newest
// first). It reads the database directly, as it does when the app is not
// running.
func (h *ce2eHarness) timeline(id string) []ce2eRow {
	h.t.Helper()
	out := h.mustCLI("timeline", id, "--json")
	var rows []ce2eRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		h.t.Fatalf("timeline --json is not a list of rows: %v\n%s", err, out)
	}
	slices.Reverse(rows)
	return rows
}

// ce2eSupervisorKinds are the timeline kinds the supervisor itself writes.
var ce2eSupervisorKinds = []string{
	"marked_suspect", "marked_interrupted", "stall_interrupt", "compaction_timeout",
	"overflow_redrive", "rate_limit_drain", "auth_resume", "nudge_sent", "escalated",
	"boot_reconciled", "uncertain_action", "transient_retry",
}

// labels returns the labels of id's timeline rows whose kind is a
// supervisor kind, a state change, or one of extra; extra nil means every
// row.
func (h *ce2eHarness) labels(id string, extra []string) []string {
	h.t.Helper()
	var out []string
	for _, r := range h.timeline(id) {
		if extra == nil || r.Kind == core.TimelineStateChanged ||
			slices.Contains(ce2eSupervisorKinds, r.Kind) || slices.Contains(extra, r.Kind) {
			out = append(out, r.label())
		}
	}
	return out
}

// expectTimeline asserts the exact sequence of id's timeline labels (see
// labels) and logs the full timeline when it differs.
func (h *ce2eHarness) expectTimeline(id string, extra []string, want ...string) []ce2eRow {
	h.t.Helper()
	rows := h.timeline(id)
	got := h.labels(id, extra)
	if !slices.Equal(got, want) {
		h.t.Errorf("timeline kinds:\n got  %s\n want %s", strings.Join(got, ", "), strings.Join(want, ", "))
		for _, r := range rows {
			h.t.Logf("  %s  turn %d  %-18s %s", r.Time.Format("15:04:05.000"), r.TurnGeneration, r.label(), r.Detail)
		}
	} else {
		h.t.Logf("timeline: %s", strings.Join(got, ", "))
		if testing.Verbose() {
			for _, r := range rows {
				h.t.Logf("  %s  turn %d  %-18s %s", r.Time.Format("15:04:05.000"), r.TurnGeneration, r.label(), r.message())
			}
		}
	}
	return rows
}

// findRow returns the first row with the label, or fails the test.
func (h *ce2eHarness) findRow(rows []ce2eRow, label string) ce2eRow {
	h.t.Helper()
	for _, r := range rows {
		if r.label() == label {
			return r
		}
	}
	h.t.Fatalf("no %s row in the timeline", label)
	return ce2eRow{}
}

// ce2eWatch is a running `watch --json`: every message the app streamed.
type ce2eWatch struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	msgs []localapi.Message
}

// watch starts `watch --json` and collects what it prints until the test
// stops it (stopApp or cleanup).
func (h *ce2eHarness) watch() *ce2eWatch {
	h.t.Helper()
	cmd := exec.Command(h.app, "--data-dir", h.data, "watch", "--json")
	cmd.Env = h.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting watch: %v", err)
	}
	w := &ce2eWatch{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var m localapi.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				w.mu.Lock()
				w.msgs = append(w.msgs, m)
				w.mu.Unlock()
			}
		}
	}()
	h.watches = append(h.watches, w)
	// The stream starts with a snapshot: once it is in, nothing later is missed.
	deadline := time.Now().Add(30 * time.Second)
	for len(w.messages()) == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("watch --json printed no snapshot within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

func (w *ce2eWatch) messages() []localapi.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// sessionStates returns every state update of session id the stream carried.
func (w *ce2eWatch) sessionStates(id string) []sessions.Session {
	var out []sessions.Session
	for _, m := range w.messages() {
		if m.Type == localapi.MsgSession && m.Session != nil && m.Session.ID == id {
			out = append(out, *m.Session)
		}
	}
	return out
}

// waitMessage waits until the stream carried a message for which cond
// holds: what the app has committed reaches a subscriber a moment later.
func (w *ce2eWatch) waitMessage(t *testing.T, what string, cond func(localapi.Message) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(w.messages(), cond) {
		if time.Now().After(deadline) {
			t.Fatalf("watch --json never delivered %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ce2eSessionMsg matches a session update of id for which cond holds.
func ce2eSessionMsg(id string, cond func(sessions.Session) bool) func(localapi.Message) bool {
	return func(m localapi.Message) bool {
		return m.Type == localapi.MsgSession && m.Session != nil && m.Session.ID == id && cond(*m.Session)
	}
}

func (h *ce2eHarness) stopWatches() {
	for _, w := range h.watches {
		_ = w.cmd.Process.Signal(os.Interrupt)
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		_ = w.cmd.Wait()
	}
	h.watches = nil
}

// claudeE2EProcsWithHome lists the processes whose environment has
// HOME=home: everything a test started (the app, each claude, the tools
// they ran), told apart by the test's unique HOME.
func claudeE2EProcsWithHome(home string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte("\x00HOME=" + home + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || len(env) == 0 {
			continue // gone, or a zombie
		}
		env = append(append([]byte{0}, env...), 0)
		if bytes.Contains(env, needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// claudeE2EDescribe renders pids with their command lines.
func claudeE2EDescribe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if len(cmdline) > 160 {
			cmdline = cmdline[:160] + "…"
		}
		parts = append(parts, fmt.Sprintf("%d [%s]", pid, cmdline))
	}
	return strings.Join(parts, "; ")
}

// claudeE2EKillAll kills every process started with HOME=home, and the
// process group of each that leads one, then waits until they are gone.
func claudeE2EKillAll(home string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := claudeE2EProcsWithHome(home)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claudeE2EAlive reports whether pid runs (a zombie counts as gone).
func claudeE2EAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// messagesRequests returns the fake API's /v1/messages requests of one scenario.
func (h *ce2eHarness) messagesRequests(scenario string) []fakeapi.Entry {
	var out []fakeapi.Entry
	for _, e := range h.api.Log() {
		if e.Path == "/v1/messages" && e.Scenario == scenario {
			out = append(out, e)
		}
	}
	return out
}

func ce2eStatuses(es []fakeapi.Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Status
	}
	return out
}

// checkIdentity asserts what every managed Claude session must show once
// its CLI started.
func (h *ce2eHarness) checkIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != "claude" || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want claude, managed, %q", s.Agent, s.Source, s.Cwd, h.work)
	}
	if s.AgentSessionID == "" {
		h.t.Error("agent_session_id is empty: the CLI's system/init was not decoded")
	}
	if s.PID <= 0 {
		h.t.Errorf("pid %d", s.PID)
	}
	if s.Evidence == "" {
		h.t.Error("a state without evidence")
	}
}

// --- issue 3: managed sessions, one CLI behaviour each ---

// TestClaudeE2EPlainReply: a plain reply ends the turn in
// waiting_on_user(review); `ack` makes it idle.
func TestClaudeE2EPlainReply(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	id := h.newSession("[[scenario:text]] hi", "--name", "plain")
	s := h.waitFor(id, "the reply to be waiting for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.checkIdentity(s)
	if s.Name != "plain" || s.TurnGeneration != 1 || s.InTurn || !s.Failure.IsZero() || s.NeedsAttention || !s.ProcessAlive {
		t.Errorf("after the reply: name %q turn %d in_turn %v failure %+v needs_attention %v alive %v",
			s.Name, s.TurnGeneration, s.InTurn, s.Failure, s.NeedsAttention, s.ProcessAlive)
	}

	// The documented --json contract: these keys are always present.
	var raw map[string]any
	if err := json.Unmarshal([]byte(h.mustCLI("show", id, "--json")), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "agent", "agent_session_id", "source", "cwd", "pid", "state",
		"evidence", "wait_reason", "failure", "needs_attention", "turn_generation", "updated_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("show --json has no %q", k)
		}
	}
	if raw["state"] != "waiting_on_user" || raw["wait_reason"] != "review" {
		t.Errorf("state %v wait_reason %v, want waiting_on_user review", raw["state"], raw["wait_reason"])
	}
	if list := h.ls(); len(list) != 1 || list[0].ID != id || list[0].State != sessions.WaitingOnUser {
		t.Errorf("ls --json = %+v, want the one session waiting on the user", list)
	}

	h.mustCLI("ack", id)
	s = h.waitFor(id, "ack to make it idle", ce2eIn(sessions.Idle))
	if !s.ProcessAlive {
		t.Error("ack ended the agent process; it should stay for the next prompt")
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "acknowledged"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(review)", "acknowledged", "state_changed:idle")
	if got := ce2eStatuses(h.messagesRequests("text")); !slices.Equal(got, []int{200}) {
		t.Errorf("the fake API answered %v, want one 200", got)
	}
	h.stopApp()
}

// TestClaudeE2EBashTool: a Bash tool call is visible while it runs (an open
// tool, evidence "running Bash") and the turn completes with its result.
func TestClaudeE2EBashTool(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	w := h.watch()
	id := h.newSession("[[scenario:tool]] run it")
	h.waitFor(id, "the tool turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))

	var running, finished bool
	for _, s := range w.sessionStates(id) {
		if s.State == sessions.Working && s.Evidence == "running Bash" && len(s.OpenTools) == 1 {
			for _, c := range s.OpenTools {
				running = running || c.Name == "Bash"
			}
		}
		if running && s.Evidence == "Bash finished" && len(s.OpenTools) == 0 {
			finished = true
		}
	}
	if !running || !finished {
		t.Errorf("the stream never showed Bash open and then finished (running %v, finished %v)", running, finished)
		for _, s := range w.sessionStates(id) {
			t.Logf("  %s: %s (open %d)", s.State, s.Evidence, len(s.OpenTools))
		}
	}
	// The tool really ran: the CLI sent its output back to the model.
	reqs := h.messagesRequests("tool")
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the fake, want 2 (tool call, then its result)", len(reqs))
	}
	var result string
	for _, b := range reqs[1].Request.LastUserMessage().Blocks() {
		if b.Type == "tool_result" {
			result = string(b.Content)
		}
	}
	if !strings.Contains(result, "hi") {
		t.Errorf("tool_result %s, want the command's output hi", result)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestClaudeE2ERateLimitRetried: two 429s the CLI retries itself put the
// session in recovering with the CLI's countdown, then the answer arrives.
func TestClaudeE2ERateLimitRetried(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	w := h.watch()
	id := h.newSession("[[scenario:429then_ok]] hi")
	s := h.waitFor(id, "the retried turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))
	if !s.Failure.IsZero() {
		t.Errorf("failure %+v after the answer, want none", s.Failure)
	}
	var recovering *sessions.Session
	for _, s := range w.sessionStates(id) {
		if s.State == sessions.Recovering {
			recovering = &s
			break
		}
	}
	if recovering == nil {
		t.Error("the stream never showed the session recovering")
	} else if recovering.Failure.Kind != sessions.RateLimit || recovering.Failure.RetryAt.IsZero() || !recovering.InTurn {
		t.Errorf("while the CLI retried: failure %+v in_turn %v, want rate_limit with a retry time, turn in flight",
			recovering.Failure, recovering.InTurn)
	}
	if got := ce2eStatuses(h.messagesRequests("429then_ok")); !slices.Equal(got, []int{429, 429, 200}) {
		t.Errorf("the fake API answered %v, want 429, 429, 200", got)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:recovering",
		"state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestClaudeE2EPromptTooLong: a prompt-too-long 400 is errored
// context_overflow; with automatic recovery off it is escalated at once.
func TestClaudeE2EPromptTooLong(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: []string{
		"supervisor.auto_recover_enabled", "false", "supervisor.tick_seconds", "5"}})
	id := h.newSession("[[scenario:too_long]] hi")
	s := h.waitFor(id, "the overflow to be escalated", func(s sessions.Session) bool {
		return s.State == sessions.Errored && s.NeedsAttention
	})
	if s.Failure.Kind != sessions.ContextOverflow || s.InTurn {
		t.Errorf("failure %+v in_turn %v, want context_overflow and no turn in flight", s.Failure, s.InTurn)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestClaudeE2EAuthFailure: a 401 (retried by the CLI, then given up) is
// errored auth; with automatic recovery off it is escalated at once.
func TestClaudeE2EAuthFailure(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: []string{
		"supervisor.auto_recover_enabled", "false", "supervisor.tick_seconds", "5"}})
	id := h.newSession("[[scenario:401]] hi")
	s := h.waitFor(id, "the auth failure to be escalated", func(s sessions.Session) bool {
		return s.State == sessions.Errored && s.NeedsAttention
	})
	if s.Failure.Kind != sessions.Auth {
		t.Errorf("failure %+v, want auth", s.Failure)
	}
	if got := ce2eStatuses(h.messagesRequests("401")); len(got) != 3 || got[0] != 401 {
		t.Errorf("the fake API answered %v, want three 401s (CLAUDE_CODE_MAX_RETRIES=2)", got)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:recovering",
		"state_changed:errored", "escalated")
	h.stopApp()
}

// TestClaudeE2EPermissionApproved: a Bash command that writes asks for
// permission (default mode); `approve` runs it and the turn completes.
func TestClaudeE2EPermissionApproved(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	id := h.newSession("[[scenario:write]] make it", "--permission-mode", "default")
	s := h.waitFor(id, "the permission request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	if s.Permission == nil || s.Permission.Tool != "Bash" || s.Permission.RequestID == "" || !s.InTurn {
		t.Fatalf("permission %+v in_turn %v, want a pending Bash request in a running turn", s.Permission, s.InTurn)
	}
	out := filepath.Join(h.work, "build", "out.txt")
	if _, err := os.Stat(out); err == nil {
		t.Fatal("build/out.txt exists before the command was approved")
	}
	h.mustCLI("approve", id)
	s = h.waitFor(id, "the approved turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.Permission != nil {
		t.Errorf("permission %+v still pending", s.Permission)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	if _, errOut, code := h.cli("approve", id); code != 1 || !strings.Contains(errOut, "no pending permission") {
		t.Errorf("a second approve: exit %d, %q; want exit 1 saying nothing is pending", code, errOut)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "permission_answered"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(permission)", "permission_answered", "state_changed:working",
		"state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestClaudeE2ESecondPrompt: `send` starts turn 2 on the same process.
func TestClaudeE2ESecondPrompt(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	id := h.newSession("[[scenario:text]] first")
	first := h.waitFor(id, "the first reply", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.mustCLI("send", id, "second")
	s := h.waitFor(id, "the second reply", func(s sessions.Session) bool {
		return s.TurnGeneration == 2 && s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview
	})
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("turn 2 ran on pid %d (alive %v) session %s; turn 1 on pid %d session %s",
			s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID)
	}
	reqs := h.messagesRequests("text")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The second request carries the whole conversation: same CLI session.
	if n := len(reqs[1].Request.Messages); n < 3 || !strings.Contains(reqs[1].Request.LastUserText(), "second") {
		t.Errorf("second request has %d messages, last user text %q", n, reqs[1].Request.LastUserText())
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)",
		"prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// --- issue 4: the supervisor's recoveries, each with its exact timeline ---

// ce2eFast are the time settings of the recovery tests: the fastest tick
// and a nudge cooldown of 3 s. The stall thresholds stay at their defaults
// (minutes) unless a test is about stalls.
var ce2eFast = []string{"supervisor.tick_seconds", "5", "supervisor.nudge_cooldown_minutes", "0.05"}

// ce2eReview waits for turn gen to be completed and waiting for review.
func ce2eReview(gen int64) func(sessions.Session) bool {
	return func(s sessions.Session) bool {
		return s.TurnGeneration == gen && s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview
	}
}

// nudged reports whether the fake API received the continuation nudge.
func (h *ce2eHarness) nudged(scenario string) bool {
	for _, e := range h.messagesRequests(scenario) {
		if strings.Contains(e.Request.LastUserText(), core.NudgeText) {
			return true
		}
	}
	return false
}

// TestClaudeE2EStallInterruptNudge (a): a model stream that goes silent is
// marked suspect, interrupted at the hard limit, and the continuation
// nudge sent on the same process completes the work.
func TestClaudeE2EStallInterruptNudge(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: append([]string{
		"supervisor.stall_suspect_minutes", "0.25", "supervisor.stall_hard_minutes", "0.5"}, ce2eFast...)})
	id := h.newSession("[[scenario:stall]] go")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	if !strings.Contains(first.Evidence, "silent") || !strings.Contains(first.Evidence, "alive") {
		t.Errorf("suspect evidence %q, want how long it was silent and that the pid is alive", first.Evidence)
	}
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive {
		t.Errorf("the nudge ran on pid %d (alive %v), want the live process %d", s.PID, s.ProcessAlive, first.PID)
	}
	if s.Nudge.Attempts != 0 || s.NeedsAttention {
		t.Errorf("nudge budget %+v needs_attention %v: a completed turn refills the budget and needs nothing", s.Nudge, s.NeedsAttention)
	}
	if !h.nudged("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	// The interrupt came no earlier than the hard limit after the last
	// stream event (the turn's start, here) and the nudge after it.
	start := h.findRow(rows, "state_changed:working").Time
	if d := h.findRow(rows, "stall_interrupt").Time.Sub(start); d < 30*time.Second {
		t.Errorf("interrupted %s after the turn started, before the 30 s hard limit", d)
	}
	h.stopApp()
}

// waitOpenTool waits until the session runs the named tool.
func (h *ce2eHarness) waitOpenTool(id, tool string) sessions.Session {
	h.t.Helper()
	return h.waitFor(id, tool+" to be running", func(s sessions.Session) bool {
		for _, c := range s.OpenTools {
			if c.Name == tool && s.State == sessions.Working {
				return true
			}
		}
		return false
	})
}

// waitProc waits until a process of this test runs a command line
// containing substr.
func (h *ce2eHarness) waitProc(substr string) {
	h.t.Helper()
	deadline := time.Now().Add(ce2eWait)
	for {
		for _, pid := range claudeE2EProcsWithHome(h.home) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
				strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), substr) {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no process ran %q within %s", substr, ce2eWait)
		}
		time.Sleep(ce2ePoll)
	}
}

// waitTranscript waits until the CLI's transcript of agentSession contains
// substr: $HOME/.claude/projects/<cwd with every non-alphanumeric character
// replaced by '-'>/<session id>.jsonl.
func (h *ce2eHarness) waitTranscript(agentSession, substr string) {
	h.t.Helper()
	mangled := []byte(h.work)
	for i, c := range mangled {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			mangled[i] = '-'
		}
	}
	path := filepath.Join(h.home, ".claude", "projects", string(mangled), agentSession+".jsonl")
	deadline := time.Now().Add(ce2eWait)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(substr)) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the transcript %s never contained %s", path, substr)
		}
		time.Sleep(ce2ePoll)
	}
}

// TestClaudeE2EAgentKilledMidTool (b): the agent process killed with
// SIGKILL while a Bash command runs is interrupted at once, and the nudge
// resumes its session in a new process (`claude --resume`), which
// completes the work.
func TestClaudeE2EAgentKilledMidTool(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.newSession("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, "Bash")
	// In the middle of the tool call: the command runs, and the CLI has
	// written the call to its transcript. (Killed earlier, the CLI may not
	// have saved the session at all, and `claude --resume` then fails with
	// "No conversation found with session ID".)
	h.waitProc("sleep 30")
	h.waitTranscript(before.AgentSessionID, `"tool_use"`)
	// The pid only, as the OOM killer would: the command it runs lives on
	// as an orphan for the rest of its sleep (cleanup kills it).
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing claude %d: %v", before.PID, err)
	}
	// Claude Code runs each Bash command in a session of its own (setsid),
	// so the command outlives the agent whichever way it is killed, pid or
	// process group; the app does not track it either. Whatever of this
	// test still runs besides the app now is that command.
	for _, pid := range claudeE2EProcsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != before.PID {
			h.orphans = append(h.orphans, pid)
		}
	}
	t.Logf("left running by the killed agent: %s", claudeE2EDescribe(h.orphans))
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || s.PID <= 0 || !s.ProcessAlive {
		t.Errorf("after the resume: pid %d (alive %v), want a new live process (the killed one was %d)", s.PID, s.ProcessAlive, before.PID)
	}
	if s.AgentSessionID != before.AgentSessionID {
		t.Errorf("agent session %q after the resume, want the same session %q", s.AgentSessionID, before.AgentSessionID)
	}
	if !h.nudged("slowtool") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	if msg := h.findRow(rows, "state_changed:interrupted").message(); !strings.Contains(msg, "SIGKILL") && !strings.Contains(msg, "killed") {
		t.Errorf("interrupted evidence %q does not say the process was killed", msg)
	}
	var resumed []ce2eRow
	for _, r := range rows {
		if r.Kind == "process_started" {
			resumed = append(resumed, r)
		}
	}
	if len(resumed) == 2 && !strings.Contains(resumed[1].message(), "resumed session "+before.AgentSessionID) {
		t.Errorf("second process_started %q, want a resume of %s", resumed[1].message(), before.AgentSessionID)
	}
	h.stopApp()
}

// TestClaudeE2EAppKilledMidTurn (c): the app killed with SIGKILL while a
// turn is in flight (a stalled model stream) comes back with the session
// Interrupted ("boot reconciled"), nudges it by resuming the agent session
// in a new process, and the work completes. The agent process the dead app
// left behind must not go on working on the same session next to the
// resumed one.
func TestClaudeE2EAppKilledMidTurn(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.newSession("[[scenario:stall]] go")
	before := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.AgentSessionID != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), ce2eWait)
	defer cancel()
	if err := h.api.Wait(ctx, func(l []fakeapi.Entry) bool { return len(l) > 0 && l[len(l)-1].Scenario == "stall" }); err != nil {
		t.Fatalf("the stalled request never reached the fake API: %v", err)
	}
	h.waitTranscript(before.AgentSessionID, "[[scenario:stall]]")
	h.killApp()
	if !claudeE2EAlive(before.PID) {
		t.Fatalf("claude %d died with the app; the orphan case this test is about did not happen", before.PID)
	}
	h.startApp()
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the restart: pid %d (alive %v) session %q; before: pid %d session %q",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if claudeE2EAlive(before.PID) {
		t.Errorf("the orphaned claude %d of the killed app still runs next to the resumed %d", before.PID, s.PID)
	}
	if !h.nudged("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	boot := h.findRow(rows, "boot_reconciled").detail()
	if boot["from"] != "working" || boot["to"] != "interrupted" || !strings.Contains(fmt.Sprint(boot["orphan"]), strconv.Itoa(before.PID)) {
		t.Errorf("boot_reconciled detail %v, want working → interrupted and the orphan %d stopped", boot, before.PID)
	}
	h.stopApp()
}

// ce2eAfterCompaction is the evidence the session had when the compaction
// the supervisor asked for (the first overflow_redrive) ended: the
// Compacting → Working change that follows it.
func ce2eAfterCompaction(rows []ce2eRow) string {
	i := slices.IndexFunc(rows, func(r ce2eRow) bool { return r.Kind == "overflow_redrive" })
	if i < 0 {
		return ""
	}
	seen := false
	for _, r := range rows[i:] {
		switch l := r.label(); {
		case l == "state_changed:compacting":
			seen = true
		case seen && l == "state_changed:working":
			return r.message()
		}
	}
	return ""
}

// TestClaudeE2EOverflowFirstTurn (d): the very first request overflows.
// The supervisor sends /compact — which the CLI cannot do on a
// single-exchange conversation ("Not enough messages to compact.") — then
// retries the turn, which completes.
func TestClaudeE2EOverflowFirstTurn(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.newSession("[[scenario:too_long_once]] hi")
	h.waitFor(id, "the retried turn to complete", ce2eReview(3))
	// The next tick closes the incident.
	s := h.waitFor(id, "the overflow incident to close", func(s sessions.Session) bool { return s.Supervision.Recovery == "" })
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != 3 {
		t.Errorf("failure %+v needs_attention %v turn %d after the retry", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
	var compact, retried bool
	for _, e := range h.messagesRequests("too_long_once") {
		compact = compact || strings.Contains(e.Request.LastUserText(), "/compact")
		retried = retried || strings.Contains(e.Request.LastUserText(), core.RetryTurnText)
	}
	if !compact || !retried {
		t.Errorf("the fake API saw /compact %v, the retry %v; want both", compact, retried)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"state_changed:recovering", "overflow_redrive", "state_changed:working",
		"state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:recovering", "overflow_redrive", "state_changed:working", "state_changed:waiting_on_user(review)")
	if msg := ce2eAfterCompaction(rows); !strings.Contains(msg, "compaction failed (Not enough messages to compact.)") {
		t.Errorf("after the supervisor's /compact: %q, want the CLI's refusal", msg)
	}
	h.stopApp()
}

// TestClaudeE2EOverflowCompactRetry (d): a later turn overflows (the CLI's
// own auto-compaction gives up first); the supervisor's /compact really
// compacts the conversation, the turn is retried and completes.
func TestClaudeE2EOverflowCompactRetry(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.newSession("[[scenario:too_long_2nd_turn]] first")
	h.waitFor(id, "the first turn", ce2eReview(1))
	h.mustCLI("send", id, "second")
	h.waitFor(id, "the retried turn to complete", ce2eReview(4))
	s := h.waitFor(id, "the overflow incident to close", func(s sessions.Session) bool { return s.Supervision.Recovery == "" })
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != 4 {
		t.Errorf("failure %+v needs_attention %v turn %d after the retry", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
	var compactions int
	for _, e := range h.messagesRequests("too_long_2nd_turn") {
		if fakeapi.IsCompaction(e.Request) {
			compactions++
		}
	}
	if compactions != 1 {
		t.Errorf("%d compaction requests, want 1", compactions)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:working", "state_changed:compacting", "state_changed:working", "state_changed:errored",
		"state_changed:recovering", "overflow_redrive", "state_changed:working",
		"state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:recovering", "overflow_redrive", "state_changed:working", "state_changed:waiting_on_user(review)")
	if msg := ce2eAfterCompaction(rows); msg != "compaction finished; turn continues" {
		t.Errorf("after the supervisor's /compact: %q, want a finished compaction", msg)
	}
	h.stopApp()
}

// TestClaudeE2ERateLimitDrainBackoff (e): 429s outlast the CLI's own
// retries; the failed turn is held in Recovering with a countdown (no
// reset time from the API key's 429: the policy's backoff, 1 minute) and
// continued when it ends.
func TestClaudeE2ERateLimitDrainBackoff(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.newSession("[[scenario:429x3then_ok]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Supervision.NextAttemptAt.IsZero() ||
		!strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention {
		t.Errorf("failure %+v needs_attention %v after the continue", s.Failure, s.NeedsAttention)
	}
	if got := ce2eStatuses(h.messagesRequests("429x3then_ok")); !slices.Equal(got, []int{429, 429, 429, 200}) {
		t.Errorf("the fake API answered %v, want three 429s then 200", got)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	var drains []ce2eRow
	for _, r := range rows {
		if r.Kind == "rate_limit_drain" {
			drains = append(drains, r)
		}
	}
	if len(drains) == 2 {
		if wait := drains[1].Time.Sub(drains[0].Time); wait < time.Minute || wait > time.Minute+10*time.Second {
			t.Errorf("continued %s after scheduling, want the 1 min backoff (within a tick)", wait)
		}
	}
	h.stopApp()
}

// TestClaudeE2ERateLimitDrainAtReset (e): a plan's rate limit (the unified
// rate-limit headers, which the CLI honours for a claude.ai login) makes the
// CLI print a rate_limit_event with resetsAt and give up at once; the
// session is held in Recovering until exactly that reset and then
// continued.
func TestClaudeE2ERateLimitDrainAtReset(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{
		settings: ce2eFast,
		// A subscription login instead of an API key: the CLI reads the
		// unified rate-limit headers only for those.
		drop: []string{"ANTHROPIC_API_KEY"},
		env:  []string{"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-fake"},
	})
	id := h.newSession("[[scenario:429unified]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	reqs := h.messagesRequests("429unified")
	if len(reqs) == 0 {
		t.Fatal("no request reached the fake API")
	}
	reset := time.Unix(reqs[0].At.Add(fakeapi.UnifiedRateLimitWindow).Unix(), 0)
	if !held.Failure.RetryAt.Equal(reset) || !held.Supervision.NextAttemptAt.Equal(reset) {
		t.Errorf("hold: retry_at %v next attempt %v, want the API's reset %v", held.Failure.RetryAt, held.Supervision.NextAttemptAt, reset)
	}
	s := h.waitFor(id, "the continued turn to complete", ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention {
		t.Errorf("failure %+v needs_attention %v after the continue", s.Failure, s.NeedsAttention)
	}
	if got := ce2eStatuses(h.messagesRequests("429unified")); !slices.Equal(got, []int{429, 200}) {
		t.Errorf("the fake API answered %v, want 429 (no CLI retry) then 200", got)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	var cont ce2eRow
	for _, r := range rows {
		if r.Kind == "rate_limit_drain" {
			cont = r
		}
	}
	if late := cont.Time.Sub(reset); late < 0 || late > 5*time.Second+time.Second {
		t.Errorf("continued %s after the reset, want at the reset (within a 5 s tick)", late)
	}
	h.stopApp()
}

// TestClaudeE2EAuthEscalated (f): a 401 is held in Recovering while the
// supervisor waits for refreshed credentials (a resume every 5 minutes,
// the policy's default); when nothing automatic is left — here automatic
// recovery is switched off during the hold, which takes effect at the next
// tick — it is escalated: Errored, needs_attention in `ls --json`, and the
// escalation published; `ack` clears it.
func TestClaudeE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	w := h.watch()
	id := h.newSession("[[scenario:401]] hi")
	held := h.waitFor(id, "the auth hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Auth || held.NeedsAttention || !strings.Contains(held.Evidence, "resuming at") {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q", held.Failure, held.NeedsAttention, held.Evidence)
	}
	if wait := time.Until(held.Supervision.NextAttemptAt); wait < 4*time.Minute || wait > 5*time.Minute {
		t.Errorf("next resume in %s, want the 5 min auth interval", wait)
	}
	h.mustCLI("settings", "set", "supervisor.auto_recover_enabled", "false")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want honestly errored auth", s.State, s.Failure)
	}
	var listed bool
	for _, l := range h.ls() {
		listed = listed || l.ID == id && l.NeedsAttention
	}
	if !listed {
		t.Error("ls --json does not show needs_attention")
	}
	// Published for the notifier, on the live stream.
	w.waitMessage(t, "the escalation", func(m localapi.Message) bool {
		return m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id && m.Session.NeedsAttention
	})
	h.mustCLI("ack", id)
	h.waitFor(id, "ack to clear needs_attention", func(s sessions.Session) bool { return !s.NeedsAttention })
	h.expectTimeline(id, []string{"acknowledged"},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated", "acknowledged", "state_changed:idle")
	h.stopApp()
}

// TestClaudeE2EAuthEscalatedAfterResumes (f), the whole budget: three
// resumes (supervisor.auth_retry_minutes apart, shortened here), each
// failing again, then escalation.
func TestClaudeE2EAuthEscalatedAfterResumes(t *testing.T) {
	t.Parallel()
	settings := append([]string{"supervisor.auth_retry_minutes", "0.1"}, ce2eFast...)
	h := claudeE2EStart(t, ce2eOptions{settings: settings})
	id := h.newSession("[[scenario:401]] hi")
	s := h.waitForWithin(id, "the escalation", 5*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "escalated")
	h.stopApp()
}

// --- issue 15: a network outage longer than the CLI's own retries ---

// ce2eTransientRows returns the transient_retry rows of a timeline.
func ce2eTransientRows(rows []ce2eRow) []ce2eRow {
	var out []ce2eRow
	for _, r := range rows {
		if r.Kind == core.TimelineTransientRetry {
			out = append(out, r)
		}
	}
	return out
}

// TestClaudeE2ENetworkOutageWaitedOut: the fake API resets the first six
// requests of the conversation, streams and non-streaming fallbacks alike,
// which outlasts the CLI's own retries (CLAUDE_CODE_MAX_RETRIES=2): its turn
// fails with "Unable to connect to API (ECONNRESET)". The supervisor holds
// the session in Recovering with a countdown and retries (a 1-minute
// window: every wait 10 s) until a turn completes, without escalating.
func TestClaudeE2ENetworkOutageWaitedOut(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: append([]string{"supervisor.transient_window_minutes", "1"}, ce2eFast...)})
	id := h.newSession("[[scenario:cut6then_ok]] hi")
	held := h.waitFor(id, "the transient hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Network || held.NeedsAttention || !strings.Contains(held.Evidence, "retrying at") ||
		!strings.Contains(held.Failure.Message, "ECONNRESET") || held.Supervision.NextAttemptAt.IsZero() {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q next %v; want network, a countdown, no escalation",
			held.Failure, held.NeedsAttention, held.Evidence, held.Supervision.NextAttemptAt)
	}
	s := h.waitForWithin(id, "a completed turn", 2*time.Minute, func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview || s.NeedsAttention
	})
	if s.NeedsAttention || !s.Failure.IsZero() {
		t.Fatalf("ended %s with failure %+v, needs_attention %v; want a completed turn", s.State, s.Failure, s.NeedsAttention)
	}
	// The next tick closes the incident and refills its budget.
	h.waitFor(id, "the incident to close", func(s sessions.Session) bool { return s.Supervision == (sessions.Supervision{}) })
	reqs := h.messagesRequests("cut6then_ok")
	for i, e := range reqs {
		if cut := i < fakeapi.CutThenOKCuts; e.Cut != cut {
			t.Errorf("request %d: cut %v, want %v", i+1, e.Cut, cut)
		}
	}
	if len(reqs) != fakeapi.CutThenOKCuts+1 || !h.nudged("cut6then_ok") {
		t.Errorf("%d requests (nudged %v), want %d cut then one answered, after a retry", len(reqs), h.nudged("cut6then_ok"), fakeapi.CutThenOKCuts)
	}
	rows := h.timeline(id)
	labels := h.labels(id, []string{})
	if slices.Contains(labels, "escalated") {
		t.Errorf("escalated: %s", strings.Join(labels, ", "))
	}
	if want := []string{"state_changed:working", "state_changed:recovering", "state_changed:errored", "transient_retry", "transient_retry"}; len(labels) < len(want) || !slices.Equal(labels[:len(want)], want) {
		t.Errorf("timeline starts %s, want %s", strings.Join(labels, ", "), strings.Join(want, ", "))
	}
	tr := ce2eTransientRows(rows)
	for _, r := range tr {
		t.Logf("%s %s", r.Time.Format("15:04:05.000"), r.message())
	}
	var retries int
	for _, r := range tr {
		if r.detail()["action"] == "continue" {
			retries++
			if r.detail()["outcome"] != "ok" {
				t.Errorf("a retry's outcome: %s", r.Detail)
			}
		}
	}
	last := tr[len(tr)-1].message()
	count := fmt.Sprintf("retried %d times", retries)
	if retries == 1 {
		count = "retried once"
	}
	if retries == 0 || !strings.HasPrefix(last, "recovered: API unreachable or failing for ") ||
		!strings.Contains(last, count) || !strings.Contains(last, "; continued at ") {
		t.Errorf("%d retries; the incident's account %q", retries, last)
	}
	h.stopApp()
}

// TestClaudeE2ENetworkOutageLongerThanWindowEscalates: every request is
// reset, for good. With a 15-second window (waits of 2.5 s, a retry per
// 5-second tick) the supervisor retries until the window is spent, then
// escalates once, with the agent's error in the evidence, and sends
// nothing more.
func TestClaudeE2ENetworkOutageLongerThanWindowEscalates(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: append([]string{"supervisor.transient_window_minutes", "0.25"}, ce2eFast...)})
	w := h.watch()
	id := h.newSession("[[scenario:cut]] hi")
	s := h.waitForWithin(id, "the escalation", 2*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Network || !strings.Contains(s.Failure.Message, "ECONNRESET") {
		t.Errorf("escalated as %s with %+v, want errored network with the agent's error", s.State, s.Failure)
	}
	w.waitMessage(t, "the escalation", func(m localapi.Message) bool {
		return m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id
	})
	// Three more ticks: nothing is retried or escalated again.
	sent := len(h.messagesRequests("cut"))
	deadline := time.Now().Add(16 * time.Second)
	for time.Now().Before(deadline) {
		if s := h.show(id); !s.NeedsAttention || s.State != sessions.Errored {
			t.Fatalf("after the escalation the session became %s (needs_attention %v)", s.State, s.NeedsAttention)
		}
		time.Sleep(time.Second)
	}
	if n := len(h.messagesRequests("cut")); n != sent {
		t.Errorf("%d requests after the escalation", n-sent)
	}
	var escalations int
	for _, m := range w.messages() {
		if m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id {
			escalations++
		}
	}
	if escalations != 1 {
		t.Errorf("%d escalations published, want 1", escalations)
	}
	rows := h.timeline(id)
	var esc []ce2eRow
	for _, r := range rows {
		if r.Kind == core.TimelineEscalated {
			esc = append(esc, r)
		}
	}
	if len(esc) != 1 {
		t.Fatalf("%d escalated rows, want 1: %s", len(esc), strings.Join(h.labels(id, nil), ", "))
	}
	msg := esc[0].message()
	t.Logf("timeline: %s\nescalation: %s", strings.Join(h.labels(id, []string{}), ", "), msg)
	for _, part := range []string{"ECONNRESET", "API unreachable or failing for", "retried", "the 15 s window for transient failures is spent"} {
		if !strings.Contains(msg, part) {
			t.Errorf("escalation %q lacks %q", msg, part)
		}
	}
	var retries int
	for _, r := range ce2eTransientRows(rows) {
		if r.detail()["action"] == "continue" {
			retries++
			if r.Time.After(esc[0].Time) {
				t.Errorf("a retry after the escalation: %s", r.Detail)
			}
		}
	}
	if retries == 0 {
		t.Error("escalated without a single retry")
	}
	h.stopApp()
}
