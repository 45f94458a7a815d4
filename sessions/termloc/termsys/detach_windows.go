package termsys

import "os/exec"

// detach: a Windows console program is its own window already.
func detach(*exec.Cmd) {}
