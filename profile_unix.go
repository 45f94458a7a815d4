//go:build unix

package main

import (
	"os"
	"syscall"
)

// profileSignals are SIGUSR1 (start) and SIGUSR2 (stop and write).
func profileSignals() (start, end os.Signal) { return syscall.SIGUSR1, syscall.SIGUSR2 }
