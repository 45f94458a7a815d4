// Package testproc runs a test in a process of its own: for a test of
// something that can start only once per process (fyne.io/systray: its
// quit closes a process-wide D-Bus connection for good), so that -count=N
// runs it N times instead of skipping or failing the later runs.
package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// envChild names, in the child, the test it runs.
const envChild = "SESSION_SUPERVISOR_TEST_OWN_PROCESS"

// Own reports whether this is the process of its own t runs in. The first
// time, in the test binary go test started, it runs this binary again for
// t alone, waits, fails t with the child's output when the child did not
// pass it, and returns false: the caller returns. In that child it returns
// true: the caller goes on with the test's body.
//
//	if !testproc.Own(t) {
//		return
//	}
func Own(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envChild) == t.Name() {
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("testproc.Own: %s is a subtest; call it from a top-level test", t.Name())
	}
	if err := run(t.Name()); err != nil {
		t.Fatal(err)
	}
	return false
}

// run runs this test binary for the test name alone (once, verbose), with
// env added to this process's environment, and fails unless it passed.
func run(name string, env ...string) error {
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(name)+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), envChild+"="+name), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s in a process of its own: %w\n%s", name, err, out.Bytes())
	}
	// A child that ran no test (a name go test would not match) passed
	// nothing: that is a failure here, not a pass.
	if !bytes.Contains(out.Bytes(), []byte("--- PASS: "+name+" ")) {
		return fmt.Errorf("%s in a process of its own did not pass:\n%s", name, out.Bytes())
	}
	return nil
}
