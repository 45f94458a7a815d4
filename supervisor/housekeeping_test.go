package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

func ids(list []sessions.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	slices.Sort(out)
	return out
}

// TestHousekeepingArchivesEndedSessions: at the tick, a session that ended,
// was acknowledged and stayed quiet for sessions.archive_after_days is
// archived once: it leaves the default list and the snapshot (so the tray
// and the window drop it), stays in the full list, and its timeline says
// so; a recent one and one awaiting review stay (issue 20, item 11).
func TestHousekeepingArchivesEndedSessions(t *testing.T) {
	now := time.Now().UTC()
	old := now.Add(-8 * 24 * time.Hour)
	ended := seedSession("a0000000-0000-4000-8000-000000000001", old)
	ended.State, ended.WaitReason, ended.Evidence = sessions.Idle, sessions.NoWait, "acknowledged by the user"
	recent := ended
	recent.ID = "b0000000-0000-4000-8000-000000000002"
	recent.UpdatedAt = now.Add(-24 * time.Hour)
	review := seedSession("c0000000-0000-4000-8000-000000000003", old)
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{ended, recent, review}})
	ctx := context.Background()

	set := g.svc.Get()
	g.rt.Tick(ctx, set)
	g.rt.Settle()
	g.rt.Tick(ctx, set) // once only
	g.rt.Settle()

	if got, err := g.client.Sessions(ctx); err != nil || !slices.Equal(ids(got), []string{recent.ID, review.ID}) {
		t.Fatalf("default list = %v, %v; want the recent and the review", ids(got), err)
	}
	all, err := g.client.AllSessions(ctx)
	if err != nil || !slices.Equal(ids(all), []string{ended.ID, recent.ID, review.ID}) {
		t.Fatalf("full list = %v, %v; want all three", ids(all), err)
	}
	if i := slices.IndexFunc(all, func(s sessions.Session) bool { return s.ID == ended.ID }); all[i].ArchivedAt.IsZero() {
		t.Errorf("the archived session's archived_at is zero")
	}
	stored, err := g.store.GetSession(ctx, ended.ID)
	if err != nil || stored.ArchivedAt.IsZero() {
		t.Errorf("stored archived_at %v, %v", stored.ArchivedAt, err)
	}
	rows := dbTimeline(t, g.store, ended.ID)
	if n := len(slices.DeleteFunc(rows, func(r storage.TimelineEvent) bool { return r.Kind != core.TimelineArchived })); n != 1 {
		t.Errorf("%d archived rows, want 1", n)
	}
	// A view following the stream learns it: the session's message says
	// archived, and a new subscriber's snapshot lacks it.
	if !slices.ContainsFunc(g.rec.states(ended.ID), func(s sessions.Session) bool { return !s.ArchivedAt.IsZero() }) {
		t.Errorf("no session message saying it was archived")
	}
	sub := g.rt.Subscribe(16, false)
	defer g.rt.Bus().Unsubscribe(sub)
	if m := <-sub.C; m.Type != localapi.MsgSnapshot || slices.ContainsFunc(m.Sessions, func(s sessions.Session) bool { return s.ID == ended.ID }) {
		t.Errorf("first message %s lists the archived session: %v", m.Type, ids(m.Sessions))
	}
	// Still readable by id.
	if tl, err := g.client.Timeline(ctx, ended.ID[:8], 0); err != nil || len(tl) == 0 {
		t.Errorf("timeline of the archived session: %d rows, %v", len(tl), err)
	}
}

// TestHousekeepingArchiveOff: sessions.archive_after_days 0 never archives.
func TestHousekeepingArchiveOff(t *testing.T) {
	ended := seedSession("a0000000-0000-4000-8000-000000000001", time.Now().Add(-400*24*time.Hour))
	ended.State, ended.WaitReason = sessions.Idle, sessions.NoWait
	g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{ended}})
	ctx := context.Background()
	if _, err := g.svc.Update(ctx, "sessions.archive_after_days", "0"); err != nil {
		t.Fatal(err)
	}
	g.rt.Tick(ctx, g.svc.Get())
	g.rt.Settle()
	if got := g.rt.Sessions(); len(got) != 1 || !got[0].ArchivedAt.IsZero() {
		t.Fatalf("archived with the setting at 0: %+v", got)
	}
}

// TestForget: forget removes an ended session from every list, keeping
// its timeline (with a last row saying so) or deleting it as the user
// chose; a session still running is refused (issue 20, item 11).
func TestForget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		choice storage.TimelineChoice
		rows   bool
	}{{"keep the timeline", storage.KeepTimeline, true}, {"drop the timeline", storage.DropTimeline, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := seedSession("d0000000-0000-4000-8000-000000000004", time.Now().Add(-time.Hour))
			g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
			ctx := context.Background()
			if _, err := g.client.Ack(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			got, err := g.client.Forget(ctx, s.ID[:8], tc.choice)
			if err != nil || got.ID != s.ID {
				t.Fatalf("Forget: %s, %v", got.ID, err)
			}
			if all, _ := g.client.AllSessions(ctx); len(all) != 0 {
				t.Errorf("still listed: %v", ids(all))
			}
			if _, err := g.client.Session(ctx, s.ID); !errors.Is(err, localapi.ErrNotFound) {
				t.Errorf("show after forget: %v, want not found", err)
			}
			if _, err := g.store.GetSession(ctx, s.ID); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("stored after forget: %v", err)
			}
			rows := dbTimeline(t, g.store, s.ID)
			if tc.rows != (len(rows) > 0) || tc.rows && rows[len(rows)-1].Kind != "forgotten" {
				t.Errorf("timeline after forget (%s): %v", tc.choice, rowKinds(rows))
			}
			if _, err := g.client.Forget(ctx, s.ID, tc.choice); !errors.Is(err, localapi.ErrNotFound) {
				t.Errorf("forgetting twice: %v, want not found", err)
			}
		})
	}
	t.Run("running", func(t *testing.T) {
		g := newRig(t, rigConfig{})
		s := g.launch("perm", []fcStep{fcWaitPermission(`{"command":"ls"}`), fcText, fcResult})
		g.wait(s.ID, "the permission request", func(s sessions.Session) bool { return s.State == sessions.WaitingOnUser })
		_, err := g.rt.Forget(context.Background(), s.ID, storage.DropTimeline)
		if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "still runs") {
			t.Fatalf("forgetting a running session: %v, want a conflict saying it still runs", err)
		}
		if _, err := g.rt.Session(s.ID); err != nil {
			t.Errorf("the refused forget removed it: %v", err)
		}
	})
}

// TestLaunchWithoutANameIsNamedFromItsPrompt: a managed session launched
// without a name is named from its prompt by the rule terminal sessions
// follow, not shown as an id prefix in the tray and notifications; a name
// given wins (issue 20, item 9).
func TestLaunchWithoutANameIsNamedFromItsPrompt(t *testing.T) {
	for _, tc := range []struct{ name, prompt, want string }{
		{"", "Shared preamble.\nYou are the release notes writer.\nGo.", "the release notes writer"},
		{"", "fix the flaky login test", "fix the flaky login test"},
		{"mine", "fix the flaky login test", "mine"},
	} {
		g := newRig(t, rigConfig{})
		g.agent.setScript(writeFakeScript(t, []fcStep{fcText, fcResult}))
		s, err := g.rt.Launch(context.Background(), localapi.LaunchRequest{Cwd: g.cwd, Name: tc.name, Prompt: tc.prompt})
		if err != nil {
			t.Fatalf("Launch: %v", err)
		}
		if s.Name != tc.want || s.DisplayName() != tc.want {
			t.Errorf("launched %q with name %q: named %q, want %q", tc.prompt, tc.name, s.Name, tc.want)
		}
		g.wait(s.ID, "the turn to complete", inReview)
	}
}

// reapingAgent stands in for an agent whose orphan reaper found the
// process a stored session claims still running, and stopped it.
type reapingAgent struct {
	*scriptAgent
	reaped []int
}

// The runtime finds the reaper by this interface: a signature that drifts
// from it must not compile (it would silently reap nothing).
var _ OrphanReaper = (*reapingAgent)(nil)

func (a *reapingAgent) ReapOrphan(pid int, _ string) (bool, error) {
	a.reaped = append(a.reaped, pid)
	return true, nil
}

// TestBootOrphanAndInterruptRows: an orphan reaped at boot leaves a row
// even when the session had no turn in flight; a managed turn the boot
// ends is marked_interrupted with the cause "boot" (issue 20, item 12).
func TestBootOrphanAndInterruptRows(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	idle := seedSession("e0000000-0000-4000-8000-000000000005", now)
	idle.State, idle.WaitReason, idle.ProcessAlive, idle.PID = sessions.Idle, sessions.NoWait, true, 4242
	inTurn := seedSession("f0000000-0000-4000-8000-000000000006", now)
	inTurn.State, inTurn.WaitReason, inTurn.InTurn, inTurn.ProcessAlive, inTurn.PID = sessions.Working, sessions.NoWait, true, true, 4343
	for _, s := range []sessions.Session{idle, inTurn} {
		if err := st.SaveSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	agent := &reapingAgent{scriptAgent: &scriptAgent{}}
	rt := New(Options{Store: st, Agents: map[string]Agent{"claude": agent}, DefaultAgent: "claude", Connectivity: unknownConnectivity})
	if err := rt.Boot(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Settle()
	if !slices.Equal(agent.reaped, []int{4242, 4343}) && !slices.Equal(agent.reaped, []int{4343, 4242}) {
		t.Fatalf("reaped %v", agent.reaped)
	}
	rows := dbTimeline(t, st, idle.ID)
	if !slices.ContainsFunc(rows, func(r storage.TimelineEvent) bool {
		return r.Kind == core.TimelineOrphanReaped && strings.Contains(string(r.Detail), "4242")
	}) {
		t.Errorf("no row for the orphan reaped at boot: %v", rowKinds(rows))
	}
	rows = dbTimeline(t, st, inTurn.ID)
	i := slices.IndexFunc(rows, func(r storage.TimelineEvent) bool { return r.Kind == core.TimelineMarkedInterrupted })
	if i < 0 || rowDetail(t, rows[i])["cause"] != "boot" {
		t.Errorf("no marked_interrupted row with cause boot: %v", rowKinds(rows))
	}
	if !slices.ContainsFunc(rows, func(r storage.TimelineEvent) bool { return strings.Contains(string(r.Detail), "4343, left running") }) {
		t.Errorf("the in-turn session's orphan is not recorded: %v", rowKinds(rows))
	}
}

// TestExitEventIsMarkedInterrupted: a turn whose process exits mid-turn
// leaves a marked_interrupted row with the cause "exit_event" (issue 20,
// item 12).
func TestExitEventIsMarkedInterrupted(t *testing.T) {
	g := newRig(t, rigConfig{})
	s := g.launch("dies", []fcStep{fcBash, fcKill})
	g.wait(s.ID, "the turn to be interrupted", func(s sessions.Session) bool { return s.State == sessions.Interrupted })
	g.rt.Settle()
	rows := dbTimeline(t, g.store, s.ID)
	i := slices.IndexFunc(rows, func(r storage.TimelineEvent) bool { return r.Kind == core.TimelineMarkedInterrupted })
	if i < 0 || rowDetail(t, rows[i])["cause"] != "exit_event" {
		t.Fatalf("no marked_interrupted row with cause exit_event: %v", rowKinds(rows))
	}
}
