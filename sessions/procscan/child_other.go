//go:build !linux

package procscan

// ProbeChild tells whether pid, a child of this process, still runs: the
// platform's Probe (Linux asks the kernel about its child instead).
func ProbeChild(pid int) (Proc, State) { return Probe(pid) }
