//go:build unix

package proctree

import (
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Descendants lists every live process below pid, read from the process
// table (procscan: Linux; elsewhere none are found). Agent CLIs run their
// tools in sessions of their own (Claude Code's Bash, Codex's
// pseudo-terminals), out of reach of the process group's signals, so a
// hung tool is only found by walking the parent links.
func Descendants(pid int) []int {
	pids, err := procscan.PIDs()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, p := range pids {
		if pr, st := procscan.Probe(p); st == procscan.Running {
			children[pr.PPID] = append(children[pr.PPID], p)
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
