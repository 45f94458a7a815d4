package termloc

import "strings"

// ConsoleHolder is the process whose window shows a Windows console
// session: walking the agent's ancestors (chain, nearest first), the
// first that owns a visible top-level window. A classic console's window
// is reported as its shell's (cmd.exe, powershell.exe: the console host
// lends it), Windows Terminal's as WindowsTerminal.exe above the shell;
// either way it is an ancestor. Nil when none has a window (a service, or
// an ssh login).
func ConsoleHolder(chain []Stat, hasWindow func(pid int) bool) *Process {
	for _, st := range chain {
		if strings.EqualFold(st.Comm, "explorer.exe") {
			return nil // the desktop shell itself: above any terminal
		}
		if hasWindow(st.PID) {
			return &Process{PID: st.PID, Name: st.Comm}
		}
	}
	return nil
}
