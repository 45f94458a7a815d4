//go:build !linux

package terminal

// probePID cannot tell on this platform yet: the observer then neither
// trusts a session alive nor declares it gone (the session file's removal
// still ends it).
func probePID(pid int) procInfo { return procInfo{} }

// ListClaudeProcs: the process table is not probed on this platform, so
// CLIs older than 2.1.224 (no session file) are not seen here.
func ListClaudeProcs() ([]ClaudeProc, error) { return nil, ErrProcessTableNotProbed }

func scanClaudeProcs(procMemo) ([]ClaudeProc, error) { return nil, ErrProcessTableNotProbed }

func procCwd(pid int) (string, error) { return "", ErrProcessTableNotProbed }
