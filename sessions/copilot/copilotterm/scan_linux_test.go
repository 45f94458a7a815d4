//go:build linux

package copilotterm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// childEnv makes the test binary a stand-in process that only waits: run
// under the name "copilot" it is found in the process table with the
// command line, terminal, environment and open files the test gives it.
const childEnv = "COPILOT_TERMINAL_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openPTY opens a pseudo-terminal pair with the standard library only.
func openPTY(t *testing.T) (ptmx, pts *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close(); pts.Close() })
	return ptmx, pts
}

// A real TUI-like process (a terminal on its stdin, its session's lock
// held open) is listed with its cwd, home and session; the app's own
// prompt-mode turn (same binary name, a pipe on stdin, --output-format),
// a piped prompt and the Node loader are not. The source lists the TUI
// with its session id, and not the one of another home.
func TestScanProcsRealProcesses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "copilot")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), ".copilot")
	const id = "fe37eda1-13e4-4530-8692-b12157ffbeb6"
	dir := filepath.Join(home, "session-state", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "workspace.yaml"), []byte("id: "+id+"\ncwd: "+work+"\ncreated_at: "+time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hold, err := os.Create(filepath.Join(dir, "inuse.1.hold"))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	_, pts := openPTY(t)
	start := func(name string, stdin *os.File, env string, extra []*os.File, args ...string) *exec.Cmd {
		cmd := &exec.Cmd{Path: bin, Args: append([]string{name}, args...), Dir: work, Stdin: stdin,
			Env: []string{childEnv + "=1", env}, ExtraFiles: extra}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	pipe := func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r
	}
	tui := start(bin, pts, "COPILOT_HOME="+home, []*os.File{hold})
	turn := start(bin, pipe(), "COPILOT_HOME="+home, []*os.File{hold}, "--output-format", "json", "--session-id="+id, "--no-auto-update")
	piped := start(bin, pipe(), "COPILOT_HOME="+home, nil)
	loader := start("node", pts, "COPILOT_HOME="+home, nil, "/x/node_modules/.bin/copilot")
	other := start(bin, pts, "HOME=/elsewhere", nil)

	var procs []Proc
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// The children may not have exec'd yet.
		if procs, err = ScanProcs(); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(procs, func(p Proc) bool { return p.PID == other.Process.Pid }) &&
			slices.ContainsFunc(procs, func(p Proc) bool { return p.PID == tui.Process.Pid }) || time.Now().After(deadline) {
			break
		}
	}
	byPID := map[int]Proc{}
	for _, p := range procs {
		byPID[p.PID] = p
	}
	p, ok := byPID[tui.Process.Pid]
	realWork, _ := filepath.EvalSymlinks(work)
	if !ok || p.Cwd != realWork || p.Home != home || !slices.Equal(p.Held, []string{dir}) || p.Started.IsZero() {
		t.Fatalf("the TUI: %+v (listed %v)", p, ok)
	}
	for name, c := range map[string]*exec.Cmd{"the prompt-mode turn": turn, "the piped prompt": piped, "the loader": loader} {
		if _, ok := byPID[c.Process.Pid]; ok {
			t.Errorf("%s is listed", name)
		}
	}
	if p := byPID[other.Process.Pid]; p.Home != "/elsewhere/.copilot" {
		t.Errorf("another home's TUI: %+v", p)
	}

	src := &Source{CopilotHome: home}
	listed, pairs, err := src.scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].PID != tui.Process.Pid || pairs[tui.Process.Pid].ID != id {
		t.Fatalf("the source lists %+v %+v, want the TUI alone on %s", listed, pairs, id)
	}
}
