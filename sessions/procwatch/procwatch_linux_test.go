//go:build linux

package procwatch

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// sleepers starts n real `sleep` processes with arg as their last
// argument (a number of seconds: sleep sums them), killed when the test
// ends.
func sleepers(tb testing.TB, n int, arg string) []*exec.Cmd {
	tb.Helper()
	var out []*exec.Cmd
	for range n {
		c := exec.Command("sleep", "600", arg)
		if err := c.Start(); err != nil {
			tb.Fatal(err)
		}
		out = append(out, c)
	}
	tb.Cleanup(func() {
		for _, c := range out {
			c.Process.Kill()
			c.Wait()
		}
	})
	return out
}

// nonce is an argument of sleep's (a fraction of a second) that no other
// process has.
func nonce() string { return fmt.Sprintf("0.%d", time.Now().UnixNano()) }

func ours(arg string) func(Proc) bool {
	return func(p Proc) bool { return p.Comm == "sleep" && slices.Contains(p.Argv, arg) }
}

// On the real /proc: a new process is delivered with its command line and
// start, an exited one is gone, and a scan with nothing new reads no
// process's stat but the young ones'.
func TestRealProcesses(t *testing.T) {
	tab := New(System())
	arg := nonce()
	sub := tab.Subscribe([]string{"sleep"}, ours(arg))
	if err := tab.Scan(); err != nil {
		t.Fatal(err)
	}
	cold := tab.Stats()
	if cold.Stats < 2 {
		t.Fatalf("a cold scan read %d stats", cold.Stats)
	}
	kids := sleepers(t, 2, arg)
	tab.Scan()
	c := sub.Changes()
	want := []int{kids[0].Process.Pid, kids[1].Process.Pid}
	slices.Sort(want)
	if !slices.Equal(pids(c.New), want) || len(c.Gone) != 0 {
		t.Fatalf("changes %+v, want new %v", c, want)
	}
	p := c.New[0]
	if p.PPID != os.Getpid() || !slices.Equal(p.Argv, []string{"sleep", "600", arg}) || p.Started.IsZero() || p.Stamp == "" {
		t.Fatalf("the process as delivered: %+v", p)
	}
	kids[0].Process.Kill()
	kids[0].Wait()
	tab.Scan()
	if c := sub.Changes(); !slices.Equal(pids(c.Gone), []int{kids[0].Process.Pid}) || len(c.New) != 0 {
		t.Fatalf("after an exit: %+v", c)
	}
	// Everything but the processes younger than Young is answered from
	// memory (the listing changes under a busy machine, so allow a few
	// newcomers).
	before := tab.Stats()
	tab.Young = time.Nanosecond
	tab.Scan()
	if got := tab.Stats().Stats - before.Stats; got > 10 || got*5 > cold.Stats {
		t.Fatalf("an incremental scan read %d stats (a cold one %d)", got, cold.Stats)
	}
}

// A pid reused by a later process is another process: delivered as the
// old one gone and a new one, though the listing shows the same pid. The
// kernel hands out the next pid on request only to root
// (/proc/sys/kernel/ns_last_pid), so this runs as root; the same rule is
// tested on every machine with the table in memory (TestIncrementalScan).
func TestRealPidReuse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("choosing the next pid needs root")
	}
	arg := nonce()
	tab := New(System())
	sub := tab.Subscribe([]string{"sleep"}, ours(arg))
	for attempt := 0; attempt < 20; attempt++ {
		first := sleepers(t, 1, arg)[0]
		pid := first.Process.Pid
		tab.Scan()
		was := sub.Changes()
		first.Process.Kill()
		first.Wait()
		// A start later by a clock tick at least.
		time.Sleep(30 * time.Millisecond)
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatal(err)
		}
		second := sleepers(t, 1, arg)[0]
		if second.Process.Pid != pid {
			continue // another process took the pid first: try again
		}
		tab.Scan()
		c := sub.Changes()
		if len(was.New) != 1 || len(c.New) != 1 || len(c.Gone) != 1 || c.New[0].PID != pid || c.Gone[0].PID != pid ||
			c.New[0].Stamp == c.Gone[0].Stamp || c.Gone[0].Stamp != was.New[0].Stamp {
			t.Fatalf("reuse of pid %d: was %+v, now %+v", pid, was, c)
		}
		return
	}
	t.Fatal("could not get a pid reused in 20 attempts")
}

// BenchmarkScan is one scan of the real /proc with extra idle `sleep`
// processes: cold (a new table: every process read) and incremental (the
// table kept: only the listing). The ratio is what the shared table saves
// per scan. named is what each terminal source did before the shared
// table, every 2 or 5 s (procscan.Named: every process's name read).
func BenchmarkScan(b *testing.B) {
	for _, extra := range []int{0, 400} {
		sleepers(b, extra, "0")
		b.Run(fmt.Sprintf("extra=%d/cold", extra), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(System()).Scan()
			}
		})
		b.Run(fmt.Sprintf("extra=%d/named", extra), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				procscan.Named("codex")
			}
		})
		b.Run(fmt.Sprintf("extra=%d/incremental", extra), func(b *testing.B) {
			b.ReportAllocs()
			tab := New(System())
			tab.Young = time.Nanosecond
			tab.Scan()
			for b.Loop() {
				tab.Scan()
			}
		})
	}
}
