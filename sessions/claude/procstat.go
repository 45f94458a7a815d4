package claude

import (
	"bytes"
	"strconv"
)

// parseProcStat reads a Linux /proc/PID/stat line. The fields after the
// command name are counted from its closing parenthesis, because the name
// itself may contain spaces and parentheses. State Z (zombie) or X (dead)
// is gone; the start time, field 22, is the identity.
func parseProcStat(b []byte) probe {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return probe{}
	}
	// After ") ": state is field 3, so the start time (field 22) is the
	// 20th field of the rest.
	f := bytes.Fields(b[i+1:])
	if len(f) < 1 || len(f[0]) != 1 {
		return probe{}
	}
	if s := f[0][0]; s == 'Z' || s == 'X' {
		return probe{state: livenessGone}
	}
	var ident uint64
	if len(f) >= 20 {
		ident, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	return probe{state: livenessRunning, ident: ident}
}
