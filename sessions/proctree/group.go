//go:build unix || windows

package proctree

import (
	"errors"
	"os/exec"
)

// Wait waits for cmd's process and reports how it ended (ExitStatus). A
// non-zero exit or a kill is an outcome, not an error: err is only a
// failure to wait.
func Wait(cmd *exec.Cmd) (code int, signal string, err error) {
	err = cmd.Wait()
	code, signal = ExitStatus(cmd.ProcessState)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		err = nil
	}
	return code, signal, err
}
