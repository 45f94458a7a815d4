package claudeterm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
)

func TestInteractiveClaude(t *testing.T) {
	cases := []struct {
		comm string
		argv []string
		want bool
	}{
		{"claude", []string{"/usr/local/bin/claude"}, true},
		{"claude", []string{"claude", "--resume", "abc"}, true},
		{"claude", []string{"claude", "fix the flaky test"}, true},
		{"claude", []string{"/home/u/.local/share/claude/versions/2.1.100/claude.exe", "--model", "opus"}, true},
		{"node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}, true},
		{"claude", []string{"claude"}, true}, // a node CLI retitled to "claude"
		{"claude", []string{"claude", "-p", "hi"}, false},
		{"claude", []string{"claude", "--print", "--output-format", "stream-json"}, false},
		{"claude", []string{"claude", "mcp", "serve"}, false},
		{"claude", []string{"claude", "--version"}, false},
		{"node", []string{"node", "server.js"}, false},
		{"vim", []string{"vim", "claude"}, false},
		{"claudette", []string{"/bin/claudette"}, false},
		{"claude", nil, false},
	}
	for _, tc := range cases {
		if got := interactiveClaude(tc.comm, tc.argv); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.comm, tc.argv, got, tc.want)
		}
	}
}

func TestConfigDirOf(t *testing.T) {
	for env, want := range map[string]string{
		"PATH=/bin\x00HOME=/home/u\x00":                           "/home/u/.claude",
		"HOME=/home/u\x00CLAUDE_CONFIG_DIR=/etc/cc/\x00":          "/etc/cc",
		"CLAUDE_CONFIG_DIR=\x00HOME=/root":                        "/root/.claude",
		"PATH=/bin":                                               "",
		"CLAUDE_CONFIG_DIR=/x\x00HOME=/y\x00CLAUDE_CONFIG_DIR=/z": "/x",
	} {
		if got := configDirOf(strings.Split(env, "\x00")); got != want {
			t.Errorf("%q: %q, want %q", env, got, want)
		}
	}
}

// fakeOldCLI is a real process that looks like an interactive Claude Code
// CLI older than 2.1.224 in the process table: an executable named claude
// (a copy of sleep), started in cwd with HOME set, registering no session
// file.
type fakeOldCLI struct {
	cmd  *exec.Cmd
	home string
	cwd  string
	src  *Source
}

func startOldCLI(t *testing.T, args ...string) *fakeOldCLI {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the process table is read from /proc")
	}
	bin := filepath.Join(t.TempDir(), "claude")
	copyFile(t, "/bin/sleep", bin)
	home := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "my proj")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"120"}, args...)...)
	cmd.Dir = cwd
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &fakeOldCLI{cmd: cmd, home: home, cwd: cwd, src: &Source{ConfigDir: filepath.Join(home, ".claude"), Poll: time.Minute, TablePoll: 20 * time.Millisecond, TableGrace: time.Nanosecond}}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// transcript appends lines to the CLI's transcript of sid.
func (c *fakeOldCLI) transcript(t *testing.T, sid string, lines ...string) {
	t.Helper()
	p := c.src.TranscriptPath(c.cwd, sid)
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(lines, "\n") + "\n")
	f.Close()
}

// listed waits for a list (what names it in the failure) in which the
// CLI's process is listed and ok holds of its entry (nil: any), and returns
// that entry: a Watch may send lists without it first (its first scan, a
// grace, a transcript not written yet).
func (c *fakeOldCLI) listed(t *testing.T, lists <-chan []sessions.ExternalSession, what string, ok func(sessions.ExternalSession) bool) sessions.ExternalSession {
	t.Helper()
	for {
		for _, l := range observetest.Recv(t, lists, what) {
			if l.PID == c.cmd.Process.Pid && (ok == nil || ok(l)) {
				return l
			}
		}
	}
}

func findProc(t *testing.T, pid int) (ClaudeProc, bool) {
	t.Helper()
	procs, err := ListClaudeProcs()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == pid {
			return p, true
		}
	}
	return ClaudeProc{}, false
}

// The process table finds the fake old CLI with its cwd, start and
// configuration directory, and skips a headless run.
func TestListClaudeProcs(t *testing.T) {
	c := startOldCLI(t)
	headless := startOldCLI(t, "-p")
	var p ClaudeProc
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ok bool
		if p, ok = findProc(t, c.cmd.Process.Pid); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.Cwd != c.cwd || p.ConfigDir != filepath.Join(c.home, ".claude") || p.Stamp == "" ||
		time.Since(p.Started) > time.Minute || time.Since(p.Started) < -time.Second {
		t.Fatalf("found %+v (cwd %s)", p, c.cwd)
	}
	if _, ok := findProc(t, headless.cmd.Process.Pid); ok {
		t.Fatal("a headless claude -p was listed")
	}
}

// An old CLI (no session file) is discovered from the process table, keyed
// on its pid and start, paired with the newest transcript of its cwd
// written since it started (not an older one), observed with the same rule
// stack, offers no inbox, and ends Interrupted when killed mid-tool.
func TestProcessTableSession(t *testing.T) {
	c := startOldCLI(t)
	c.src.Poll = 20 * time.Millisecond // no file notifications in this package
	// A transcript from before the process started is not its own.
	c.transcript(t, "old-session", `{"type":"user","message":{"role":"user","content":"yesterday"}}`)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(c.src.TranscriptPath(c.cwd, "old-session"), past, past)

	lists := observetest.Watch(t, c.src)
	es := c.listed(t, lists, "a list with the old CLI", nil)
	if !strings.HasPrefix(es.Key, fmt.Sprintf("proc-%d-", es.PID)) || es.AgentSessionID != "" || es.Cwd != c.cwd {
		t.Fatalf("discovered %+v", es)
	}
	// The first prompt writes its transcript: the list now names it.
	c.transcript(t, "sid-7", `{"type":"user","message":{"role":"user","content":"# Fix the flaky test\nplease"}}`)
	es = c.listed(t, lists, "the list naming its transcript", func(l sessions.ExternalSession) bool { return l.AgentSessionID == "sid-7" })
	if alive, known := c.src.Alive(es); !alive || !known {
		t.Fatalf("Alive: %v %v", alive, known)
	}
	if c.src.CanNudge(es) {
		t.Fatal("an old CLI has no inbox, yet CanNudge")
	}
	events := observetest.Observe(t, c.src, es)
	c.transcript(t, "sid-7", `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash"}]}}`)
	for {
		ev := observetest.Recv(t, events, "working")
		if ev.Kind == sessions.EvObserved && ev.Observed.State == sessions.Working && ev.Observed.Tool == "Bash" {
			if ev.AgentSessionID != "sid-7" || ev.Observed.Name != "Fix the flaky test" {
				t.Fatalf("observed %+v %+v", ev, *ev.Observed)
			}
			break
		}
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
	var last sessions.ObservedState
	for {
		ev := observetest.Recv(t, events, "the end")
		if ev.Kind == sessions.EvObserved {
			last = *ev.Observed
		}
		if ev.Kind == sessions.EvSessionEnded {
			if last.State != sessions.Interrupted || !strings.Contains(ev.Detail, "process table") {
				t.Fatalf("ended %q after %+v", ev.Detail, last)
			}
			break
		}
	}
	if alive, known := c.src.Alive(es); alive || !known {
		t.Fatalf("Alive after the kill: %v %v", alive, known)
	}
}

// A CLI that registered a session file is listed from it, never a second
// time from the process table; one writing another configuration
// directory is not this source's.
func TestProcessTableSkipsRegisteredAndForeign(t *testing.T) {
	c := startOldCLI(t)
	other := startOldCLI(t)
	os.MkdirAll(c.src.SessionsDir(), 0o700)
	f := sessionFileFor(c.cmd.Process.Pid, "sid-1", c.cwd)
	writeJSON(t, filepath.Join(c.src.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
	lists := observetest.Watch(t, c.src)
	// Every list sent over several table rounds (a list is sent only when
	// it changes).
	check := func(list []sessions.ExternalSession) {
		var keys []string
		for _, l := range list {
			if l.PID == c.cmd.Process.Pid || l.PID == other.cmd.Process.Pid {
				keys = append(keys, l.Key)
			}
		}
		if len(keys) != 1 || keys[0] != f.Key() {
			t.Fatalf("listed %q, want only the session file's %s", keys, f.Key())
		}
	}
	check(observetest.Recv(t, lists, "the first list"))
	deadline := time.After(200 * time.Millisecond)
	for {
		select {
		case l := <-lists:
			check(l)
		case <-deadline:
			return
		}
	}
}

// A process younger than the grace is not listed yet: a current CLI writes
// its session file within it, and would otherwise be listed twice.
func TestProcessTableGrace(t *testing.T) {
	c := startOldCLI(t)
	c.src.TableGrace = 2 * time.Second
	lists := observetest.Watch(t, c.src)
	for _, l := range observetest.Recv(t, lists, "the first list") {
		if l.PID == c.cmd.Process.Pid {
			t.Fatalf("listed within the grace: %+v", l)
		}
	}
	c.listed(t, lists, "the list once the grace is over", nil)
}

// An unreadable session registry (here a plain file where the directory
// should be) hides no CLI of the process table.
func TestProcessTableWhenRegistryUnreadable(t *testing.T) {
	c := startOldCLI(t)
	os.MkdirAll(filepath.Dir(c.src.SessionsDir()), 0o700)
	if err := os.WriteFile(c.src.SessionsDir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	lists := observetest.Watch(t, c.src)
	c.listed(t, lists, "a list with the CLI", nil)
}

// With the process table shared (its one loop scanning, the source reading
// none itself), an old CLI is listed once its grace has passed: the table's
// change wakes the source, and the timer armed for the end of the grace
// lists it, without a poll.
func TestProcessTableShared(t *testing.T) {
	c := startOldCLI(t)
	tab := procwatch.New(procwatch.System())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { tab.Run(ctx, 100*time.Millisecond); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	const grace = 700 * time.Millisecond
	c.src.Table, c.src.TablePoll, c.src.TableGrace = tab, time.Hour, grace
	lists := observetest.Watch(t, c.src)
	l := c.listed(t, lists, "a list with the old CLI", nil)
	if age := time.Since(l.StartedAt); age < grace-50*time.Millisecond || age > grace+time.Second {
		t.Fatalf("listed %v after its start, want after its grace of %v", age, grace)
	}
}
