//go:build linux

package geminiterm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ScanProcs on real processes: a Node script named gemini that relaunches
// itself once, as the CLI does, in a directory of its own and with its own
// HOME; only the relaunched child is listed, with its cwd and home.
func TestScanProcsRealNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		// Under make test (E2E_REQUIRED) or CI node is installed with npm
		// for the agent CLIs: missing, it is a broken set-up, not a skip.
		msg := "no node on PATH (Node.js runs the Gemini CLI; make test installs it through packaging/install-deps.sh)"
		if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, home, work := t.TempDir(), t.TempDir(), t.TempDir()
	script := filepath.Join(dir, "gemini")
	// Relaunched with the same arguments, as the CLI does.
	const js = `if (!process.argv.includes("child")) {
  const c = require("child_process").spawn(process.execPath, ["--max-old-space-size=100", __filename, ...process.argv.slice(2), "child"], {stdio: "inherit"});
  c.on("exit", () => process.exit(0));
}
setInterval(() => {}, 1000);
`
	if err := os.WriteFile(script, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{script}, {script, "--acp"}} {
		cmd := exec.Command(node, args...)
		cmd.Dir, cmd.Env = work, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		// A group of its own, so that the relaunched child is stopped too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	}
	isChild := func(pid int) bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && slices.Contains(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), "child")
	}
	var mine []Proc
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		procs, err := ScanProcs()
		if err != nil {
			t.Fatal(err)
		}
		mine = slices.DeleteFunc(procs, func(p Proc) bool { return !sameDir(p.Home, filepath.Join(home, ".gemini")) })
		if len(mine) == 1 && isChild(mine[0].PID) || time.Now().After(deadline) {
			break
		}
	}
	// The child is listed alone, and stays so: the launcher is its parent.
	if len(mine) != 1 || !isChild(mine[0].PID) || !sameDir(mine[0].Cwd, work) || mine[0].Started.IsZero() {
		t.Fatalf("listed %+v, want the relaunched child alone (not the launcher, not --acp)", mine)
	}
}
