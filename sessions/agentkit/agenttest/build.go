package agenttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds are the programs Built made in this test binary, by package and
// name; running is set by RunTests, which removes them at the end.
var (
	buildsMu sync.Mutex
	builds   = map[string]*built{}
	running  bool
)

type built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// errNotRunTests is Built's error in a test binary whose TestMain does not
// go through RunTests: nothing would remove what it builds.
var errNotRunTests = errors.New("agenttest.Built needs the package's TestMain to run its tests with agenttest.RunTests (or Main), which removes the programs it builds")

// Built builds the main package pkg (as `go build` takes it: "./toycli")
// as a program called name, once per test binary, into a directory of its
// own, and returns its path: the stand-in CLI an adapter's tests run.
// RunTests removes it when the tests end.
func Built(t testing.TB, pkg, name string) string {
	t.Helper()
	return BuiltWith(t, pkg, name)
}

// BuiltWith is Built with the program's path inside its directory (rel:
// "bin dir/app" puts it in a subdirectory) and go build's flags (such as
// -ldflags); each pkg, rel and flags together is built once.
func BuiltWith(t testing.TB, pkg, rel string, flags ...string) string {
	t.Helper()
	key := strings.Join(append([]string{pkg, rel}, flags...), "\x00")
	buildsMu.Lock()
	if !running {
		buildsMu.Unlock()
		t.Fatal(errNotRunTests)
	}
	b := builds[key]
	if b == nil {
		b = &built{}
		builds[key] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", filepath.Base(rel))
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, rel)
		args := append(append([]string{"build"}, flags...), "-o", b.path, pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RunTests runs m's tests, then removes the programs Built made for them,
// and returns the exit code for os.Exit. A TestMain calls it rather than
// deferring the removal: os.Exit, which ends a TestMain, runs no deferred
// call.
func RunTests(m *testing.M) int {
	buildsMu.Lock()
	running = true
	buildsMu.Unlock()
	code := m.Run()
	if err := removeBuilt(); err != nil {
		fmt.Fprintln(os.Stderr, "agenttest:", err)
		code = 1
	}
	return code
}

// removeBuilt removes every directory Built made.
func removeBuilt() error {
	buildsMu.Lock()
	defer buildsMu.Unlock()
	var errs []error
	for _, b := range builds {
		if b.dir != "" {
			if err := os.RemoveAll(b.dir); err != nil {
				errs = append(errs, fmt.Errorf("removing a built program: %w", err))
			}
		}
	}
	clear(builds)
	return errors.Join(errs...)
}
