//go:build unix

package claudeterm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIdleObservers: the CPU 50 idle terminal sessions cost while
// nothing happens: the safety rescan (2 s without a file notifier, 15 s
// with one; notifications cost nothing while nothing changes). Reported as
// percent of one core over 30 s.
func BenchmarkIdleObservers(b *testing.B) {
	for _, poll := range []time.Duration{2 * time.Second, 15 * time.Second} {
		b.Run(fmt.Sprintf("rescan=%s", poll), func(b *testing.B) { benchIdle(b, poll) })
	}
}

func benchIdle(b *testing.B, poll time.Duration) {
	dir := b.TempDir()
	src := &Source{ConfigDir: dir, Probe: ProcessAlive}
	os.MkdirAll(src.SessionsDir(), 0o700)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 50; i++ {
		// Each session file names this process, so the real /proc probe
		// runs; the files differ by name only in the rig, so each observer
		// gets its own pid-named copy.
		f := sessionFileFor(os.Getpid(), fmt.Sprintf("sid-%d", i), fmt.Sprintf("/home/u/p%d", i))
		p := src.TranscriptPath(f.Cwd, f.SessionID)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(recPrompt+"\n"+recEnd+"\n"), 0o600)
		sub := &Source{ConfigDir: filepath.Join(dir, fmt.Sprint(i)), Probe: ProcessAlive, Poll: poll}
		os.MkdirAll(sub.SessionsDir(), 0o700)
		writeJSON(b, filepath.Join(sub.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
		tp := sub.TranscriptPath(f.Cwd, f.SessionID)
		os.MkdirAll(filepath.Dir(tp), 0o700)
		os.WriteFile(tp, []byte(recPrompt+"\n"+recEnd+"\n"), 0o600)
		ch, err := sub.Observe(ctx, external(f))
		if err != nil {
			b.Fatal(err)
		}
		<-ch
		go func() {
			for range ch {
			}
		}()
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		const span = 30 * time.Second
		time.Sleep(span)
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		b.ReportMetric(100*cpu.Seconds()/span.Seconds(), "cpu-%")
	}
}

// BenchmarkListClaudeProcs is one cold read of the process table for CLIs
// older than 2.1.224: every process's stat and command line (a table of
// its own, read once).
func BenchmarkListClaudeProcs(b *testing.B) {
	if _, err := ListClaudeProcs(); err != nil {
		b.Skipf("the process table (/proc) cannot be read here: %v", err)
	}
	ents, _ := os.ReadDir("/proc")
	b.ReportMetric(float64(len(ents)), "proc-entries")
	for b.Loop() {
		if _, err := ListClaudeProcs(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSourceTableScan is the scan a Source without a shared table
// makes every TablePoll: its own table, incremental (a process is read
// again only while young or at its recheck).
func BenchmarkSourceTableScan(b *testing.B) {
	if _, err := ListClaudeProcs(); err != nil {
		b.Skipf("the process table (/proc) cannot be read here: %v", err)
	}
	s := &Source{ConfigDir: b.TempDir()}
	s.procSessions(nil) // the first scan reads every comm
	for b.Loop() {
		s.procSessions(nil)
	}
}
