//go:build linux

package e2e

// End-to-end tests of the real binary: `run --headless` as a child process
// with the scripted fakeclaude as its Claude Code, driven by the CLI
// commands a user types.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// ae2eWait bounds every wait; reaching it fails the test.
const ae2eWait = 60 * time.Second

// appE2E is one data directory, its app process and the CLI around it.
type appE2E struct {
	t         *testing.T
	bin, fake string
	dir, work string
	env       []string
	app       *exec.Cmd
	stderr    *syncBuffer
	exited    chan struct{}
	exitErr   error
}

// newAppE2E prepares a data directory whose Claude Code is fakeclaude
// playing script (the fakeclaude script JSON).
func newAppE2E(t *testing.T, script string) *appE2E {
	t.Helper()
	bin, fake := testBinaries(t)
	// Short: the socket path must stay under the unix limit.
	dir := testdir.Short(t, "sse2e")
	scriptPath := filepath.Join(t.TempDir(), "script.json")
	reapAtCleanup(t, dir)
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case storage.EnvHome, "SESSION_SUPERVISOR_SERVICE", "JOURNAL_STREAM", "DISPLAY", "WAYLAND_DISPLAY", "FAKE_CLAUDE_SCRIPT":
			continue
		}
		env = append(env, kv)
	}
	h := &appE2E{t: t, bin: bin, fake: fake, dir: dir, work: t.TempDir(),
		env: append(env, "FAKE_CLAUDE_SCRIPT="+scriptPath)}
	t.Cleanup(h.kill)
	h.mustCLI("settings", "set", "agents.claude.command", fake)
	return h
}

// cli runs one command line against the data directory.
func (h *appE2E) cli(args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	stdout, stderr, code = runCommand(h.t, h.bin, h.dir, "", h.env, ae2eWait, args...)
	return code, stdout, stderr
}

func (h *appE2E) mustCLI(args ...string) string {
	h.t.Helper()
	code, out, errOut := h.cli(args...)
	if code != 0 {
		h.t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// start runs the app and waits until its API answers.
func (h *appE2E) start() localapi.Health {
	h.t.Helper()
	return h.startWith("run", "--headless")
}

// startWith starts the app with args after its data directory (the
// desktop's `run` for the idle benchmark) and waits until it answers.
func (h *appE2E) startWith(args ...string) localapi.Health {
	h.t.Helper()
	h.app = exec.Command(h.bin, append([]string{"--data-dir", h.dir}, args...)...)
	h.app.Env = h.env
	h.stderr = &syncBuffer{}
	h.app.Stdout, h.app.Stderr = h.stderr, h.stderr
	if err := h.app.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func() { h.exitErr = h.app.Wait(); close(h.exited) }()
	cl := localapi.NewClient(h.dir)
	deadline := time.Now().Add(ae2eWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		health, err := cl.Health(ctx)
		cancel()
		if err == nil && health.PID == h.app.Process.Pid {
			return health
		}
		select {
		case <-h.exited:
			h.t.Fatalf("the app exited at start (%v):\n%s", h.exitErr, h.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the app does not answer (%v):\n%s", err, h.stderr)
		}
	}
}

// interrupt sends the app SIGINT (Ctrl-C) and returns its exit code.
func (h *appE2E) interrupt() int {
	h.t.Helper()
	return h.signal(os.Interrupt)
}

// signal sends the app sig and returns its exit code once it quit.
func (h *appE2E) signal(sig os.Signal) int {
	h.t.Helper()
	if err := h.app.Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.exited:
	case <-time.After(ae2eWait):
		h.t.Fatalf("the app did not quit after SIGINT:\n%s", h.stderr)
	}
	var exit *exec.ExitError
	if errors.As(h.exitErr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			h.t.Fatalf("the app was killed by %v instead of quitting:\n%s", ws.Signal(), h.stderr)
		}
		return exit.ExitCode()
	}
	if h.exitErr != nil {
		h.t.Fatal(h.exitErr)
	}
	return 0
}

func (h *appE2E) kill() {
	if h.app == nil {
		return
	}
	select {
	case <-h.exited:
	default:
		_ = h.app.Process.Kill()
		<-h.exited
	}
}

// waitSession polls the running app until session id satisfies ok.
func (h *appE2E) waitSession(id, what string, ok func(sessions.Session) bool) sessions.Session {
	h.t.Helper()
	cl := localapi.NewClient(h.dir)
	deadline := time.Now().Add(ae2eWait)
	for {
		s, err := cl.Session(context.Background(), id)
		if err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s: %s %q %s (%v)\n%s", what, s.State, s.WaitReason, s.Evidence, err, h.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ae2eWatch is a `watch --json` child and the messages it printed.
type ae2eWatch struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	lines  chan []byte
	done   chan error
}

func (h *appE2E) watch() *ae2eWatch {
	h.t.Helper()
	w := &ae2eWatch{stderr: &syncBuffer{}, lines: make(chan []byte, 1<<12), done: make(chan error, 1)}
	cmd, sc := startWatchJSON(h.t, h.bin, h.dir, h.env, w.stderr)
	w.cmd = cmd
	go func() {
		for sc.Scan() {
			w.lines <- bytes.Clone(sc.Bytes())
		}
		close(w.lines)
		w.done <- cmd.Wait()
	}()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range w.lines {
		}
	})
	return w
}

// until reads printed messages up to and including the first satisfying ok.
// Every line must be one JSON message.
func (w *ae2eWatch) until(t *testing.T, what string, ok func(localapi.Message) bool) []localapi.Message {
	t.Helper()
	var got []localapi.Message
	deadline := time.After(ae2eWait)
	for {
		select {
		case line, open := <-w.lines:
			if !open {
				t.Fatalf("watch ended before %s:\n%s", what, w.stderr)
			}
			var m localapi.Message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("watch --json printed a line that is not a message: %v\n%s", err, line)
			}
			got = append(got, m)
			if ok(m) {
				return got
			}
		case <-deadline:
			t.Fatalf("timed out waiting for watch to print %s (%d messages so far)", what, len(got))
		}
	}
}

func isSessionState(id string, gen int64, st sessions.State, reason sessions.WaitReason) func(localapi.Message) bool {
	return func(m localapi.Message) bool {
		return m.Type == localapi.MsgSession && m.Session.ID == id && m.Session.TurnGeneration == gen &&
			m.Session.State == st && m.Session.WaitReason == reason
	}
}

const ae2eLines = `
	{"emit": {"type":"assistant","message":{"model":"fake","content":[{"type":"text","text":"Done."}]},"parent_tool_use_id":null,"session_id":"$SESSION"}},
	{"emit": {"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"$SESSION"}}`

// TestE2EAppCommands: run --headless, then every app command a user types,
// through a permission request approved with `approve`, a second prompt with
// `send`, `ack`, `watch --json` across a restart of the app, and `timeline`
// with the app stopped.
func TestE2EAppCommands(t *testing.T) {
	t.Parallel()
	h := newAppE2E(t, `{"turns": [
		[{"wait_permission": {"command": "ls"}},`+ae2eLines+`],
		[`+ae2eLines+`]
	]}`)
	health := h.start()
	pid := h.app.Process.Pid

	// One instance per data directory: a second run hands over to the first
	// (issue 5: it asks the first to show its window and exits 0), naming
	// the process that holds the directory.
	code, _, errOut := h.cli("run", "--headless")
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("already running (pid %d)", pid)) {
		t.Errorf("second run: exit %d, stderr %q; want exit 0 naming pid %d", code, errOut, pid)
	}

	w := h.watch()
	first := w.until(t, "the first message", func(localapi.Message) bool { return true })[0]
	if first.Type != localapi.MsgSnapshot || first.Cursor.Generation != health.Generation {
		t.Fatalf("watch began with %s %+v, want a snapshot of generation %s", first.Type, first.Cursor, health.Generation)
	}

	code, out, errOut := h.cli("new", "--cwd", h.work, "--name", "x", "list", "the", "files")
	if code != 0 || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`).MatchString(out) {
		t.Fatalf("new: exit %d, stdout %q (want only the id), stderr %q", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	waiting := h.waitSession(id, "the permission request", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission
	})

	// ls --json: the documented contract.
	var list []map[string]any
	if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil || len(list) != 1 {
		t.Fatalf("ls --json: %v, %d sessions", err, len(list))
	}
	obj := list[0]
	for _, key := range []string{"id", "name", "agent", "agent_session_id", "source", "cwd", "pid", "state", "evidence",
		"wait_reason", "failure", "needs_attention", "turn_generation", "updated_at"} {
		if _, ok := obj[key]; !ok {
			t.Errorf("ls --json session lacks %q", key)
		}
	}
	want := map[string]any{"id": id, "name": "x", "agent": "claude", "agent_session_id": "fa4e0000-0000-4000-8000-000000000001",
		"source": "managed", "cwd": h.work, "pid": float64(waiting.PID), "state": "waiting_on_user", "wait_reason": "permission",
		"needs_attention": false, "turn_generation": float64(1)}
	for k, v := range want {
		if obj[k] != v {
			t.Errorf("ls --json %s = %v, want %v", k, obj[k], v)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(obj["updated_at"])); err != nil {
		t.Errorf("updated_at %v is not RFC 3339", obj["updated_at"])
	}
	failure, _ := obj["failure"].(map[string]any)
	for _, key := range []string{"kind", "retry_at", "message"} {
		if _, ok := failure[key]; !ok {
			t.Errorf("failure %v lacks %q", obj["failure"], key)
		}
	}
	// README: retry_at is RFC 3339, or null when unknown.
	if v := failure["retry_at"]; v != nil {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v)); err != nil {
			t.Errorf("failure.retry_at %v is not RFC 3339", v)
		}
	}
	if show := h.mustCLI("show", id[:8]); !strings.Contains(show, "Bash: ls (approve or deny)") || !strings.Contains(show, "Waiting on user") {
		t.Errorf("show does not offer the permission:\n%s", show)
	}

	if out := h.mustCLI("approve", id[:8]); out != "x: Working — Bash approved by the user\n" {
		t.Errorf("approve printed %q", out)
	}
	first1 := h.waitSession(id, "turn 1 to complete", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	h.mustCLI("send", id, "and", "now", "the", "tests")
	second := h.waitSession(id, "turn 2 to complete", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 2
	})
	if second.PID != first1.PID || !second.ProcessAlive {
		t.Errorf("turn 2 on pid %d (alive %t), turn 1 on %d: want the same process", second.PID, second.ProcessAlive, first1.PID)
	}
	if out := h.mustCLI("ack", id); !strings.HasPrefix(out, "x: Idle") {
		t.Errorf("ack printed %q", out)
	}

	msgs := w.until(t, "the ack", isSessionState(id, 2, sessions.Idle, sessions.NoWait))
	for _, check := range []struct {
		what string
		ok   func(localapi.Message) bool
	}{
		{"the permission wait", isSessionState(id, 1, sessions.WaitingOnUser, sessions.WaitPermission)},
		{"the review", isSessionState(id, 2, sessions.WaitingOnUser, sessions.WaitReview)},
		{"the permission_answered row", func(m localapi.Message) bool {
			return m.Type == localapi.MsgTimeline && m.Event.Kind == "permission_answered" && m.Event.SessionID == id
		}},
	} {
		if !slices.ContainsFunc(msgs, check.ok) {
			t.Errorf("watch --json did not print %s", check.what)
		}
	}
	prev := first.Cursor.Seq
	for _, m := range msgs {
		if m.Cursor.Generation != health.Generation || m.Cursor.Seq <= prev {
			t.Fatalf("watch --json printed cursor %+v after seq %d", m.Cursor, prev)
		}
		prev = m.Cursor.Seq
	}

	if code := h.interrupt(); code != 0 {
		t.Fatalf("the app exited %d after Ctrl-C:\n%s", code, h.stderr)
	}
	if code, _, errOut := h.cli("ls"); code != 1 || !strings.Contains(errOut, "not running") {
		t.Errorf("ls with the app stopped: exit %d, %q", code, errOut)
	}

	// timeline reads the database: it works with the app stopped.
	text := h.mustCLI("timeline", id[:8])
	// The table shows each kind's label (sessions/view.KindLabel).
	for _, kind := range []string{"process started", "prompt sent", "permission answered", "acknowledged"} {
		if !strings.Contains(text, kind) {
			t.Errorf("timeline lacks %s:\n%s", kind, text)
		}
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(h.mustCLI("timeline", id, "--json")), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("timeline --json: %v (%d rows)", err, len(rows))
	}
	for _, key := range []string{"time", "kind", "turn_generation", "detail"} {
		if _, ok := rows[0][key]; !ok {
			t.Errorf("timeline row lacks %q: %v", key, rows[0])
		}
	}
	if rows[0]["kind"] != "state_changed" || rows[len(rows)-1]["kind"] != "process_started" {
		t.Errorf("timeline --json is not newest first: %v … %v", rows[0]["kind"], rows[len(rows)-1]["kind"])
	}

	// watch outlives the app and resyncs when it comes back.
	restarted := h.start()
	if restarted.Generation == health.Generation {
		t.Fatal("the generation did not change with the restart")
	}
	back := w.until(t, "the snapshot after the restart", func(m localapi.Message) bool {
		return m.Type == localapi.MsgSnapshot && m.Cursor.Generation == restarted.Generation
	})
	if n := len(back); n < 2 || back[n-2].Type != localapi.MsgResync || back[n-2].Cursor.Generation != restarted.Generation {
		t.Errorf("after the restart watch printed %d messages, want a resync right before the snapshot", n)
	}
	if snap := back[len(back)-1]; len(snap.Sessions) != 1 || snap.Sessions[0].ID != id || snap.Sessions[0].State != sessions.Idle {
		t.Errorf("snapshot after the restart = %+v", snap.Sessions)
	}
	if !strings.Contains(w.stderr.String(), "reconnecting") {
		t.Errorf("watch did not say it lost the app: %q", w.stderr)
	}
	if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range w.lines {
	}
	if err := <-w.done; err != nil {
		t.Errorf("watch after Ctrl-C: %v (want exit 0)", err)
	}
	if code := h.interrupt(); code != 0 {
		t.Errorf("the restarted app exited %d", code)
	}
}

// TestE2EGracefulQuitFinishesTurn: Ctrl-C with a turn in flight waits for the
// turn; the app exits 0 and the database shows the turn completed.
func TestE2EGracefulQuitFinishesTurn(t *testing.T) {
	t.Parallel()
	h := newAppE2E(t, `{"turns": [[{"sleep_ms": 2500},`+ae2eLines+`]]}`)
	h.start()
	id := strings.TrimSpace(h.mustCLI("new", "--cwd", h.work, "busy"))
	// The init line comes when the agent starts the turn: it is now in its
	// silent step.
	h.waitSession(id, "the agent to start the turn", func(s sessions.Session) bool { return s.AgentSessionID != "" && s.InTurn })

	if code := h.interrupt(); code != 0 {
		t.Fatalf("the app exited %d after Ctrl-C:\n%s", code, h.stderr)
	}
	if !strings.Contains(h.stderr.String(), "letting turns in flight finish") {
		t.Errorf("the app did not say it waits for the turn:\n%s", h.stderr)
	}
	st, err := storage.Open(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview || s.InTurn || s.ProcessAlive ||
		s.LastExitCode == nil || *s.LastExitCode != 0 {
		t.Fatalf("stored session after the quit: %s %q in_turn=%t alive=%t exit=%v: %s; want the turn completed and the process gone by itself",
			s.State, s.WaitReason, s.InTurn, s.ProcessAlive, s.LastExitCode, s.Evidence)
	}
	rows, err := st.Timeline(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Kind == "state_changed" && strings.Contains(string(r.Detail), `"to":"interrupted"`) {
			t.Errorf("the quit interrupted the turn: %s", r.Detail)
		}
	}
}

// TestE2ESecondRunWhenHolderDoesNotAnswer: a second run whose data directory
// is locked by a process that does not answer exits 1 naming that process.
func TestE2ESecondRunWhenHolderDoesNotAnswer(t *testing.T) {
	t.Parallel()
	h := newAppE2E(t, `{"turns": [[]]}`)
	lock, err := storage.AcquireLock(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	code, _, errOut := h.cli("run", "--headless")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("run on a locked directory: exit %d, stderr %q; want exit 1 naming pid %d", code, errOut, os.Getpid())
	}
}

// TestE2EQuitAsSoonAsItAnswers: Ctrl-C or SIGTERM right after the app starts
// answering is already the graceful quit (exit 0), never the default
// signal death.
func TestE2EQuitAsSoonAsItAnswers(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			h := newAppE2E(t, `{"turns": [[]]}`)
			h.start()
			if code := h.signal(sig); code != 0 {
				t.Fatalf("exit %d:\n%s", code, h.stderr)
			}
			if !strings.Contains(h.stderr.String(), "Quitting") {
				t.Errorf("no graceful quit:\n%s", h.stderr)
			}
			if _, err := os.Stat(filepath.Join(h.dir, localapi.SocketName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket was left behind: %v", err)
			}
		})
	}
}
