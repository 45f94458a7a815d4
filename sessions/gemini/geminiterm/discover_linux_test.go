//go:build linux

package geminiterm

import (
	"github.com/session-supervisor/session-supervisor/requiretool"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// ScanProcs on real processes: a Node script named gemini that relaunches
// itself once, as the CLI does, in a directory of its own and with its own
// HOME; the launcher is never listed, not even before its child exists, and
// the relaunched child is, with its cwd and home.
func TestScanProcsRealNode(t *testing.T) {
	// Node.js runs the Gemini CLI: make test installs it for the agent CLIs.
	node := requiretool.Any(t, "node")
	dir, home, work := t.TempDir(), t.TempDir(), t.TempDir()
	script := filepath.Join(dir, "gemini")
	relaunch := filepath.Join(dir, "relaunch-now")
	// Relaunched with the same arguments and GEMINI_CLI_NO_RELAUNCH, as the
	// CLI does; only once the test says so, so the launcher's time alone (a
	// few seconds on a busy machine) is seen.
	const js = `const fs = require("fs");
if (!process.env.GEMINI_CLI_NO_RELAUNCH && !process.env.NEVER_RELAUNCH) {
  const t = setInterval(() => {
    if (!fs.existsSync(process.env.RELAUNCH_WHEN)) return;
    clearInterval(t);
    const c = require("child_process").spawn(process.execPath, ["--max-old-space-size=100", __filename, ...process.argv.slice(2), "child"],
      {stdio: "inherit", env: {...process.env, GEMINI_CLI_NO_RELAUNCH: "true"}});
    c.on("exit", () => process.exit(0));
  }, 20);
}
setInterval(() => {}, 1000);
`
	if err := os.WriteFile(script, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each CLI reads a terminal, as in a terminal window; the same script
	// fed by /dev/null is never listed (below).
	term := openPTY(t)
	start := func(args []string, env ...string) *exec.Cmd {
		cmd := exec.Command(node, args...)
		cmd.Dir = work
		cmd.Stdin = term
		cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "RELAUNCH_WHEN=" + relaunch}, env...)
		// A group of its own, so that the relaunched child is stopped too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	launcher := start([]string{script})
	piped := exec.Command(node, script, "piped")
	piped.Dir = work
	piped.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GEMINI_CLI_NO_RELAUNCH=true"}
	if err := piped.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = piped.Process.Kill(); _ = piped.Wait() })
	start([]string{script, "--acp"})
	isChild := func(pid int) bool {
		argv, ok := procscanCmdline(pid)
		return ok && slices.Contains(argv, "child")
	}
	mine := func() []Proc {
		procs, err := ScanProcs()
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(procs, func(p Proc) bool { return !observe.SameDir(p.Home, filepath.Join(home, ".gemini")) })
	}
	// The launcher alone, its command line already the CLI's: not listed.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if argv, ok := procscanCmdline(launcher.Process.Pid); ok && len(argv) > 1 && IsGeminiScript(argv[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the launcher never ran the script")
		}
	}
	if got := mine(); len(got) != 0 {
		t.Fatalf("listed %+v before the relaunch: a launcher alone is not a session", got)
	}
	if err := os.WriteFile(relaunch, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var got []Proc
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got = mine(); len(got) == 1 && isChild(got[0].PID) || time.Now().After(deadline) {
			break
		}
	}
	// The child is listed alone, and stays so: the launcher is its parent;
	// the piped one, running as long, reads no terminal.
	if len(got) != 1 || !isChild(got[0].PID) || !observe.SameDir(got[0].Cwd, work) || got[0].Started.IsZero() {
		t.Fatalf("listed %+v, want the relaunched child alone (not the launcher, not --acp, not the piped %d)", got, piped.Process.Pid)
	}
	// A CLI told not to relaunch (GEMINI_CLI_NO_RELAUNCH, or a sandbox) is
	// the session itself; and so is one that was to relaunch but is still
	// alone past the window (an older CLI relaunches only for memory; a
	// container sandbox waits on its container).
	defer func(w time.Duration) { relaunchWindow = w }(relaunchWindow)
	for _, tc := range []struct {
		env    string
		window time.Duration
	}{
		{"GEMINI_CLI_NO_RELAUNCH=true", time.Hour},
		{"SANDBOX=sandbox-exec", time.Hour},
		{"NEVER_RELAUNCH=1", 0}, // no relaunch, though nothing said so
	} {
		relaunchWindow = tc.window
		alone := start([]string{script, "--model", "m"}, tc.env)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if slices.ContainsFunc(mine(), func(p Proc) bool { return p.PID == alone.Process.Pid }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("with %s the CLI was never listed: %+v", tc.env, mine())
			}
		}
	}
}

func procscanCmdline(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, false
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), true
}

// openPTY opens a pseudo-terminal and returns its terminal end (the one a
// program in a terminal window reads); both ends close with the test.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("naming the pseudo-terminal: %v", e)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal's terminal end: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}
