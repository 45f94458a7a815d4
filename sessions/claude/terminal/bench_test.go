package terminal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// BenchmarkColdDiscovery: a configuration directory with 1,000 transcripts
// of 1 MB each (1 GB apparent; sparse files, so the machine's disk is
// spared), of which live sessions are registered; the time from Watch to
// the first correct list and to every live session's first inferred state.
// Only live sessions' transcripts are opened, and only their tails read.
func BenchmarkColdDiscovery(b *testing.B) {
	for _, live := range []int{10, 100} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			dir := b.TempDir()
			// The probe is stubbed: one process cannot own many session
			// files (they are named by pid). The real probe is one small
			// /proc read per session.
			src := &Source{ConfigDir: dir, Poll: time.Hour, Probe: func(SessionFile) (bool, bool) { return true, true }}
			os.MkdirAll(src.SessionsDir(), 0o700)
			tail := strings.Repeat(recPrompt+"\n"+recToolUse+"\n"+recToolResult+"\n", 30) + recEnd + "\n"
			for i := 0; i < 1000; i++ {
				cwd := fmt.Sprintf("/home/u/p%d", i)
				sid := fmt.Sprintf("sid-%d", i)
				p := src.TranscriptPath(cwd, sid)
				os.MkdirAll(filepath.Dir(p), 0o700)
				fh, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				fh.Truncate(1<<20 - int64(len(tail)))
				fh.Seek(0, 2)
				fh.WriteString(tail)
				fh.Close()
				if i < live {
					f := sessionFileFor(100000+i, sid, cwd)
					writeJSON(b, filepath.Join(src.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
				}
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				ctx, cancel := context.WithCancel(context.Background())
				w, err := src.Watch(ctx)
				if err != nil {
					b.Fatal(err)
				}
				list := <-w
				for _, es := range list {
					ch, err := src.Observe(ctx, es)
					if err != nil {
						b.Fatal(err)
					}
					ev := <-ch
					if ev.Kind != sessions.EvObserved || ev.Observed.State != sessions.WaitingOnUser {
						b.Fatalf("first event %v %+v", ev.Kind, ev.Observed)
					}
				}
				cancel()
			}
			b.StopTimer()
			if st, err := os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(st), "\n") {
					if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
						var kb float64
						fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
						b.ReportMetric(kb/1024, "peak-RSS-MB")
					}
				}
			}
		})
	}
}

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
		cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano())
		b.ReportMetric(100*cpu.Seconds()/span.Seconds(), "cpu-%")
	}
}
