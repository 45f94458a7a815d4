//go:build windows

package copilot

import "os"

func signalGroup(p *os.Process, sig os.Signal) error { return p.Signal(sig) }

// interruptGroup: Windows has no SIGINT for another process; the turn is
// killed, which the pump reports as an abort since it was asked for.
func interruptGroup(p *os.Process) error { return p.Kill() }

func terminating(sig os.Signal) bool { return sig == os.Kill }
