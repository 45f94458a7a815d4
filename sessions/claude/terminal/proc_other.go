//go:build !linux

package terminal

// probePID cannot tell on this platform yet: the observer then neither
// trusts a session alive nor declares it gone (the session file's removal
// still ends it).
func probePID(pid int) procInfo { return procInfo{} }
