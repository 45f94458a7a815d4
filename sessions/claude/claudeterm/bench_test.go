package claudeterm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
