// Package leakcheck tells a test which goroutines of this module it left
// running: those created since a snapshot, found by their ids in the
// runtime's stack dump, whose stacks run the module's code.
package leakcheck

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const module = "github.com/session-supervisor/session-supervisor/"

// Snapshot is the set of goroutines alive when it was taken.
type Snapshot map[int]bool

// Take records the goroutines alive now.
func Take() Snapshot {
	s := Snapshot{}
	for id := range goroutines() {
		s[id] = true
	}
	return s
}

// Leaked waits up to grace for the goroutines started since s that run the
// module's code (test functions and the testing package's own excepted) to
// end, and returns the stacks of those still there.
func (s Snapshot) Leaked(grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		var left []string
		for id, stack := range goroutines() {
			if s[id] || !strings.Contains(stack, module) || ownedByATest(stack) {
				continue
			}
			left = append(left, stack)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownedByATest: a goroutine running a test function, a test's own helper
// (its innermost frame is in a _test.go file) or this check is the test's,
// not something the code under test leaked.
func ownedByATest(stack string) bool {
	lines := strings.Split(stack, "\n")
	innermostInTest := len(lines) > 2 && strings.Contains(lines[2], "_test.go:")
	return innermostInTest || strings.Contains(stack, "testing.tRunner") || strings.Contains(stack, module+"leakcheck.")
}

// goroutines maps each goroutine's id to its stack.
func goroutines() map[int]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := bytes.Cut(g, []byte(" ["))
		id, err := strconv.Atoi(string(bytes.TrimPrefix(head, []byte("goroutine "))))
		if err == nil {
			out[id] = string(g)
		}
	}
	return out
}
