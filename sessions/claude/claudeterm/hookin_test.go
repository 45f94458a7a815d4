package claudeterm

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// sendHook writes one event the way session-supervisor-hook does.
func sendHook(t *testing.T, socket string, ev map[string]any) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := json.Marshal(ev)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// A hook event wakes the session's observer at once (the safety poll is an
// hour and nothing watches the files here) and marks the session hooked.
func TestHookEventWakesObserverAndMarksHooked(t *testing.T) {
	g := newSourceRig(t)
	g.src.Poll = time.Hour
	g.src.HookSocket = filepath.Join(g.src.ConfigDir, HookSocketName)
	g.src.Probe = func(SessionFile) (bool, bool) { return true, true }
	f := sessionFileFor(os.Getpid(), "sid-h", g.cwd)
	g.register(f)
	g.transcript("sid-h", recPrompt, recEnd)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := g.src.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list := <-watch
	if len(list) != 1 {
		t.Fatalf("discovered %+v", list)
	}
	if st, err := os.Stat(g.src.HookSocket); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("hook socket: %v %v", st, err)
	}
	ch, err := g.src.Observe(ctx, list[0])
	if err != nil {
		t.Fatal(err)
	}
	ev := waitObserved(t, ch, sessions.WaitingOnUser)
	if ev.Observed.Hooked {
		t.Fatal("hooked before any hook event")
	}
	// Events of another session, garbage and an empty probe change nothing.
	sendHook(t, g.src.HookSocket, map[string]any{"hook_event_name": "Stop", "session_id": "other"})
	c, _ := net.Dial("unix", g.src.HookSocket)
	c.Write([]byte("{not json"))
	c.Close()
	sendHook(t, g.src.HookSocket, map[string]any{"hook_event_name": "UserPromptSubmit", "session_id": "sid-h", "prompt": "go on"})
	ev = waitObserved(t, ch, sessions.Working)
	if !ev.Observed.Hooked || ev.Observed.Evidence != "you sent a prompt (UserPromptSubmit hook)" {
		t.Fatalf("after UserPromptSubmit: %+v", ev.Observed)
	}
	sendHook(t, g.src.HookSocket, map[string]any{"hook_event_name": "Notification", "session_id": "sid-h",
		"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	ev = waitObserved(t, ch, sessions.WaitingOnUser)
	if ev.Observed.Wait != sessions.WaitPermission || !ev.Observed.Hooked {
		t.Fatalf("after the permission notification: %+v", ev.Observed)
	}

	// The event naming another session came from a process that does not
	// run under it (this test runs under sid-h's registered pid): refused
	// and counted once its settle passed, never evidence.
	var st HookState
	for deadline := time.Now().Add(5 * hookSettle); ; time.Sleep(20 * time.Millisecond) {
		g.src.hookHub().flush()
		var err error
		if st, err = ReadHookState(g.src.ConfigDir); err != nil {
			t.Fatal(err)
		}
		if st.Refused > 0 || time.Now().After(deadline) {
			break
		}
	}
	if st.PID != os.Getpid() || st.Events != 2 || st.Refused != 1 || len(st.Sessions) != 1 || st.Sessions[0].SessionID != "sid-h" ||
		st.Sessions[0].Count != 2 || st.Sessions[0].Event != "Notification" {
		t.Fatalf("state %+v", st)
	}

	// A second listener on the same socket is refused; the first keeps it.
	other := &Source{ConfigDir: g.src.ConfigDir, HookSocket: g.src.HookSocket}
	if err := other.listenHooks(ctx); !errors.Is(err, ErrHookSocketInUse) {
		t.Fatalf("second listener: %v", err)
	}
	cancel()
	for range ch {
	}
}

// A socket an app left behind when it crashed is replaced.
func TestHookListenerReplacesAStaleSocket(t *testing.T) {
	g := newSourceRig(t)
	path := filepath.Join(g.src.ConfigDir, HookSocketName)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody listens
	g.src.HookSocket = path
	g.register(sessionFileFor(os.Getpid(), "s1", g.cwd)) // the sender runs under s1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := g.src.listenHooks(ctx); err != nil {
		t.Fatal(err)
	}
	sub := g.src.hookHub().subscribe("*")
	defer sub.close()
	sendHook(t, path, map[string]any{"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"})
	select {
	case <-sub.C():
	case <-time.After(5 * time.Second):
		t.Fatal("no event through the replaced socket")
	}
	if e, ok := g.src.hookHub().latest("s1"); !ok || e.Name != "SessionStart" || e.At.IsZero() {
		t.Fatalf("latest %+v %v", e, ok)
	}
}

// The sender's ancestry decides: the hook program runs a few levels under
// the CLI whose session file names the event's session.
func TestHookSenderRunsUnder(t *testing.T) {
	dir := t.TempDir()
	for pid, sid := range map[int]string{20: "sid-a", 60: "sid-b"} {
		b, _ := json.Marshal(SessionFile{PID: pid, SessionID: sid, Cwd: "/w", StartedAt: 1, Kind: "interactive"})
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// 1 ← 10 (a shell) ← 20 (claude, sid-a) ← 30 (sh) ← 40 (the hook);
	// 10 ← 60 (claude, sid-b) ← 70 (a tool); 7 ↔ 8 a cycle.
	parents := map[int]int{10: 1, 20: 10, 30: 20, 40: 30, 60: 10, 70: 60, 7: 8, 8: 7}
	h := hookSender{sessionsDir: dir, parent: func(pid int) int { return parents[pid] }}
	tests := []struct {
		pid  int
		sid  string
		want bool
	}{
		{40, "sid-a", true},  // the hook under its own CLI
		{20, "sid-a", true},  // the CLI itself
		{40, "sid-b", false}, // forging another session's state
		{70, "sid-a", false}, // a tool of session b
		{70, "sid-b", true},  // …may speak for its own
		{10, "sid-a", false}, // the user's shell is above the CLI, not under it
		{7, "sid-a", false},  // a cycle ends the walk
		{99, "sid-a", false}, // an unknown process
	}
	for _, tt := range tests {
		if got := h.runsUnder(h.ancestryOf(tt.pid), tt.sid); got != tt.want {
			t.Errorf("runsUnder(%d, %s) = %v, want %v", tt.pid, tt.sid, got, tt.want)
		}
	}
}

// The CLI can run its SessionStart hook before it writes its session file:
// an event from a sender whose session file appears within the settle is
// taken; one whose file never names the session is refused after it.
func TestHookEventWaitsForTheSessionFile(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fileAfter time.Duration // 0: never
		sid       string
		ok        bool
	}{
		{"file written after the hook", 600 * time.Millisecond, "sid-late", true},
		{"file written at the settle's end", hookSettle - settlePoll, "sid-late", true},
		{"file never written", 0, "sid-late", false},
		{"file names another session", 100 * time.Millisecond, "sid-other", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				// 20 is the CLI, 30 its hook.
				h := hookSender{sessionsDir: dir, parent: func(pid int) int { return map[int]int{30: 20, 20: 1}[pid] }, settle: hookSettle}
				if tt.fileAfter > 0 {
					go func() {
						time.Sleep(tt.fileAfter)
						b, _ := json.Marshal(SessionFile{PID: 20, SessionID: "sid-late", Cwd: "/w", StartedAt: 1, Kind: "interactive"})
						if err := os.WriteFile(filepath.Join(dir, "20.json"), b, 0o600); err != nil {
							t.Error(err)
						}
					}()
				}
				start := time.Now()
				got := h.confirms(h.ancestryOf(30), tt.sid)
				if got != tt.ok {
					t.Fatalf("confirms = %v, want %v", got, tt.ok)
				}
				if waited := time.Since(start); !tt.ok && waited < hookSettle {
					t.Fatalf("refused after %v, before the settle (%v) passed", waited, hookSettle)
				}
				synctest.Wait()
			})
		})
	}
}

// FuzzReadHookEvent feeds arbitrary bytes to the hook listener's reader
// over a real socket: it never panics, reads at most maxHookEvent bytes,
// and takes an event only with its session and name.
func FuzzReadHookEvent(f *testing.F) {
	for _, seed := range []string{
		`{"hook_event_name":"Stop","session_id":"s1"}`,
		`{"hook_event_name":"Notification","session_id":"s1","notification_type":"permission_prompt","message":"\u001b[31m"}`,
		`{"hook_event_name":"","session_id":"s1"}`, `{"session_id":"s1"}`, `{}`, `null`, ``, `{`, `[]`,
		`{"hook_event_name":"Stop","session_id":"s1","error":{"nested":[1,2,3]}}`,
		strings.Repeat(`{"a":`, 5000),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		go func() {
			client.Write(b)
			client.Close()
		}()
		ev, ok, refused := readHookEvent(server, hookSender{parent: func(int) int { return 0 }})
		if refused {
			t.Fatal("a pipe has no peer to refuse")
		}
		if ok && (ev.SessionID == "" || ev.Name == "" || ev.At.IsZero()) {
			t.Fatalf("took an event without its session or name: %+v", ev)
		}
	})
}
