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
// live process group leader whose command line (procscan.Cmdline) matches
// accepts, so a reused pid is left alone, and probes liveness with Alive.
// what names the agent in errors.
func ReapGroup(pid int, what string, matches func(args []string) bool) (bool, error) {
	if pid <= 0 || !Alive(pid) {
		return false, nil
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false, nil
	}
	if args, ok := procscan.Cmdline(pid); !ok || !matches(args) {
		return false, nil
	}
	return Reap(what, pid, Alive)
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
