package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	testBuildOnce sync.Once
	testBins      struct{ app, fake string }
	testBuildErr  error
)

// testBinaries builds the app and the scripted fake Claude CLI once per test
// process, for the tests that run them as child processes. They go to a
// fixed per-user directory, replaced atomically, so repeated runs do not
// pile up copies in the temporary directory.
func testBinaries(t *testing.T) (app, fake string) {
	t.Helper()
	testBuildOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("ss-test-bin-%d", os.Getuid()))
		if testBuildErr = os.MkdirAll(dir, 0o700); testBuildErr != nil {
			return
		}
		build := func(name, pkg string) string {
			if testBuildErr != nil {
				return ""
			}
			tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", name, os.Getpid()))
			if out, err := exec.Command("go", "build", "-o", tmp, pkg).CombinedOutput(); err != nil {
				testBuildErr = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
				return ""
			}
			final := filepath.Join(dir, name)
			if err := os.Rename(tmp, final); err != nil {
				testBuildErr = err
			}
			return final
		}
		testBins.app = build("session-supervisor", ".")
		testBins.fake = build("fakeclaude", "./sessions/claude/fakeclaude")
	})
	if testBuildErr != nil {
		t.Fatal(testBuildErr)
	}
	return testBins.app, testBins.fake
}

// syncBuffer is an io.Writer safe to read while a child process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
