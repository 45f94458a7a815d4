//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// The desktop smoke test runs the real app (tray, window, notifier) under
// Xvfb with a private D-Bus session bus. The test itself owns the
// notification service and the StatusNotifierWatcher names, so it sees
// exactly what a desktop would: the notifications the app sends and the menu
// it exports (com.canonical.dbusmenu), which it reads and clicks.

// startXvfb starts a virtual display and returns its DISPLAY value.
func startXvfb(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	// A group of its own: Xvfb runs xkbcomp for each client's keymap, and
	// one caught mid-run must die with it, not outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	num, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading Xvfb's display number: %v", err)
	}
	return ":" + strings.TrimSpace(num)
}

// shortTempDir is a temp dir with a short path: unix socket paths are
// limited to about 108 bytes and t.TempDir() paths can be long.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir := testdir.Short(t, "ss")
	reapAtCleanup(t, dir)
	return dir
}

// notifications records org.freedesktop.Notifications.Notify calls.
type notifications struct {
	mu      sync.Mutex
	calls   []string   // "title|body"
	actions [][]string // each notification's actions, as sent
}

func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, summary+"|"+body)
	n.actions = append(n.actions, actions)
	return uint32(len(n.calls)), nil
}

// offering returns the id of the latest notification whose title starts
// with title and that offers action, or 0.
func (n *notifications) offering(title, action string) uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.calls) - 1; i >= 0; i-- {
		if strings.HasPrefix(n.calls[i], title) && slices.Contains(n.actions[i], action) {
			return uint32(i + 1)
		}
	}
	return 0
}

func (n *notifications) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

func (n *notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "smoke-test", "session-supervisor", "1", "1.2", nil
}

func (n *notifications) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.calls...)
}

// watcher records StatusNotifierItem registrations.
type watcher struct {
	mu    sync.Mutex
	items []string
}

func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.HasPrefix(service, "/") {
		w.items = append(w.items, service)
	} else {
		w.items = append(w.items, string(sender))
	}
	return nil
}

func (w *watcher) RegisterStatusNotifierHost(service string) *dbus.Error { return nil }

func (w *watcher) first() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.items) == 0 {
		return ""
	}
	return w.items[0]
}

func ownName(t *testing.T, conn *dbus.Conn, name string) {
	t.Helper()
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v (%v)", name, reply, err)
	}
}

// menuItem is a node of the dbusmenu layout.
type menuItem struct {
	ID       int32
	Label    string
	Children []menuItem
}

type layoutNode struct {
	ID         int32
	Properties map[string]dbus.Variant
	Children   []dbus.Variant
}

// toMenu is the menu as a tray host shows it: an item whose "visible"
// property is false (a place the tray keeps for a session to come) is left
// out, with its submenu.
func toMenu(n layoutNode) menuItem {
	m := menuItem{ID: n.ID}
	if v, ok := n.Properties["label"]; ok {
		m.Label, _ = v.Value().(string)
	}
	for _, c := range n.Children {
		var child layoutNode
		if err := dbus.Store([]any{c.Value()}, &child); err == nil {
			if v, ok := child.Properties["visible"].Value().(bool); ok && !v {
				continue
			}
			m.Children = append(m.Children, toMenu(child))
		}
	}
	return m
}

// menuPath asks the item where its menu lives (the StatusNotifierItem
// "Menu" property); systray versions differ.
func menuPath(conn *dbus.Conn, dest string) (dbus.ObjectPath, error) {
	v, err := conn.Object(dest, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		return "", err
	}
	p, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		return "", fmt.Errorf("the Menu property is %T", v.Value())
	}
	return p, nil
}

func getLayout(conn *dbus.Conn, dest string, parent int32) (menuItem, error) {
	path, err := menuPath(conn, dest)
	if err != nil {
		return menuItem{}, err
	}
	obj := conn.Object(dest, path)
	var rev uint32
	var root layoutNode
	call := obj.Call("com.canonical.dbusmenu.GetLayout", 0, parent, int32(-1), []string{})
	if call.Err != nil {
		return menuItem{}, call.Err
	}
	if err := call.Store(&rev, &root); err != nil {
		return menuItem{}, err
	}
	return toMenu(root), nil
}

func findItem(m menuItem, prefix string) (menuItem, bool) {
	for _, c := range m.Children {
		if strings.HasPrefix(c.Label, prefix) {
			return c, true
		}
	}
	return menuItem{}, false
}

func labelsOf(m menuItem) []string {
	var out []string
	for _, c := range m.Children {
		out = append(out, c.Label)
	}
	return out
}

func click(conn *dbus.Conn, dest string, id int32) error {
	path, err := menuPath(conn, dest)
	if err != nil {
		return err
	}
	return conn.Object(dest, path).
		Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(int32(0)), uint32(0)).Err
}

// desktopWorld is what the desktop tests share: the real binaries, a
// private session bus whose notification service and
// StatusNotifierWatcher are the test's, Xvfb, and a data directory whose
// settings make a session escalate at the first tick, launched with a
// fake agent whose turn dies mid-work (script).
type desktopWorld struct {
	t                                       *testing.T
	bin, busAddr, display, dir, cwd, script string
	conn                                    *dbus.Conn
	notes                                   *notifications
	sni                                     *watcher
}

func startDesktop(t *testing.T) *desktopWorld {
	t.Helper()
	requireTools(t, "Xvfb", "dbus-daemon")
	bin, fake := testBinaries(t)
	d := &desktopWorld{t: t, bin: bin, busAddr: requiretool.SessionBus(t), display: startXvfb(t)}
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatalf("connecting to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	d.conn = conn
	d.notes = &notifications{}
	if err := conn.Export(d.notes, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.freedesktop.Notifications")
	d.sni = &watcher{}
	if err := conn.Export(d.sni, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.kde.StatusNotifierWatcher")

	d.dir = shortTempDir(t)
	d.cwd = t.TempDir()
	// A turn that dies mid-work, with no nudges allowed: the session
	// escalates at the first tick.
	d.script = filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(d.script, []byte(`{"turns":[[
		{"emit":{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}]},"session_id":"$SESSION"}},
		{"exit":3}]]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"agents.claude.command", fake},
		{"supervisor.tick_seconds", "5"},
		{"supervisor.nudge_max_attempts", "0"},
	} {
		if out, err := d.cli("settings", "set", kv[0], kv[1]); err != nil {
			t.Fatalf("settings set %s: %v\n%s", kv[0], err, out)
		}
	}
	return d
}

// acknowledge clicks Acknowledge in the submenu of menu's item whose label
// starts with item (the tray at dest) and waits until session id no longer
// needs attention.
func (d *desktopWorld) acknowledge(dest string, menu menuItem, item, id string) {
	d.t.Helper()
	d.clickAcknowledge(dest, menu, item)
	eventually(d.t, "needs_attention to clear", 10*time.Second, func() bool {
		out, err := d.cli("show", id, "--json")
		var s struct {
			NeedsAttention bool `json:"needs_attention"`
		}
		return err == nil && json.Unmarshal([]byte(out), &s) == nil && !s.NeedsAttention
	})
}

// clickAcknowledge clicks Acknowledge in the submenu of menu's item whose
// label starts with item (the tray at dest).
func (d *desktopWorld) clickAcknowledge(dest string, menu menuItem, item string) {
	d.t.Helper()
	sessionItem, _ := findItem(menu, item)
	var ack menuItem
	// The menu is rebuilt as it changes (an age, a state) and its items get
	// new ids: after a first miss the item is looked up again.
	eventually(d.t, "the session's submenu", 30*time.Second, func() bool {
		m, err := getLayout(d.conn, dest, sessionItem.ID)
		if err == nil {
			var ok bool
			if ack, ok = findItem(m, "Acknowledge"); ok {
				return true
			}
		}
		if root, err := getLayout(d.conn, dest, 0); err == nil {
			sessionItem, _ = findItem(root, item)
		}
		return false
	})
	if err := click(d.conn, dest, ack.ID); err != nil {
		d.t.Fatalf("clicking Acknowledge: %v", err)
	}
}

// cli runs a command line against the data directory and returns stdout
// only: with a C locale Fyne logs a locale warning on stderr at start,
// which is not the command's answer.
func (d *desktopWorld) cli(args ...string) (string, error) {
	cmd := exec.Command(d.bin, append([]string{"--data-dir", d.dir}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, stderr.String())
	}
	return string(out), err
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDesktopSmoke(t *testing.T) {
	t.Parallel()
	d := startDesktop(t)
	bin, dir, cwd, display, busAddr, script := d.bin, d.dir, d.cwd, d.display, d.busAddr, d.script
	conn, notes, sni, cli := d.conn, d.notes, d.sni, d.cli

	app := exec.Command(bin, "--data-dir", dir, "run")
	app.Env = append(os.Environ(), "DISPLAY="+display, "DBUS_SESSION_BUS_ADDRESS="+busAddr,
		"FAKE_CLAUDE_SCRIPT="+script, "LANG=en_US.UTF-8")
	appLog := &syncBuffer{}
	app.Stdout = appLog
	app.Stderr = appLog
	// A process the app started may inherit its output pipes; do not wait
	// for them forever once the app itself has exited.
	app.WaitDelay = 5 * time.Second
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the app has exited; exitErr is then its result.
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = app.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = app.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("app output:\n%s", appLog.String())
		}
	})

	eventually(t, "the app's socket", 30*time.Second, func() bool { _, err := cli("ls"); return err == nil })
	out, err := cli("new", "--cwd", cwd, "--name", "smoke", "build it")
	if err != nil {
		t.Fatalf("new: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)

	// Generous: the notifier runs in the GUI process, which renders in
	// software under Xvfb and shares two cores with the other scenarios.
	t.Cleanup(func() {
		if t.Failed() {
			show, _ := cli("show", id)
			t.Logf("notifications: %q\nthe session: %s", notes.list(), show)
		}
	})
	eventually(t, "the escalation notification", 150*time.Second, func() bool {
		for _, c := range notes.list() {
			if strings.HasPrefix(c, "smoke needs attention|") {
				return true
			}
		}
		return false
	})
	for _, c := range notes.list() {
		if strings.Contains(c, "sk-") || strings.Contains(strings.ToLower(c), "stderr") {
			t.Errorf("notification carries raw text: %q", c)
		}
	}

	eventually(t, "the tray registration", 20*time.Second, func() bool { return sni.first() != "" })
	// The item's well-known name; the registration's sender may be
	// another of the app's bus connections.
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", app.Process.Pid)
	var menu menuItem
	var lastErr error
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last tray menu read: %q, error %v", labelsOf(menu), lastErr)
		}
	})
	eventually(t, "the tray menu listing the escalated session", 20*time.Second, func() bool {
		m, err := getLayout(conn, dest, 0)
		if err != nil {
			lastErr = err
			return false
		}
		menu = m
		_, ok := findItem(m, "⚠ smoke — Needs attention (Interrupted)")
		return ok
	})
	got := labelsOf(menu)
	for _, want := range []string{"1 needs you", "Open Session Supervisor…", "Settings…", "Pause supervisor", "Quit"} {
		found := false
		for _, l := range got {
			if l == want {
				found = true
			}
		}
		if !found {
			t.Errorf("tray menu %q lacks %q", got, want)
		}
	}

	// Click "Pause supervisor": the setting flips. Item ids change when
	// the menu is rebuilt, so each attempt reads the layout afresh.
	eventually(t, "supervisor.enabled to become false after clicking Pause", 20*time.Second, func() bool {
		m, err := getLayout(conn, dest, 0)
		if err != nil {
			return false
		}
		if pause, ok := findItem(m, "Pause supervisor"); ok {
			if err := click(conn, dest, pause.ID); err != nil {
				t.Logf("clicking Pause: %v", err)
			}
		}
		time.Sleep(500 * time.Millisecond)
		out, err := cli("settings", "get", "supervisor.enabled")
		return err == nil && strings.TrimSpace(out) == "false"
	})
	eventually(t, "the Pause item to show as checked", 10*time.Second, func() bool {
		m, err := getLayout(conn, dest, 0)
		if err != nil {
			return false
		}
		menu = m
		_, ok := findItem(m, "1 needs you (supervisor paused)")
		return ok
	})

	// Acknowledge through the session's submenu clears needs-attention.
	d.acknowledge(dest, menu, "⚠ smoke", id)

	// Give the window its coalesced refresh (200 ms) before the picture.
	time.Sleep(time.Second)
	screenshot(t, display, "desktop-smoke.png")

	quit, ok := findItem(menu, "Quit")
	if !ok {
		t.Fatal("no Quit item")
	}
	// The app may be gone before it answers the click (Quit exits the
	// process from the menu's handler): that is the click working, and
	// the exit below is what says so.
	if err := click(conn, dest, quit.ID); err != nil && !strings.Contains(err.Error(), "disconnected from message bus without replying") {
		t.Fatalf("clicking Quit: %v", err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("the app exited with %v after Quit", exitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the app did not quit")
	}
}

// screenshot saves the whole virtual screen under the git-ignored
// screenshots/ folder, for a person to look at.
func screenshot(t *testing.T, display, name string) {
	t.Helper()
	if _, err := exec.LookPath("import"); err != nil {
		t.Logf("no screenshot: ImageMagick's import is not installed")
		return
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "import", "-display", display, "-window", "root", filepath.Join(dir, name))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("screenshot: %v\n%s", err, out)
	}
}
