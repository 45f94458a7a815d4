package storage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// crashWriterEnv, when set to a directory, makes TestCrashHelper act as the
// writer process of TestCrashRecovery instead of a test.
const crashWriterEnv = "STORAGE_CRASH_WRITER_DIR"

// crashSession is the session the writer keeps re-saving.
const crashSession = "crash"

// TestCrashHelper is the child half of TestCrashRecovery. Run normally it
// does nothing. As the writer it loops until killed, alternating two kinds
// of commit and reporting each on stdout only after it committed:
//
//	e <id>   AppendEvent committed event <id>
//	s <gen>  SaveSessionWithEvents committed the session at turn
//	         generation <gen> together with two "batch" events of <gen>
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashWriterEnv)
	if dir == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		os.Exit(3)
	}
	s, err := Open(dir)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	// Bounded in case the parent died without killing us.
	deadline := time.Now().Add(2 * time.Minute)
	for gen := int64(1); time.Now().Before(deadline); gen++ {
		now := time.Now()
		if gen%2 == 1 {
			id, err := s.AppendEvent(ctx, TimelineEvent{
				SessionID: crashSession, Time: now, Kind: "tick", TurnGeneration: gen,
				Detail: []byte(fmt.Sprintf(`{"gen":%d}`, gen)),
			})
			if err != nil {
				fail(err)
			}
			fmt.Fprintf(out, "e %d\n", id)
		} else {
			sess := sessions.Session{ID: crashSession, State: sessions.Working, TurnGeneration: gen, UpdatedAt: now}
			err := s.SaveSessionWithEvents(ctx, sess, []TimelineEvent{
				{Time: now, Kind: "batch", TurnGeneration: gen},
				{Time: now, Kind: "batch", TurnGeneration: gen},
			})
			if err != nil {
				fail(err)
			}
			fmt.Fprintf(out, "s %d\n", gen)
		}
		// One write per report: the parent must never see a report of a
		// commit that did not happen, and should see each one promptly.
		if err := out.Flush(); err != nil {
			fail(err)
		}
	}
	os.Exit(4)
}

// TestCrashRecovery kills a writer process with SIGKILL in the middle of its
// loop and checks that the database is intact and holds everything the
// writer reported as committed, with each multi-row transaction all there or
// not at all.
func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// If the writer stalls, kill it so the read loop below ends.
	watchdog := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() })
	defer watchdog.Stop()

	const reportsBeforeKill = 400
	var eventIDs []int64
	var maxGen int64
	reports := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		kind, num, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			continue // not a report (a line of the test framework)
		}
		switch kind {
		case "e":
			eventIDs = append(eventIDs, n)
		case "s":
			maxGen = max(maxGen, n)
		default:
			continue
		}
		reports++
		if reports == reportsBeforeKill && !killed {
			// Process.Kill is SIGKILL on unix: no deferred code, no
			// Close, no checkpoint; the writer dies wherever it is.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill writer: %v", err)
			}
			killed = true
		}
		// Keep reading: a report already in the pipe when the kill
		// landed is still a commit that happened.
	}
	waitErr := cmd.Wait()
	if !killed {
		t.Fatalf("writer stopped after %d reports (wait: %v); stderr:\n%s", reports, waitErr, stderr.String())
	}
	if runtime.GOOS != "windows" && cmd.ProcessState.ExitCode() != -1 {
		t.Fatalf("writer exited with code %d instead of dying by the signal; stderr:\n%s", cmd.ProcessState.ExitCode(), stderr.String())
	}
	t.Logf("writer killed after %d reports (%d events, session at generation %d)", reports, len(eventIDs), maxGen)

	s, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	if res, err := s.IntegrityCheck(ctx); err != nil || res != "ok" {
		t.Fatalf("integrity_check = %q, %v; want ok", res, err)
	}

	timeline, err := s.Timeline(ctx, crashSession, 0)
	if err != nil {
		t.Fatal(err)
	}
	present := map[int64]bool{}
	batches := map[int64]int{}
	var maxTick int64
	for _, ev := range timeline {
		present[ev.ID] = true
		switch ev.Kind {
		case "batch":
			batches[ev.TurnGeneration]++
		case "tick":
			maxTick = max(maxTick, ev.TurnGeneration)
		}
	}
	missing := 0
	for _, id := range eventIDs {
		if !present[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d events reported as committed are missing", missing, len(eventIDs))
	}

	sess, err := s.GetSession(ctx, crashSession)
	if err != nil {
		t.Fatal(err)
	}
	if sess.TurnGeneration < maxGen {
		t.Errorf("session at generation %d, but the writer reported committing %d", sess.TurnGeneration, maxGen)
	}
	// Atomicity: every saved generation has both of its events, and no
	// events exist for a generation whose session save was lost.
	for gen, n := range batches {
		if n != 2 {
			t.Errorf("generation %d has %d batch events, want 2", gen, n)
		}
		if gen > sess.TurnGeneration {
			t.Errorf("batch events of generation %d survived but the session is at %d", gen, sess.TurnGeneration)
		}
	}
	if batches[sess.TurnGeneration] != 2 {
		t.Errorf("the session's generation %d has %d batch events, want 2", sess.TurnGeneration, batches[sess.TurnGeneration])
	}
	// The writer commits in generation order, so the newest surviving
	// commit of either kind bounds the other from below.
	if maxTick > sess.TurnGeneration+1 {
		t.Errorf("tick of generation %d survived but the session save of generation %d was lost", maxTick, maxTick-1)
	}
}
