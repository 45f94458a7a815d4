//go:build !unix

package claudeterm

import "time"

// cpuTime is not measured here: the benchmarks report zero CPU.
func cpuTime() time.Duration { return 0 }
