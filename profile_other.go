//go:build !unix

package main

import "os"

// profileSignals: no user signals here, so no profile hook.
func profileSignals() (start, end os.Signal) { return nil, nil }
