package agenttest

import (
	"os"
	"syscall"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Started starts an agent process with start (an adapter's Start) and o,
// fails t if that fails, and stops the process when t ends: SIGKILL to its
// group, its events drained, the process waited for, so no test leaves an
// agent or a goroutine behind.
func Started[O any, P sessions.Process](t testing.TB, start func(O) (P, error), o O) P {
	t.Helper()
	p, err := start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Signal(syscall.SIGKILL)
		for range p.Events() {
		}
		_, _, _ = p.Wait()
	})
	return p
}

// FakeAPI starts a fake model API (a fakeapi package's Start), fails t if
// it fails, and closes it when t ends.
func FakeAPI[S interface{ Close() }](t testing.TB, start func() (S, error)) S {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Main is a TestMain for a package whose test binary doubles as a scripted
// agent: when the variable env is set, the binary is that agent (script,
// given the variable's value) and exits 0 after it; else it runs the tests
// (RunTests).
func Main(m *testing.M, env string, script func(value string)) {
	if v := os.Getenv(env); v != "" {
		script(v)
		os.Exit(0)
	}
	os.Exit(RunTests(m))
}

// Self is the test binary's path, to start it as a scripted agent (Main).
func Self(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
