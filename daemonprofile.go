package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/session-supervisor/session-supervisor/services"
)

// envDaemonProfile names a directory: when it is set, the daemon (the
// supervisor side of `run`, headless or not) writes a CPU profile of each
// daemonProfileEvery it runs there (cpu-001.pprof, cpu-002.pprof, …) and a
// heap profile at the end of each (heap-001.pprof, …), the last one cut
// short at the stop. It is for measuring what the app costs at rest (`make
// bench-idle` passes its environment on): a window that begins after the
// start has settled is one of the later files (`go tool pprof -top
// ss cpu-003.pprof`; several are merged by naming them all). Off unless set:
// a profiler costs CPU of its own, so the daemon never runs one otherwise.
const envDaemonProfile = "SESSION_SUPERVISOR_DAEMON_PROFILE"

// daemonProfileEvery is the length of one profile's window.
const daemonProfileEvery = 30 * time.Second

// profileRecorder starts the n-th window's recording and returns what ends
// it (the real one: profileFiles; a test's counts).
type profileRecorder func(n int) (stop func() error, err error)

// recordProfiles records one profile per window of every until ctx ends,
// the last cut short then. A recording that fails to start ends it: a
// profile is a measurement asked for, not a part of the app to keep
// running without.
func recordProfiles(ctx context.Context, every time.Duration, rec profileRecorder) error {
	for n := 1; ; n++ {
		stop, err := rec(n)
		if err != nil {
			return err
		}
		if !services.Sleep(ctx, every) {
			return stop()
		}
		if err := stop(); err != nil {
			return err
		}
	}
}

// profileFiles records the n-th window into dir: the CPU profile from now,
// the heap profile when it stops.
func profileFiles(dir string) profileRecorder {
	return func(n int) (func() error, error) {
		cpu, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%03d.pprof", n)))
		if err != nil {
			return nil, fmt.Errorf("writing a CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("starting a CPU profile: %w", err)
		}
		return func() error {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return fmt.Errorf("writing a CPU profile: %w", err)
			}
			heap, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%03d.pprof", n)))
			if err != nil {
				return fmt.Errorf("writing a heap profile: %w", err)
			}
			if err := pprof.Lookup("heap").WriteTo(heap, 0); err != nil {
				heap.Close()
				return fmt.Errorf("writing a heap profile: %w", err)
			}
			if err := heap.Close(); err != nil {
				return fmt.Errorf("writing a heap profile: %w", err)
			}
			return nil
		}, nil
	}
}

// daemonProfiler is the profiler's service when envDaemonProfile asks for
// one (ok false otherwise): its directory is made at the start.
func daemonProfiler(getenv func(string) string) (run func(ctx context.Context) error, ok bool, err error) {
	dir := getenv(envDaemonProfile)
	if dir == "" {
		return nil, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("%s: %w", envDaemonProfile, err)
	}
	return func(ctx context.Context) error { return recordProfiles(ctx, daemonProfileEvery, profileFiles(dir)) }, true, nil
}
