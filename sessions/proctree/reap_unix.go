//go:build unix

package proctree

import (
	"path/filepath"
	"slices"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// ReapGroup is Reap for an adapter whose launch line tells its process
// apart (codex app-server, gemini --acp, opencode serve): it acts only on a
// live process group leader whose start stamp is stamp (AliveSince) and
// whose command line (procscan.Cmdline) matches accepts, so a reused pid is
// left alone, and probes liveness with AliveSince. what names the agent in
// errors.
func ReapGroup(pid int, stamp, what string, matches func(args []string) bool) (bool, error) {
	if pid <= 0 || !AliveSince(pid, stamp) {
		return false, nil
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false, nil
	}
	if args, ok := procscan.Cmdline(pid); !ok || !matches(args) {
		return false, nil
	}
	// Polled with the stamp too: a pid freed during the grace and given to
	// another process must not get the SIGKILL.
	return Reap(what, pid, func(pid int) bool { return AliveSince(pid, stamp) })
}

// RunsProgram reports whether a word of args before its i-th is a program
// named one of names (by its base name: the native binary, the npm bin
// link or the script, maybe run by a shell or an interpreter), as an
// adapter's launch line puts its program before the arguments that tell it
// apart (ReapGroup's matches). i < 1 is false.
func RunsProgram(args []string, i int, names ...string) bool {
	if i < 1 {
		return false
	}
	for _, a := range args[:i] {
		if slices.Contains(names, filepath.Base(a)) {
			return true
		}
	}
	return false
}

// AliveSince is Alive for the process that started at stamp (its
// procscan.Proc.Stamp, as the session recorded it): a process there with
// another stamp is a later one that reused the pid, and is not it. An empty
// stamp (none was recorded) checks the pid alone.
func AliveSince(pid int, stamp string) bool {
	return Alive(pid) && StartedAt(pid, stamp)
}

// StartedAt reports whether the process at pid has the start stamp stamp,
// or stamp is empty. A process the table cannot read is not taken for it.
func StartedAt(pid int, stamp string) bool {
	if stamp == "" {
		return true
	}
	p, st := procscan.Probe(pid)
	return st == procscan.Running && p.Stamp == stamp
}

// Alive reports whether pid runs; a zombie does not. Where the process
// table cannot tell (procscan reads Linux's only), kill(pid, 0) decides.
func Alive(pid int) bool {
	switch _, st := procscan.Probe(pid); st {
	case procscan.Running:
		return true
	case procscan.Gone:
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
