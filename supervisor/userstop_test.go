package supervisor

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// Issue 20 item 7: the user's interrupt that the agent ignores is enforced
// through the loop: SIGTERM once the interrupt grace has passed since the
// request, SIGKILL after a second grace; the signalled process's exit ends
// the turn in review, with evidence of what it took, and nothing is sent
// after it — not at the stall thresholds, not hours later.
func TestLoopUserStopIgnoredIsEnforced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // the defaults: 15 s tick, 10 / 150 min
		defer h.stop()
		id, p := h.launchRunning()

		h.until(1*time.Minute + 7*time.Second)
		if _, err := h.rt.Interrupt(context.Background(), id); err != nil {
			t.Fatalf("Interrupt: %v", err)
		}
		// The agent answers nothing. The grace ends at 1:37, so the tick at
		// 1:45 sends SIGTERM; the agent survives it, and the tick at 2:15
		// (past 2:07) sends SIGKILL.
		h.until(2*time.Minute + 20*time.Second)
		var got []string
		for _, c := range p.received()[1:] { // [0] is the first prompt
			got = append(got, fmt.Sprintf("%s %s @%v", c.What, c.Text, c.At.Sub(h.start)))
		}
		want := []string{
			fmt.Sprintf("interrupt  @%v", time.Minute+7*time.Second),
			fmt.Sprintf("signal %v @%v", syscall.SIGTERM, time.Minute+45*time.Second),
			fmt.Sprintf("signal %v @%v", syscall.SIGKILL, 2*time.Minute+15*time.Second),
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the agent received\n %q\nwant\n %q", got, want)
		}
		h.wantState(id, sessions.Working, sessions.NoWait)

		// SIGKILL took: the turn the user stopped is theirs to review.
		p.exit(-1, "killed")
		synctest.Wait()
		h.until(2*time.Minute + 31*time.Second) // the next tick notes what it took
		s := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		for _, want := range []string{"stopped at your request", "signal killed", "the agent ignored your interrupt, so its process group was sent SIGKILL"} {
			if !strings.Contains(s.Evidence, want) {
				t.Errorf("evidence %q lacks %q", s.Evidence, want)
			}
		}
		// Hours later: never nudged, never resumed, never escalated.
		h.until(4 * time.Hour)
		h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if starts := h.agent.startOptions(); len(starts) != 1 {
			t.Fatalf("%d processes started, want the first alone (no resume, no nudge)", len(starts))
		}
		h.wantEscalations(0)
		h.wantKinds(id, afterLaunch(
			"interrupt_requested",
			core.TimelineStopEnforced, // SIGTERM
			core.TimelineStopEnforced, // SIGKILL
			core.TimelineStateChanged, // the exit → review
		)...)
		for i, action := range []string{"terminate", "kill"} {
			rows := h.store.rowsOf(id, core.TimelineStopEnforced)
			if got := rowField(rows[i], "action"); got != action {
				t.Errorf("stop_enforced row %d is %q, want %q", i, got, action)
			}
			if got := rowField(rows[i], "outcome"); got != "ok" {
				t.Errorf("stop_enforced row %d outcome %q", i, got)
			}
		}
	})
}

// A terminal session's Interrupt records the user's stop (the app has no
// way to stop it: it never signals a process it did not launch, and its
// inbox would type the nudge into it); once the interrupt grace has passed
// with the turn still running it is escalated, and its process is never
// signalled (issue 20 item 7, the terminal half).
func TestTerminalUserStopIsEscalatedNeverSignalled(t *testing.T) {
	ctx := t.Context()
	w, g, s := termTurnRunning(t, ctx)

	got, err := g.rt.Interrupt(ctx, s.ID)
	if err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	if !got.StoppedByUser() || got.InterruptAt.IsZero() {
		t.Fatalf("interrupt by %v at %v: the user's stop is not recorded", got.InterruptBy, got.InterruptAt)
	}
	g.rt.Settle()
	rows := dbTimeline(t, g.store, s.ID)
	last := rows[len(rows)-1]
	if last.Kind != "interrupt_requested" || !strings.Contains(rowDetail(t, last)["message"].(string), "stop the turn there") {
		t.Fatalf("last row %s %s", last.Kind, last.Detail)
	}

	// The grace passes with the turn still running: one tick's decision.
	g.rt.mu.Lock()
	e := g.rt.sess[s.ID]
	probe := probeExternal(e.ext)
	acts := g.rt.reconcileLocked(e, nil, probe, got.InterruptAt.Add(core.BasePolicy().InterruptGrace), DefaultPolicy(), "")
	after := e.s.Clone()
	g.rt.mu.Unlock()
	if len(acts) != 1 || acts[0].Kind != core.ActEscalate {
		t.Fatalf("actions %+v, want one escalation", acts)
	}
	for _, a := range acts {
		g.rt.execute(e, a)
	}
	if !after.NeedsAttention || !after.InTurn || !strings.Contains(after.Evidence, "stop it in its terminal") {
		t.Fatalf("attention %v, in turn %v, evidence %q", after.NeedsAttention, after.InTurn, after.Evidence)
	}
	if err := w.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the terminal's process was signalled away: %v", err)
	}
}

// termTurnRunning is a terminal session whose turn runs a Bash tool, observed
// by a runtime (its sources watched until ctx ends) on a real store.
func termTurnRunning(t *testing.T, ctx context.Context) (*termWorld, *rig, sessions.Session) {
	t.Helper()
	w := newTermWorld(t)
	w.file.Status = "busy"
	w.transcript(tPrompt, tToolUse)
	w.register()
	g := newRig(t, rigConfig{noAgent: true, external: []ExternalSource{w.src}})
	g.rt.startExternal(ctx)
	s := waitFor(t, g.rt, 2*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	return w, g, s
}
