//go:build linux

package e2e

// Remote machines: Debian's OpenSSH server on 127.0.0.1 at a free port,
// with a generated host key and client key, reached through a client
// ssh_config (machines.ssh_command), exactly as ssh reaches another host.
// The "remote" is a second app with its own HOME and data directory
// running a real Claude Code CLI against the fake API.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// sshServer is one test's sshd and the client configuration that reaches
// it under several host aliases.
type sshServer struct {
	dir    string
	config string // the client's ssh_config
	port   int
	sshd   string // the daemon's path
	log    *syncBuffer
	cmd    *exec.Cmd     // the running daemon
	done   chan struct{} // closed when cmd has exited
}

// startSSHD starts sshd in the foreground on 127.0.0.1 and writes a client
// ssh_config with these aliases: "good" (the right host key and an
// authorized key), "wronghostkey" (a known_hosts naming another key) and
// "refusedkey" (a client key the server does not know).
func startSSHD(t *testing.T) *sshServer {
	t.Helper()
	sshd := requiretool.Any(t, "sshd", "/usr/sbin/sshd")
	requireTools(t, "ssh", "ssh-keygen")
	dir := testdir.Short(t, "sshd")
	keygen := func(name string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %s: %v\n%s", name, err, out)
		}
	}
	for _, k := range []string{"host", "otherhost", "client", "stranger"} {
		keygen(k)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("authorized_keys", read("client.pub")+"\n")
	write("known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", port, read("host.pub")))
	write("wrong_known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", port, read("otherhost.pub")))
	write("sshd_config", fmt.Sprintf(`ListenAddress 127.0.0.1
Port %d
HostKey %s/host
AuthorizedKeysFile %s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile %s/sshd.pid
MaxStartups 200
`, port, dir, dir, dir))
	alias := func(name, known, key string) string {
		return fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  UserKnownHostsFile %s/%s\n  IdentityFile %s/%s\n", name, port, dir, known, dir, key)
	}
	write("ssh_config", alias("good", "known_hosts", "client")+alias("wronghostkey", "wrong_known_hosts", "client")+
		alias("refusedkey", "known_hosts", "stranger")+"Host *\n  StrictHostKeyChecking yes\n  IdentitiesOnly yes\n  GlobalKnownHostsFile /dev/null\n")
	if os.Geteuid() == 0 {
		// sshd run by root wants its privilege separation directory,
		// which the package's service unit would create.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := &sshServer{dir: dir, config: filepath.Join(dir, "ssh_config"), port: port, sshd: sshd, log: &syncBuffer{}}
	t.Cleanup(func() {
		srv.stop(t)
		if t.Failed() {
			t.Logf("sshd log:\n%s", srv.log)
		}
	})
	srv.start(t)
	return srv
}

// start runs the daemon (again, after stop) and waits until it listens.
func (s *sshServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(s.sshd, "-D", "-e", "-f", filepath.Join(s.dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("sshd exited:\n%s", s.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen on %d:\n%s", s.port, s.log)
		}
	}
}

// stop kills the daemon and every connection it serves (their sshd
// processes and what runs under them), as a dropped network or a machine
// gone to sleep ends them: each client's ssh finds its connection cut.
func (s *sshServer) stop(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	for _, pid := range proctree.Descendants(s.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// machineRow is one row of `machines ls --json`.
type machineRow struct {
	Name       string `json:"name"`
	Reachable  bool   `json:"reachable"`
	Version    string `json:"version"`
	APIVersion int    `json:"api_version"`
	Sessions   int    `json:"sessions"`
	LastSeen   string `json:"last_seen"`
	Error      string `json:"error"`
}

func (h *ce2eHarness) machines() map[string]machineRow {
	h.t.Helper()
	var rows []machineRow
	if err := json.Unmarshal([]byte(h.mustCLI("machines", "ls", "--json")), &rows); err != nil {
		h.t.Fatalf("machines ls --json: %v", err)
	}
	out := map[string]machineRow{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
}

// A managed session on another machine, driven from this one: listed,
// launched, followed through its turn and acknowledged through ssh; the
// ways a machine cannot be reached each say why.
func TestRemoteMachineOverSSH(t *testing.T) {
	t.Parallel()
	srv := startSSHD(t)
	remote := startAgentE2E(t, claudeE2EAgent, e2eOpts{})
	appBin, _ := testBinaries(t)
	data := testdir.Short(t, "ssl")
	local := &ce2eHarness{t: t, app: appBin, home: t.TempDir(), data: data, work: t.TempDir(),
		env: append(os.Environ(), "HOME="+t.TempDir())}
	t.Cleanup(local.cleanup)

	local.mustCLI("settings", "set", "machines.ssh_command", "ssh -F "+srv.config)
	onRemote := appBin + " --data-dir " + remote.data
	local.mustCLI("machines", "add", "r1", "good", "--command", onRemote)
	local.mustCLI("machines", "add", "wronghostkey", "wronghostkey", "--command", onRemote)
	local.mustCLI("machines", "add", "refusedkey", "refusedkey", "--command", onRemote)
	local.mustCLI("machines", "add", "noapp", "good", "--command", "/nonexistent/session-supervisor")
	idle := testdir.Short(t, "ssi")
	local.mustCLI("machines", "add", "nosupervisor", "good", "--command", appBin+" --data-dir "+idle)

	rows := local.machines()
	if r := rows["r1"]; !r.Reachable || r.APIVersion != 1 || r.Version == "" || r.Sessions != 0 || r.LastSeen == "" || r.Error != "" {
		t.Errorf("machines ls: r1 = %+v, want reachable, API 1, a version, no sessions, seen now", r)
	}
	for name, want := range map[string]string{
		"wronghostkey": "Host key verification failed",
		"refusedkey":   "Permission denied",
		"noapp":        "the app is not installed there",
		"nosupervisor": "no Session Supervisor runs on this machine",
	} {
		if r := rows[name]; r.Reachable || !strings.Contains(r.Error, want) || !strings.HasPrefix(r.Error, "machine "+name+": ") {
			t.Errorf("machines ls: %s = %+v, want unreachable with an error naming it and saying %q", name, r, want)
		}
	}
	if _, errOut, code := local.cli("--machine", "elsewhere", "ls"); code == 0 || !strings.Contains(errOut, "no machine named elsewhere") {
		t.Errorf("--machine of an unknown machine: exit %d, %q", code, errOut)
	}

	// The turn, from this machine.
	local.machine = "r1"
	out := local.mustCLI("new", "--agent", "claude", "--cwd", remote.work, "--name", "far", "[[scenario:text]] hi")
	id := strings.TrimSpace(out)
	s := local.waitFor(id, "the remote turn to wait for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.Name != "far" || s.Cwd != remote.work {
		t.Errorf("the remote session as this machine shows it: name %q cwd %q", s.Name, s.Cwd)
	}
	if got := remote.show(id); got.State != sessions.WaitingOnUser {
		t.Errorf("the remote's own show: %v, want the same session waiting on the user", got.State)
	}
	// watch with machines configured follows every machine at once, each
	// event naming its machine.
	w := startMergedWatch(t, appBin, local.data)
	w.waitFor(t, "r1's snapshot listing the session", func(l mergedLine) bool {
		return l.Machine == "r1" && l.Type == "snapshot" && slices.ContainsFunc(l.Sessions, func(s sessions.Session) bool { return s.ID == id })
	})
	local.mustCLI("ack", id)
	local.waitFor(id, "ack through ssh to make it idle", ce2eIn(sessions.Idle))
	w.waitFor(t, "r1's event of the session going idle", func(l mergedLine) bool {
		return l.Machine == "r1" && l.Session != nil && l.Session.ID == id && l.Session.State == sessions.Idle
	})
	local.machine = ""
	if r := local.machines()["r1"]; r.Sessions != 1 {
		t.Errorf("machines ls after the launch: r1 lists %d sessions, want 1", r.Sessions)
	}
	// ls with machines configured: every machine's sessions, each row
	// naming its machine; what could not be asked is named on stderr.
	out, errOut, code := local.cli("ls", "--json")
	var rows2 []struct {
		Machine string `json:"machine"`
		ID      string `json:"id"`
		Name    string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &rows2); err != nil || code != 0 {
		t.Fatalf("ls --json over machines: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(rows2) != 1 || rows2[0].Machine != "r1" || rows2[0].ID != id || rows2[0].Name != "far" {
		t.Errorf("ls --json over machines = %+v, want the one session of r1", rows2)
	}
	for _, name := range []string{"local", "wronghostkey", "refusedkey", "noapp", "nosupervisor"} {
		if !strings.Contains(errOut, name+": ") {
			t.Errorf("ls over machines does not say why %s was not listed:\n%s", name, errOut)
		}
	}
	if out := local.mustCLI("ls"); !strings.Contains(out, "MACHINE") || !strings.Contains(out, "r1") || !strings.Contains(out, "far") {
		t.Errorf("ls over machines:\n%s", out)
	}
	// usage --by machine sums each machine's sessions: r1's turn, priced.
	out, errOut, code = local.cli("usage", "--by", "machine", "--json")
	var report struct {
		Rows []struct {
			Key      string          `json:"key"`
			Sessions int             `json:"sessions"`
			Tokens   sessions.Tokens `json:"tokens"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 0 {
		t.Fatalf("usage --by machine: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(report.Rows) != 1 || report.Rows[0].Key != "r1" || report.Rows[0].Sessions != 1 || report.Rows[0].Tokens.Output == 0 {
		t.Errorf("usage --by machine = %+v, want r1's one session with its tokens", report.Rows)
	}
	// doctor checks each machine: the one that answers is ok, the others
	// warn with their reason and what to do.
	out, _, _ = local.cli("doctor", "--json")
	var rep struct {
		Checks []struct{ Name, Status, Detail, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	checks := map[string]string{}
	for _, ch := range rep.Checks {
		checks[ch.Name] = ch.Status + ": " + ch.Detail + " / " + ch.Fix
	}
	for name, want := range map[string]string{
		"machine r1":           "ok: good: app ",
		"machine wronghostkey": "warn: wronghostkey: machine wronghostkey: Host key verification failed",
		"machine refusedkey":   "without a prompt",
		"machine noapp":        "--command PATH",
		"machine nosupervisor": "service start",
	} {
		if !strings.Contains(checks[name], want) {
			t.Errorf("doctor: %s = %q, want it to say %q", name, checks[name], want)
		}
	}
	remote.expectStatuses("text", 200)
	remote.stopApp()
}

// mergedLine is one line of `watch --json` with machines configured.
type mergedLine struct {
	Machine  string             `json:"machine"`
	Type     string             `json:"type"`
	Session  *sessions.Session  `json:"session"`
	Sessions []sessions.Session `json:"sessions"`
}

// mergedWatch is a running `watch --json` and the lines it printed.
type mergedWatch struct {
	mu    sync.Mutex
	lines []mergedLine
}

func startMergedWatch(t *testing.T, appBin, data string) *mergedWatch {
	t.Helper()
	cmd := exec.Command(appBin, "--data-dir", data, "watch", "--json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &syncBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &mergedWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var l mergedLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				w.mu.Lock()
				w.lines = append(w.lines, l)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		_ = cmd.Wait()
	})
	return w
}

func (w *mergedWatch) waitFor(t *testing.T, what string, cond func(mergedLine) bool) {
	t.Helper()
	deadline := time.Now().Add(ce2eWait)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		found := slices.ContainsFunc(w.lines, cond)
		w.mu.Unlock()
		if found {
			return
		}
		time.Sleep(ce2ePoll)
	}
	t.Fatalf("watch over machines never printed %s", what)
}

// The desktop with another machine configured, over the real sshd: the
// tray lists the remote's session under the machine's heading (this
// machine's group first), its escalation is notified here naming the
// machine, and the tray's Acknowledge on it reaches the remote's
// supervisor through ssh.
func TestDesktopShowsRemoteMachine(t *testing.T) {
	t.Parallel()
	srv := startSSHD(t)
	d := startDesktop(t)
	bin, fake := testBinaries(t)

	remote := startRemoteSupervisor(t, bin, d.script, [2]string{"agents.claude.command", fake},
		[2]string{"supervisor.tick_seconds", "5"}, [2]string{"supervisor.nudge_max_attempts", "0"})
	remoteDir, onRemote, remoteSup := remote.dir, remote.cli, remote.proc

	if out, err := d.cli("settings", "set", "machines.ssh_command", "ssh -F "+srv.config); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := d.cli("machines", "add", "r1", "good", "--command", bin+" --data-dir "+remoteDir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	desk := startApp(t, bin, append(os.Environ(), "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.busAddr,
		"FAKE_CLAUDE_SCRIPT="+d.script, "LANG=en_US.UTF-8"), "--data-dir", d.dir, "run")
	eventually(t, "the desktop's tray registration", 30*time.Second, func() bool { return d.sni.first() != "" })
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", desk.cmd.Process.Pid)
	var menu menuItem
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last tray menu: %q\nnotifications: %q\nremote:\n%s\ndesktop:\n%s",
				labelsOf(menu), d.notes.list(), remoteSup.out.String(), desk.out.String())
		}
	})
	// index is the position of the first top-level item starting with
	// prefix, or -1.
	index := func(prefix string) int {
		for i, it := range menu.Children {
			if strings.HasPrefix(it.Label, prefix) {
				return i
			}
		}
		return -1
	}
	// menuUntil reads the tray's menu into menu until ok holds.
	menuUntil := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		eventually(t, what, limit, func() bool {
			m, err := getLayout(d.conn, dest, 0)
			if err != nil {
				return false
			}
			menu = m
			return ok()
		})
	}
	menuUntil("the tray heading r1 as connected", 60*time.Second, func() bool { return index("r1 — connected") >= 0 })
	if here := index("This machine"); here < 0 || here > index("r1 — connected") {
		t.Fatalf("this machine's heading at %d, r1's at %d: want this machine first", here, index("r1 — connected"))
	}

	id := strings.TrimSpace(onRemote("new", "--cwd", d.cwd, "--name", "far", "build it"))
	menuUntil("the remote session under r1's heading", 60*time.Second, func() bool {
		at := index("⚠ far")
		return at > index("r1 — connected") && index("r1 — connected") > index("This machine")
	})
	eventually(t, "the remote escalation notified naming r1", 60*time.Second, func() bool {
		return slices.ContainsFunc(d.notes.list(), func(c string) bool { return strings.HasPrefix(c, "r1: far needs attention|") })
	})
	for _, c := range d.notes.list() {
		if strings.HasPrefix(c, "far needs attention") {
			t.Errorf("a notification of the remote session without its machine: %q", c)
		}
	}

	// The window, with the remote machine's group, for a person to look at.
	if open, ok := findItem(menu, "Open Session Supervisor"); ok {
		if err := click(d.conn, dest, open.ID); err != nil {
			t.Errorf("opening the window: %v", err)
		}
		time.Sleep(2 * time.Second)
		screenshot(t, d.display, "desktop-remote-machine.png")
	}

	// The tray's Acknowledge goes through ssh to the remote's supervisor.
	d.clickAcknowledge(dest, menu, "⚠ far")
	eventually(t, "the remote session acknowledged on the remote", 30*time.Second, func() bool {
		var s struct {
			NeedsAttention bool `json:"needs_attention"`
		}
		return json.Unmarshal([]byte(onRemote("show", id, "--json")), &s) == nil && !s.NeedsAttention
	})

	// connectedListedOnce: r1 connected, its session listed once (not
	// twice after a resync).
	connectedListedOnce := func() bool {
		n := 0
		for _, it := range menu.Children {
			if strings.Contains(it.Label, " far — ") {
				n++
			}
		}
		return index("r1 — connected") >= 0 && n == 1
	}

	// The remote's supervisor dies: r1's heading says since when it is
	// reconnecting, and why; restarted, r1 is connected again and its
	// session listed once.
	remoteSup.kill(t)
	// (The first attempt's reason is the stream's end; the next ones are
	// the remote's own words.)
	menuUntil("r1's heading saying it is reconnecting, and why", 30*time.Second, func() bool {
		i := index("r1 — reconnecting since ")
		return i >= 0 && strings.Contains(menu.Children[i].Label, "no Session Supervisor runs")
	})
	screenshot(t, d.display, "desktop-remote-reconnecting.png")
	remoteSup = remote.restart()
	menuUntil("r1 connected again with its session listed once", 60*time.Second, connectedListedOnce)

	// The connection itself drops (sshd and its connections killed, as a
	// network drop or the machine's sleep ends them): within 30 s r1's
	// heading says it is reconnecting; sshd back on the same port, r1 is
	// resynced from its snapshot, its session listed once.
	srv.stop(t)
	dropped := time.Now()
	menuUntil("r1's heading saying it is reconnecting once its connection dropped", 30*time.Second, func() bool {
		return index("r1 — reconnecting since ") >= 0
	})
	t.Logf("r1 shown reconnecting %s after its connection dropped", time.Since(dropped).Round(100*time.Millisecond))
	srv.start(t)
	menuUntil("r1 connected again through the restarted sshd with its session listed once", 60*time.Second, connectedListedOnce)
}

// remoteSupervisor is a headless supervisor standing for another machine:
// its own data directory and HOME, on no session bus (it must not notify
// the test's desktop itself), its fake agent playing a script.
type remoteSupervisor struct {
	t    *testing.T
	bin  string
	dir  string
	env  []string
	proc *appProc
}

// startRemoteSupervisor applies settings (key, value) to a new data
// directory, starts `run --headless` on it and waits for its socket.
func startRemoteSupervisor(t *testing.T, bin, script string, settings ...[2]string) *remoteSupervisor {
	t.Helper()
	r := &remoteSupervisor{t: t, bin: bin, dir: shortTempDir(t)}
	for _, kv := range settings {
		r.cli("settings", "set", kv[0], kv[1])
	}
	r.env = append(os.Environ(), "HOME="+t.TempDir(), "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent",
		"FAKE_CLAUDE_SCRIPT="+script, "LANG=en_US.UTF-8")
	r.restart()
	return r
}

// restart starts the supervisor (again, after a kill) and waits until it
// answers.
func (r *remoteSupervisor) restart() *appProc {
	r.t.Helper()
	r.proc = startApp(r.t, r.bin, r.env, "--data-dir", r.dir, "run", "--headless")
	eventually(r.t, "the remote supervisor's socket", 30*time.Second, func() bool {
		return exec.Command(r.bin, "--data-dir", r.dir, "ls").Run() == nil
	})
	return r.proc
}

// cli runs a command line on the remote's data directory, as someone
// logged in there would, and returns its stdout.
func (r *remoteSupervisor) cli(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, append([]string{"--data-dir", r.dir}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+r.t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("remote %v: %v", args, err)
	}
	return string(out)
}
