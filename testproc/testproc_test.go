package testproc

import (
	"os"
	"strings"
	"testing"
)

// bodies counts the bodies of TestOwnRunsTheBodyInAChild run in this
// process.
var bodies int

// envFail makes TestOwnRunsTheBodyInAChild's body fail (set only by
// TestRunFailsWithTheChild, for its child).
const envFail = "TESTPROC_TEST_FAIL"

// The body runs in a child, never in the parent: -count=3 runs it three
// times, each in a fresh process (the parent's count stays 0).
func TestOwnRunsTheBodyInAChild(t *testing.T) {
	if !Own(t) {
		if bodies != 0 {
			t.Fatalf("the parent ran the body %d times", bodies)
		}
		return
	}
	bodies++
	if bodies != 1 {
		t.Fatalf("the child ran the body %d times", bodies)
	}
	if os.Getenv(envFail) != "" {
		t.Fatal("failing on purpose")
	}
}

// run fails when the child's test failed (its output said), and when the
// child ran no test at all.
func TestRunFailsWithTheChild(t *testing.T) {
	for _, tc := range []struct {
		name, test string
		env        []string
		want       string
	}{
		{"the body failed", "TestOwnRunsTheBodyInAChild", []string{envFail + "=1"}, "failing on purpose"},
		{"no such test", "TestNoSuchTest", nil, "did not pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.test, tc.env...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%s) = %v; want an error saying %q", tc.test, err, tc.want)
			}
		})
	}
	if err := run("TestOwnRunsTheBodyInAChild"); err != nil {
		t.Fatalf("a passing child: %v", err)
	}
}
