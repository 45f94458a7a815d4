//go:build unix

package proctree

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// Descendants lists every live process below pid, read from /proc (Linux;
// elsewhere none are found). Agent CLIs run their tools in sessions of
// their own (Claude Code's Bash, Codex's pseudo-terminals), out of reach of
// the process group's signals, so a hung tool is only found by walking the
// parent links.
func Descendants(pid int) []int {
	if runtime.GOOS != "linux" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent pid from /proc/PID/stat; the field
// follows the command name, which is in parentheses and may contain
// anything.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}

// SignalTree signals pid's process group and every descendant that left
// it. The descendants are listed before the group is signalled: once the
// agent dies they are re-parented and can no longer be told apart.
func SignalTree(pid int, sig syscall.Signal) error {
	below := Descendants(pid)
	err := syscall.Kill(-pid, sig)
	for _, d := range below {
		if pgid, e := syscall.Getpgid(d); e == nil && pgid == pid {
			continue // already signalled with the group
		}
		_ = syscall.Kill(d, sig)
	}
	return err
}
