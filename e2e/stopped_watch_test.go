//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestE2EStoppedWatchMemoryBound: 100 managed sessions change state every
// second while one `watch --json` is stopped (SIGSTOP, as Ctrl-Z does) for 5
// minutes. The app's RSS stays within 20 MB of its level before the stop
// (the stream's write deadline drops the stalled subscriber; its queue is
// bounded), and once continued (SIGCONT) the watch finds its stream closed,
// reconnects and resyncs from a full snapshot of every session.
//
// Each session is the real app's Claude adapter on fakeclaude playing one
// long turn: an api_retry (Recovering), a second's silence, a reply line
// (Working again), a second's silence, and again. Real time, most of it
// waiting: it runs beside the other scenarios.
func TestE2EStoppedWatchMemoryBound(t *testing.T) {
	t.Parallel()
	const (
		count     = 100
		stopFor   = 5 * time.Minute
		warmUp    = 20 * time.Second
		rssBound  = 20 << 20
		cycle     = 2 * time.Second // two state changes
		scriptFor = stopFor + 4*time.Minute
	)
	retry := `{"emit": {"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":1000,"error_status":529,"error":"overloaded","session_id":"$SESSION"}}`
	reply := `{"emit": {"type":"assistant","message":{"model":"fake","content":[{"type":"text","text":"still at it"}]},"parent_tool_use_id":null,"session_id":"$SESSION"}}`
	pause := fmt.Sprintf(`{"sleep_ms": %d}`, (cycle / 2).Milliseconds())
	var steps []string
	for range int(scriptFor / cycle) {
		steps = append(steps, retry, pause, reply, pause)
	}
	h := newAppE2E(t, `{"turns": [[`+strings.Join(steps, ",")+`,`+ae2eLines+`]]}`)
	h.start()
	appPID := h.app.Process.Pid

	cl := localapi.NewClient(h.dir)
	ctx := context.Background()
	for i := range count {
		if _, err := cl.Launch(ctx, localapi.LaunchRequest{Agent: "claude", Cwd: h.work, Name: fmt.Sprintf("churn-%03d", i), Prompt: "go"}); err != nil {
			t.Fatalf("launching session %d: %v", i, err)
		}
	}
	// Every session cycling: each has been Recovering at least once.
	recovering := map[string]bool{}
	for deadline := time.Now().Add(ae2eWait); len(recovering) < count; time.Sleep(200 * time.Millisecond) {
		list, err := cl.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.State == sessions.Recovering {
				recovering[s.ID] = true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sessions seen cycling:\n%s", len(recovering), count, h.stderr)
		}
	}

	w := startStreamWatch(t, h)
	w.waitSnapshot(t, time.Time{}, count)
	time.Sleep(warmUp)
	before := rssOf(t, appPID)
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	peak := before
	for time.Since(stoppedAt) < stopFor {
		time.Sleep(5 * time.Second)
		peak = max(peak, rssOf(t, appPID))
	}
	// Still churning at the end: a session changed state in the last cycle.
	list, err := cl.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	churning := 0
	for _, s := range list {
		if time.Since(s.StateChangedAt) < 2*cycle {
			churning++
		}
	}
	after := rssOf(t, appPID)
	t.Logf("app RSS: %.1f MB before the stop, peak %.1f MB (+%.1f MB) and %.1f MB after %s stopped; %d of %d sessions changed state in the last %s",
		mb(before), mb(peak), mb(peak-before), mb(after), stopFor, churning, count, 2*cycle)
	if churning < count*9/10 {
		t.Errorf("only %d of %d sessions still changing state: the load did not last", churning, count)
	}
	if peak-before > rssBound {
		t.Errorf("the app's RSS grew by %.1f MB under a stopped watch, want at most %.0f MB", mb(peak-before), mb(rssBound))
	}

	continuedAt := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	w.waitSnapshot(t, continuedAt, count)
	if !strings.Contains(w.stderr.String(), "connection to the app lost") {
		t.Errorf("the continued watch resynced without its stream having been closed (the app kept the stalled subscriber):\n%s", w.stderr)
	}
	// Stop the turns, then quit as Ctrl-C does: the agents exit with their
	// input closed, and nothing is left for the leak check to kill.
	for _, s := range list {
		if _, err := cl.Interrupt(ctx, s.ID); err != nil {
			t.Errorf("interrupting %s: %v", s.Name, err)
		}
	}
	if code := h.interrupt(); code != 0 {
		t.Errorf("the app exited %d after Ctrl-C:\n%s", code, h.stderr)
	}
}

// streamWatch is a `watch --json` child whose output is read all along, so
// that stopping it stalls its socket, not its stdout.
type streamWatch struct {
	cmd    *exec.Cmd
	stderr *syncBuffer

	mu        sync.Mutex
	snapshots []watchSnapshot
}

// watchSnapshot is one full snapshot the watch printed, and when.
type watchSnapshot struct {
	at       time.Time
	sessions int
}

func startStreamWatch(t *testing.T, h *appE2E) *streamWatch {
	t.Helper()
	cmd := exec.Command(h.bin, "--data-dir", h.dir, "watch", "--json")
	cmd.Env = h.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &streamWatch{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m localapi.Message
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.Type != localapi.MsgSnapshot {
				continue
			}
			w.mu.Lock()
			w.snapshots = append(w.snapshots, watchSnapshot{at: time.Now(), sessions: len(m.Sessions)})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	return w
}

// waitSnapshot waits until the watch printed a snapshot of at least n
// sessions after since.
func (w *streamWatch) waitSnapshot(t *testing.T, since time.Time, n int) {
	t.Helper()
	for deadline := time.Now().Add(ae2eWait); ; time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		var got []watchSnapshot
		for _, s := range w.snapshots {
			if s.at.After(since) {
				got = append(got, s)
			}
		}
		w.mu.Unlock()
		for _, s := range got {
			if s.sessions >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch printed no snapshot of %d sessions since %s (%v)\nits stderr:\n%s", n, since.Format(time.TimeOnly), got, w.stderr)
		}
	}
}

// rssOf is pid's resident set size in bytes (VmRSS).
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
