package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/leakcheck"
	"github.com/session-supervisor/session-supervisor/localapi"
)

// The daemon's services (loop, local API, settings publisher, the terminal
// sources under the loop) all end with stop: nothing of the module is left
// running, and the socket is gone.
func TestDaemonStopLeavesNothingRunning(t *testing.T) {
	before := leakcheck.Take()
	t.Setenv("HOME", t.TempDir())       // the terminal sources watch the agents' homes
	dir, err := os.MkdirTemp("", "dmn") // short: the socket's path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d, err := startDaemon(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := localapi.NewClient(dir).Health(ctx); err != nil {
		t.Fatalf("the API does not answer: %v", err)
	}
	if err := d.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left := before.Leaked(5 * time.Second); len(left) > 0 {
		t.Fatalf("%d goroutines outlived stop:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if _, err := localapi.NewClient(dir).Health(ctx); err == nil {
		t.Fatal("the API still answers after stop")
	}
}
