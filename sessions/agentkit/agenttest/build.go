package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builds are the programs Built made in this test binary, by package and
// name.
var (
	buildsMu sync.Mutex
	builds   = map[[2]string]*built{}
)

type built struct {
	once sync.Once
	path string
	err  error
}

// Built builds the main package pkg (as `go build` takes it: "./toycli")
// as a program called name, once per test binary, into a directory of its
// own, and returns its path: the stand-in CLI an adapter's tests run.
func Built(t testing.TB, pkg, name string) string {
	t.Helper()
	buildsMu.Lock()
	b := builds[[2]string{pkg, name}]
	if b == nil {
		b = &built{}
		builds[[2]string{pkg, name}] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
