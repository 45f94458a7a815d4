package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// One recording per window, each stopped before the next starts, the last
// cut short when the daemon stops; a recording that cannot start ends the
// profiler with its error.
func TestRecordProfilesWindows(t *testing.T) {
	cases := []struct {
		name      string
		runFor    time.Duration
		failAt    int // the recording that fails to start (0: none)
		wantStart int
		wantErr   bool
	}{
		{name: "stopped within the first window", runFor: 10 * time.Second, wantStart: 1},
		{name: "three windows and a part", runFor: 95 * time.Second, wantStart: 4},
		{name: "a start that fails", runFor: time.Hour, failAt: 2, wantStart: 2, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var started, stopped int
				var lengths []time.Duration
				rec := func(n int) (func() error, error) {
					if n == c.failAt {
						started++
						return nil, errors.New("no room")
					}
					if started != stopped {
						t.Fatalf("recording %d started while %d was running", n, n-1)
					}
					started++
					at := time.Now()
					return func() error { stopped++; lengths = append(lengths, time.Since(at)); return nil }, nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), c.runFor)
				defer cancel()
				err := recordProfiles(ctx, 30*time.Second, rec)
				if (err != nil) != c.wantErr {
					t.Fatalf("err = %v, want an error: %v", err, c.wantErr)
				}
				if started != c.wantStart {
					t.Fatalf("%d recordings started, want %d", started, c.wantStart)
				}
				for i, l := range lengths {
					if l > 30*time.Second || (i < len(lengths)-1 && l != 30*time.Second) {
						t.Fatalf("window %d lasted %v (all %v)", i+1, l, lengths)
					}
				}
			})
		})
	}
}

// The real recorder writes a CPU and a heap profile go tool pprof reads
// (gzip-compressed protocol buffers), and the daemon runs none unless the
// variable names a directory.
func TestDaemonProfilerFiles(t *testing.T) {
	if _, ok, err := daemonProfiler(func(string) string { return "" }); ok || err != nil {
		t.Fatalf("unset: profiling %v (%v)", ok, err)
	}
	dir := filepath.Join(t.TempDir(), "prof")
	run, ok, err := daemonProfiler(func(k string) string {
		if k == envDaemonProfile {
			return dir
		}
		return ""
	})
	if !ok || err != nil {
		t.Fatalf("set: profiling %v (%v)", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped at once: the first window cut short
	if err := run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cpu-001.pprof", "heap-001.pprof"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s is not a gzip-compressed profile: % x", name, b[:min(len(b), 8)])
		}
	}
}
