//go:build linux

package e2e

// The harness every end-to-end suite of a managed agent sits on: one
// test's world (its HOME, data directory, working directory and the app
// running headless on them), driven and observed through the app's own
// command line (new, ls, show, send, approve, ack, timeline, watch), exactly
// as a user or a script would.
//
// Waits poll `show --json` against a deadline; nothing is asserted after a
// fixed sleep. At cleanup every process the test started (the app, every
// agent it launched and the tools those ran, found by the test's unique
// HOME) is killed, whatever the outcome. Linux only: finding those
// processes, and the tools a killed agent leaves behind, reads /proc.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// ce2eWait bounds every wait for a state; reaching it fails the test.
const ce2eWait = 90 * time.Second

// ce2ePoll is the pause between two polls of `show --json`.
const ce2ePoll = 250 * time.Millisecond

// ce2eHarness is one test's world: a HOME, a data directory, a working
// directory, the environment the app runs with (the agent's fake API and
// refusing proxy are the agent's setup: startAgentE2E) and the app running
// on them.
type ce2eHarness struct {
	t    *testing.T
	app  string
	home string
	data string
	work string
	env  []string

	// machine, when set, sends every command line to that machine's
	// supervisor (--machine): the harness then drives a remote.
	machine string

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
	left := slices.DeleteFunc(procsWithHome(h.home), func(pid int) bool { return slices.Contains(h.orphans, pid) })
	if len(left) > 0 {
		h.t.Errorf("processes left running after a graceful quit: %s", describeProcs(left))
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
	killAllWithHome(h.home)
}

// cli runs one app command line against the data directory.
func (h *ce2eHarness) cli(args ...string) (stdout, stderr string, code int) {
	h.t.Helper()
	if h.machine != "" {
		args = append([]string{"--machine", h.machine}, args...)
	}
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
	var appDone <-chan struct{} // nil when the harness drives another machine's app
	if h.run != nil {
		appDone = h.run.done
	}
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
		case <-appDone:
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

// startWatchJSON starts the app bin's `watch --json` on the data directory
// dir with env, its words to stderr (nil: dropped), and returns it and a
// scanner of the lines it prints (one message a line; a snapshot's line can
// be megabytes).
func startWatchJSON(t *testing.T, bin, dir string, env []string, stderr io.Writer) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, "--data-dir", dir, "watch", "--json")
	cmd.Env, cmd.Stderr = env, stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting watch: %v", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	return cmd, sc
}

// watch starts `watch --json` and collects what it prints until the test
// stops it (stopApp or cleanup).
func (h *ce2eHarness) watch() *ce2eWatch {
	h.t.Helper()
	cmd, sc := startWatchJSON(h.t, h.app, h.data, h.env, nil)
	w := &ce2eWatch{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
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

// procsWithHome lists the processes whose environment has
// HOME=home: everything a test started (the app, each agent, the tools
// they ran), told apart by the test's unique HOME.
func procsWithHome(home string) []int {
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

// describeProcs renders pids with their command lines.
func describeProcs(pids []int) string {
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

// killAllWithHome kills every process started with HOME=home, and the
// process group of each that leads one, then waits until they are gone.
func killAllWithHome(home string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := procsWithHome(home)
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

// pidAlive reports whether pid runs (a zombie counts as gone).
func pidAlive(pid int) bool {
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

// waitFile waits until the file at path contains substr: an agent's own
// record of a session, written a moment after the events the app saw.
func (h *ce2eHarness) waitFile(path, substr string, limit time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(substr)) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s never contained %s", path, substr)
		}
		time.Sleep(ce2ePoll)
	}
}

// waitProc waits until a process of this test runs command (runsCommand).
func (h *ce2eHarness) waitProc(command string) {
	h.t.Helper()
	deadline := time.Now().Add(ce2eWait)
	for {
		for _, pid := range procsWithHome(h.home) {
			if runsCommand(pid, command) {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no process ran %q within %s", command, ce2eWait)
		}
		time.Sleep(ce2ePoll)
	}
}

// runsCommand reports whether pid is the command itself ("sleep 30": its
// program's base name and arguments), not a shell whose script merely
// mentions it: a test that waits for the command must not go on while
// only the shell that will start it runs.
func runsCommand(pid int, command string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return false
	}
	argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	argv[0] = filepath.Base(argv[0])
	return strings.HasPrefix(strings.Join(argv, " "), command)
}
