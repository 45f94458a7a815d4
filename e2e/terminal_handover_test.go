//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	cxfake "github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// handoverTmux is the user's default tmux server (TMUX_TMPDIR points the
// default socket at the test's own directory), started with env: what a
// new window of it runs in, as a person's server hands its environment on.
type handoverTmux struct {
	t   *testing.T
	dir string
	env []string
}

func startHandoverTmux(t *testing.T, env []string) *handoverTmux {
	requiretool.Any(t, "tmux")
	// Short (the socket's path is bounded), and not reaped by name: the
	// app's environment names it too, and the app stops by its own cleanup.
	dir := testdir.Short(t, "tm")
	x := &handoverTmux{t: t, dir: dir}
	x.env = append(append([]string{}, env...), "TERM=xterm-256color", "TMUX_TMPDIR="+x.dir)
	cmd := exec.Command("tmux", "-f", "/dev/null", "new-session", "-d", "-s", "home", "-x", "120", "-y", "40", "sleep 600")
	cmd.Env = x.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting tmux: %v: %s", err, out)
	}
	server, _ := strconv.Atoi(x.run("display-message", "-p", "#{pid}"))
	t.Cleanup(func() {
		// The CLIs in its windows first: they outlive their terminal's hangup.
		for _, p := range strings.Fields(x.runOK("list-panes", "-a", "-F", "#{pane_pid}")) {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(-pid, syscall.SIGKILL) // with what it ran (git)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		x.runOK("kill-server")
		for deadline := time.Now().Add(5 * time.Second); pidAlive(server) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	})
	return x
}

func (x *handoverTmux) runOK(args ...string) string {
	cmd := exec.Command("tmux", args...)
	cmd.Env = x.env
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

func (x *handoverTmux) run(args ...string) string {
	x.t.Helper()
	cmd := exec.Command("tmux", args...)
	cmd.Env = x.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// submit types text and Enter into pane target as a person watching it
// would: Enter again while no turn started (a TUI on a loaded machine
// draws the line and drops an Enter that came before it was ready).
func (x *handoverTmux) submit(target, text string, started func() bool) {
	x.t.Helper()
	x.run("send-keys", "-t", target, "-l", text)
	time.Sleep(300 * time.Millisecond)
	for try := 1; ; try++ {
		x.run("send-keys", "-t", target, "Enter")
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if started() {
				return
			}
		}
		if try == 3 {
			x.t.Fatalf("the TUI took no prompt in %d tries; the pane shows:\n%s", try, x.screen(target))
		}
		x.t.Logf("no turn 20 s after Enter (try %d): pressing it again", try)
	}
}

// screen is what pane target shows.
func (x *handoverTmux) screen(target string) string {
	return x.runOK("capture-pane", "-p", "-t", target)
}

// showJSON is `show ID --json`.
func showJSON(t *testing.T, h *appE2E, id string) sessions.Session {
	t.Helper()
	var s sessions.Session
	if err := json.Unmarshal([]byte(h.mustCLI("show", id, "--json")), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitShow polls `show ID --json` until ok.
func waitShow(t *testing.T, h *appE2E, id string, limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := showJSON(t, h, id)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			_, tl, _ := h.cli("timeline", id)
			t.Fatalf("session %s not %s within %s: %s (%s)\n%s", id, what, limit, s.State, s.Evidence, tl)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// claudeHandover is a managed Claude Code session done with its first
// turn, in an app whose CLI runs with the env a test's world gives it.
type claudeHandover struct {
	h         *appE2E
	api       *fakeapi.Server
	bin, work string
	id        string
	s         sessions.Session
}

// startClaudeHandover starts the fake API, the app (the interactive pin as
// agents.claude.command, for the managed session and the resumed TUI
// alike) and a managed session; world starts what the hand-over opens in
// (after the app, so its cleanup runs first) given the CLI's hermetic
// environment, and returns what the app's command lines add to theirs.
func startClaudeHandover(t *testing.T, world func(hermetic []string) []string) *claudeHandover {
	t.Helper()
	cw := &claudeHandover{bin: interactiveClaude(t)}
	home := t.TempDir()
	cw.work = t.TempDir()
	api, proxy := claudeTerminalFakes(t, home, cw.work)
	cw.api = api
	run := testdir.Short(t, "xr") // short: the CLI's inbox socket
	hermetic := append(fakeapi.HermeticEnv(home, api.URL(), proxy), "XDG_RUNTIME_DIR="+run)
	cw.h = newAppE2E(t, `{"turns": [[]]}`)
	h := cw.h
	h.env = append(h.env, "HOME="+home, "TMUX=")
	h.env = append(h.env, hermetic...)
	h.env = append(h.env, world(hermetic)...)
	// The interactive pin for both ends: the resume opens the managed
	// command's own TUI. (The managed pin, 2.1.197, passed the tmux test as
	// well when measured: its TUI found 0.9 s after the hand-over.)
	h.mustCLI("settings", "set", "agents.claude.command", cw.bin)
	h.start()
	cw.id = strings.TrimSpace(h.mustCLI("new", "--cwd", cw.work, "--name", "handed", "say hello [[scenario:text]]"))
	cw.s = waitShow(t, h, cw.id, 90*time.Second, "done with its first turn", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.AgentSessionID != ""
	})
	return cw
}

// A managed Claude Code session (the real CLI on the fake API) continued
// in a terminal: `handover` stops it between turns and opens `claude
// --resume ID` in a new window of the running tmux server; the app takes
// that process as the same session (ls lists it once, as a terminal
// session, with the same timeline and handed_over), and a prompt typed in
// the pane is answered by the fake API.
func TestHandoverClaudeToTmux(t *testing.T) {
	t.Parallel()
	var tm *handoverTmux
	cw := startClaudeHandover(t, func(hermetic []string) []string {
		tm = startHandoverTmux(t, hermetic)
		return []string{"TMUX_TMPDIR=" + tm.dir}
	})
	h, api, bin, work, id, s := cw.h, cw.api, cw.bin, cw.work, cw.id, cw.s
	sid, managedPID := s.AgentSessionID, s.PID

	// Nowhere to open (no tmux server on that socket directory, no
	// display): refused before anything is stopped, the session as it was.
	saved := h.env
	empty := testdir.Short(t, "tn") // not reaped by name now: the world still runs
	h.env = append(slices.Clone(saved), "TMUX_TMPDIR="+empty)
	code, _, errOut := h.cli("handover", id)
	h.env = saved
	if code == 0 || !strings.Contains(errOut, "was left as it was") || !strings.Contains(errOut, "no tmux server runs") {
		t.Fatalf("handover with nowhere to open: exit %d, %q", code, errOut)
	}
	if now := showJSON(t, h, id); now.Source != sessions.Managed || !now.ProcessAlive || now.PID != managedPID {
		t.Fatalf("after the refused hand-over: %+v", now)
	}
	// Another machine's session: its terminal would open there.
	if code, _, errOut := h.cli("--machine", "gpu", "handover", id); code == 0 || !strings.Contains(errOut, "cannot be continued in a terminal from here") {
		t.Errorf("handover --machine: exit %d, %q", code, errOut)
	}

	start := time.Now()
	out := ""
	code, out, errOut = h.cli("handover", id)
	t.Logf("handover took %s: exit %d\n%s%s", time.Since(start).Round(time.Millisecond), code, out, errOut)
	if code != 0 || !strings.Contains(out, "exited when its input closed") || !strings.Contains(out, "opened tmux window home:1.0 running "+bin+" --resume "+sid) {
		t.Fatalf("handover: exit %d, %q %q", code, out, errOut)
	}
	if pidAlive(managedPID) {
		t.Errorf("the managed process %d still runs", managedPID)
	}
	panePID, _ := strconv.Atoi(tm.run("display-message", "-p", "-t", "home:1.0", "#{pane_pid}"))
	if got := tm.run("display-message", "-p", "-t", "home:1.0", "#{pane_current_path}"); got != work {
		t.Errorf("the window runs in %s, want %s", got, work)
	}

	found := time.Now()
	s = waitShow(t, h, id, 60*time.Second, "continued in the terminal", func(s sessions.Session) bool {
		return s.Source != sessions.Managed && s.ProcessAlive && s.PID == panePID
	})
	t.Logf("found as the same session %s after the hand-over: agent session %s (was %s)", time.Since(found).Round(time.Millisecond), s.AgentSessionID, sid)
	if s.AgentSessionID != sid {
		t.Errorf("claude --resume made agent session %s, want it kept: %s", s.AgentSessionID, sid)
	}
	listedOnce := func() {
		t.Helper()
		var list []sessions.Session
		if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != id || list[0].Source == sessions.Managed {
			t.Fatalf("ls --json lists %+v, want session %s once, as a terminal session", list, id)
		}
	}
	listedOnce()

	// A prompt typed in the pane, answered by the fake API.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(tm.screen("home:1.0"), "❯"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed TUI drew no prompt box:\n%s", tm.screen("home:1.0"))
		}
	}
	before := s.TurnGeneration
	const typed = "and now in the terminal [[scenario:text]]"
	tm.submit("home:1.0", typed, func() bool { return showJSON(t, h, id).TurnGeneration > before })
	s = waitShow(t, h, id, 90*time.Second, "answered in the terminal", func(s sessions.Session) bool {
		return s.TurnGeneration > before && s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview
	})
	var asked bool
	for _, c := range api.Log() {
		if strings.Contains(c.Request.LastUserText(), "and now in the terminal") {
			asked = true
		}
	}
	if !asked {
		t.Fatalf("the fake API saw no request with the typed prompt; the pane shows:\n%s", tm.screen("home:1.0"))
	}
	listedOnce()
	tl := h.mustCLI("timeline", id)
	for _, want := range []string{"process started", "handover stopped", "handed over", "keeps the agent session id " + sid} {
		if !strings.Contains(tl, want) {
			t.Errorf("the timeline has no %q:\n%s", want, tl)
		}
	}
	// Handed over once: a second hand-over is refused, saying why.
	if code, _, errOut := h.cli("handover", id); code == 0 || !strings.Contains(errOut, "runs in a terminal already") {
		t.Errorf("a second handover: exit %d, %q", code, errOut)
	}
}

// The same for Codex: a managed session (the real 0.171.0 app-server on
// the fake Responses API) handed over opens `codex resume --no-daemon ID`
// in a new tmux window; the TUI's process is taken as the same session,
// and a prompt typed in the pane is answered.
func TestHandoverCodexToTmux(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, cxfake.Config{})
	// Trusted beforehand: the TUI would ask first.
	fh, err := os.OpenFile(filepath.Join(h.home, ".codex", "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(fh, "\n[projects.%q]\ntrust_level = \"trusted\"\n", h.work)
	fh.Close()
	tm := startHandoverTmux(t, h.env)
	h.env = append(h.env, "TMUX_TMPDIR="+tm.dir, "TMUX=")

	id := h.launch("[[scenario:text]] hi", "--name", "handed")
	s := h.waitFor(id, "done with its first turn", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.AgentSessionID != ""
	})
	sid := s.AgentSessionID
	start := time.Now()
	out, errOut, code := h.cli("handover", id)
	t.Logf("handover took %s: exit %d\n%s%s", time.Since(start).Round(time.Millisecond), code, out, errOut)
	if code != 0 || !strings.Contains(out, "opened tmux window home:1.0 running ") || !strings.Contains(out, " resume --no-daemon "+sid) {
		t.Fatalf("handover: exit %d, %q %q", code, out, errOut)
	}
	found := time.Now()
	s = h.waitForWithin(id, "continued in the terminal", 60*time.Second, func(s sessions.Session) bool {
		return s.Source != sessions.Managed && s.ProcessAlive && s.PID > 0
	})
	t.Logf("found as the same session %s after the hand-over: agent session %s (was %s), pid %d",
		time.Since(found).Round(time.Millisecond), s.AgentSessionID, sid, s.PID)
	if s.AgentSessionID != sid {
		t.Errorf("codex resume made thread %s, want it kept: %s", s.AgentSessionID, sid)
	}
	if list := h.ls(); len(list) != 1 || list[0].ID != id || list[0].Source == sessions.Managed {
		t.Fatalf("ls --json lists %+v, want session %s once, as a terminal session", list, id)
	}

	// A prompt typed in the pane (Enter again while the TUI has not taken
	// it, as a person watching would), answered by the fake API.
	before := s.TurnGeneration
	const typed = "[[scenario:text]] and now in the terminal"
	time.Sleep(2 * time.Second) // the TUI draws its composer
	tm.submit("home:1.0", typed, func() bool { return h.show(id).TurnGeneration > before })
	h.waitForWithin(id, "answered in the terminal", 60*time.Second, func(s sessions.Session) bool {
		return s.TurnGeneration > before && s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview
	})
	var asked bool
	for _, r := range h.api.Requests("text") {
		if strings.Contains(r.UserText, "and now in the terminal") {
			asked = true
		}
	}
	if !asked {
		t.Fatalf("the fake API saw no request with the typed prompt; the pane shows:\n%s", tm.screen("home:1.0"))
	}
	if list := h.ls(); len(list) != 1 || list[0].ID != id {
		t.Fatalf("after the turn ls --json lists %+v", list)
	}
	tl := h.mustCLI("timeline", id)
	for _, want := range []string{"handover stopped", "handed over", "keeps the agent session id " + sid} {
		if !strings.Contains(tl, want) {
			t.Errorf("the timeline has no %q:\n%s", want, tl)
		}
	}
}

// With no tmux server, the hand-over opens desktop.terminal (xterm, on Xvfb
// under openbox): the resumed CLI runs in a new xterm window, and the app
// takes it as the same session, located in that xterm.
func TestHandoverClaudeToXterm(t *testing.T) {
	t.Parallel()
	var x *x11World
	cw := startClaudeHandover(t, func([]string) []string {
		empty := testdir.Short(t, "tn") // no tmux server answers here
		x = startX11World(t, t.TempDir())
		return []string{"TMUX_TMPDIR=" + empty}
	})
	h, id, sid := cw.h, cw.id, cw.s.AgentSessionID
	h.mustCLI("settings", "set", "desktop.terminal", "xterm")
	saved := h.env
	h.env = append(slices.Clone(saved), "DISPLAY="+x.display)
	code, out, errOut := h.cli("handover", id)
	h.env = saved
	t.Logf("handover: exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, "opened a new xterm window running "+cw.bin+" --resume "+sid) {
		t.Fatalf("handover: exit %d, %q %q", code, out, errOut)
	}
	s := waitShow(t, h, id, 60*time.Second, "continued in the xterm", func(s sessions.Session) bool {
		return s.Source != sessions.Managed && s.ProcessAlive && s.Terminal != nil && s.Terminal.Holder != nil
	})
	// The xterm outlives the CLI that opened it (its own session): stopped here.
	xterm := s.Terminal.Holder.PID
	t.Cleanup(func() {
		syscall.Kill(-s.PID, syscall.SIGKILL)
		syscall.Kill(xterm, syscall.SIGKILL)
	})
	if s.Terminal.Kind != termloc.KindEmulator || s.Terminal.Holder.Name != "xterm" || s.AgentSessionID != sid {
		t.Fatalf("continued as %+v in %s", s, s.Terminal)
	}
	x.window(xterm) // its window is managed by the window manager
	if list := lsJSON(t, h); len(list) != 1 || list[0].ID != id {
		t.Fatalf("ls --json lists %+v", list)
	}
}

// lsJSON is `ls --json`.
func lsJSON(t *testing.T, h *appE2E) []sessions.Session {
	t.Helper()
	var list []sessions.Session
	if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	return list
}
