//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/packaging/fyneoverlay"
	"github.com/session-supervisor/session-supervisor/requiretool"
)

var (
	testBuildOnce sync.Once
	testBins      struct{ app, fake string }
	testBuildErr  error
)

// testBinaries builds the app and the scripted fake Claude CLI once per test
// process, for the tests that run them as child processes. They go to a
// fixed per-user directory (testBinDir), replaced atomically, so repeated
// runs do not pile up copies in the temporary directory.
func testBinaries(t *testing.T) (app, fake string) {
	t.Helper()
	testBuildOnce.Do(func() {
		var dir string
		if dir, testBuildErr = testBinDir(); testBuildErr != nil {
			return
		}
		build := func(name, pkg string, flags ...string) string {
			if testBuildErr != nil {
				return ""
			}
			var out string
			out, testBuildErr = goBuild(dir, name, pkg, flags...)
			return out
		}
		var flags []string
		if flags, testBuildErr = appBuildFlags(dir, appTags); testBuildErr != nil {
			return
		}
		testBins.app = build("session-supervisor", "..", flags...)
		testBins.fake = build("fakeclaude", "../sessions/claude/fakeclaude")
		// The Claude Code hook, beside the app (where `hooks install` looks).
		build("session-supervisor-hook", "../cmd/session-supervisor-hook")
	})
	if testBuildErr != nil {
		t.Fatal(testBuildErr)
	}
	return testBins.app, testBins.fake
}

// appTags are the app's build tags, as the Makefile's APP_TAGS.
const appTags = "no_emoji"

var (
	overlayOnce sync.Once
	overlayPath string
	overlayErr  error
)

// appBuildFlags are the go build flags of an app build with tags, as the
// Makefile's: our patched Fyne (packaging/fyneoverlay), prepared once per
// test process in dir.
func appBuildFlags(dir, tags string) ([]string, error) {
	overlayOnce.Do(func() {
		overlayPath, overlayErr = fyneoverlay.Write("..", filepath.Join(dir, "fyne-overlay"))
	})
	if overlayErr != nil {
		return nil, overlayErr
	}
	return []string{"-tags", tags, "-overlay", overlayPath}, nil
}

// testBinDir is where the test binaries go: one directory per user and
// checkout, so two checkouts testing at once do not replace each other's
// binaries mid-run.
func testBinDir() (string, error) {
	wd, _ := os.Getwd()
	sum := sha256.Sum256([]byte(wd))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ss-test-bin-%d-%x", os.Getuid(), sum[:4]))
	return dir, os.MkdirAll(dir, 0o700)
}

// goBuild builds pkg with the go build flags into dir/name, replacing it
// atomically, and returns its path.
func goBuild(dir, name, pkg string, flags ...string) (string, error) {
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", name, os.Getpid()))
	args := append(append([]string{"build"}, flags...), "-o", tmp, pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	final := filepath.Join(dir, name)
	return final, os.Rename(tmp, final)
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

// requireTools requires every one of names (requiretool.Any: a test
// fails where they are required, and skips elsewhere).
func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		requiretool.Any(t, n)
	}
}

// runCommand runs the app binary once with --data-dir dir, in workDir (""
// for the test's own), with env, bounded by timeout; it returns the outputs
// and the exit code. A failure to run at all fails the test.
func runCommand(t *testing.T, bin, dir, workDir string, env []string, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--data-dir", dir}, args...)...)
	cmd.Env = env
	cmd.Dir = workDir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}
