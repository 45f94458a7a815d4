package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// envProfile names a directory where a running app writes CPU and heap
// profiles on request, for measuring what it costs while idle (make
// bench-idle with BENCH_IDLE_PROFILE). Unset, as it always is for users,
// nothing is profiled and no signal is caught.
const envProfile = "SESSION_SUPERVISOR_PROFILE"

// profileHook starts the opt-in profiler: with envProfile set, the first
// signal (profileSignals) starts a CPU profile into DIR/cpu.pprof and the
// second stops it and writes the heap in use to DIR/heap.pprof, so the
// profile covers exactly the window a benchmark measures and not the
// start. A process of the app's other than the first (the window's)
// writes into DIR/sub. It returns the function that stops it (writing what
// was started).
func profileHook(log *slog.Logger, sub string) (stop func()) {
	dir := os.Getenv(envProfile)
	start, end := profileSignals()
	if dir == "" || start == nil {
		return func() {}
	}
	if sub != "" {
		dir = filepath.Join(dir, sub)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Warn("profile: no directory", "err", err)
			return func() {}
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, start, end)
	done := make(chan struct{})
	var cpu *os.File
	finish := func() {
		if cpu == nil {
			return
		}
		pprof.StopCPUProfile()
		cpu.Close()
		cpu = nil
		if err := writeHeap(filepath.Join(dir, "heap.pprof")); err != nil {
			log.Warn("profile: heap not written", "err", err)
		}
		log.Info("profile: written", "dir", dir)
	}
	go func() {
		defer close(done)
		for sig := range sigs {
			if sig == start && cpu == nil {
				f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
				if err == nil {
					err = pprof.StartCPUProfile(f)
				}
				if err != nil {
					log.Warn("profile: CPU profile not started", "err", err)
					continue
				}
				cpu = f
				log.Info("profile: CPU profile started", "dir", dir)
			} else if sig == end {
				finish()
			}
		}
		finish()
	}()
	return func() {
		signal.Stop(sigs)
		close(sigs)
		<-done
	}
}

// writeHeap writes the heap in use after a collection (what is held, not
// what was garbage).
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
