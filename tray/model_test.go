package tray

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func sess(id, name string, st sessions.State, mod func(*sessions.Session)) sessions.Session {
	s := sessions.Session{ID: id, Name: name, State: st, StateChangedAt: now.Add(-12 * time.Minute)}
	if st == sessions.Working || st == sessions.Suspect || st == sessions.Compacting {
		s.InTurn = true
	}
	if mod != nil {
		mod(&s)
	}
	return s
}

func attention(s *sessions.Session) { s.NeedsAttention = true }

func TestAggregateIcon(t *testing.T) {
	cases := []struct {
		name string
		list []sessions.Session
		want assets.Icon
	}{
		{"empty", nil, assets.IconIdle},
		{"idle", []sessions.Session{sess("a", "a", sessions.Idle, nil)}, assets.IconIdle},
		{"working beats idle", []sessions.Session{sess("a", "a", sessions.Idle, nil), sess("b", "b", sessions.Working, nil)}, assets.IconWorking},
		{"compacting is working", []sessions.Session{sess("a", "a", sessions.Compacting, nil)}, assets.IconWorking},
		{"suspect beats working", []sessions.Session{sess("a", "a", sessions.Working, nil), sess("b", "b", sessions.Suspect, nil)}, assets.IconRecovering},
		{"recovering", []sessions.Session{sess("a", "a", sessions.Recovering, nil)}, assets.IconRecovering},
		{"waiting beats recovering", []sessions.Session{sess("a", "a", sessions.Recovering, nil), sess("b", "b", sessions.WaitingOnUser, nil)}, assets.IconWaiting},
		{"attention beats all", []sessions.Session{sess("a", "a", sessions.WaitingOnUser, nil), sess("b", "b", sessions.Interrupted, attention)}, assets.IconAttention},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Aggregate(tc.list); got != tc.want {
				t.Errorf("Aggregate = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	cases := []struct {
		list []sessions.Session
		want string
	}{
		{nil, "No sessions"},
		{[]sessions.Session{sess("a", "a", sessions.Idle, nil), sess("b", "b", sessions.Idle, nil)}, "2 idle"},
		{[]sessions.Session{sess("a", "a", sessions.Working, nil), sess("b", "b", sessions.Working, nil), sess("c", "c", sessions.Working, nil), sess("d", "d", sessions.Errored, attention)}, "3 working · 1 needs you"},
		{[]sessions.Session{sess("a", "a", sessions.WaitingOnUser, nil), sess("b", "b", sessions.Errored, attention), sess("c", "c", sessions.Interrupted, attention)}, "2 need you · 1 waiting"},
		{[]sessions.Session{sess("a", "a", sessions.Suspect, nil)}, "1 recovering"},
	}
	for _, tc := range cases {
		if got := Header(tc.list); got != tc.want {
			t.Errorf("Header(%d sessions) = %q, want %q", len(tc.list), got, tc.want)
		}
	}
}

// labels are items' labels as a tray host shows them (no hidden place),
// "---" for a separator.
func labels(items []Item) []string {
	var out []string
	for _, it := range items {
		if it.Hidden {
			continue
		}
		if it.Separator {
			out = append(out, "---")
			continue
		}
		out = append(out, it.Label)
	}
	return out
}

func TestBuildMenu(t *testing.T) {
	list := []sessions.Session{
		sess("w1", "refactor", sessions.Working, nil),
		sess("e1", "deploy", sessions.Interrupted, attention),
		sess("q1", "docs", sessions.WaitingOnUser, func(s *sessions.Session) {
			s.WaitReason = sessions.WaitPermission
			s.StateChangedAt = now.Add(-45 * time.Second)
		}),
	}
	m := Build(Snapshot{Sessions: list, Now: now})
	want := []string{
		"1 working · 1 needs you · 1 waiting",
		"---",
		"⚠ deploy — Needs attention (Interrupted) · 12m",
		"● docs — Waiting on user (permission) · 45s",
		"▶ refactor — Working · 12m",
		"---",
		"Open Session Supervisor…",
		"Settings…",
		"Pause supervisor",
		"---",
		"Quit",
	}
	if got := labels(m.Items); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("menu:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m.Icon != assets.IconAttention {
		t.Errorf("icon %s, want attention", m.Icon)
	}
	shown := visible(m.Items)
	if !shown[0].Disabled {
		t.Error("the header must not be clickable")
	}
	// Submenus: actions enabled where they make sense.
	sub := func(i int) map[string]Item {
		out := map[string]Item{}
		for _, c := range shown[i].Children {
			out[c.Label] = c
		}
		return out
	}
	deploy, refactor := sub(2), sub(4)
	cases := []struct {
		name     string
		item     Item
		action   Action
		disabled bool
	}{
		{"deploy open", deploy["Open"], ActOpenSession, false},
		{"deploy nudge", deploy["Send nudge now"], ActNudge, false},
		{"deploy interrupt", deploy["Interrupt turn"], ActInterrupt, true},
		{"deploy ack", deploy["Acknowledge"], ActAcknowledge, false},
		{"refactor nudge while working", refactor["Send nudge now"], ActNudge, true},
		{"refactor interrupt", refactor["Interrupt turn"], ActInterrupt, false},
		{"refactor ack", refactor["Acknowledge"], ActAcknowledge, true},
	}
	for _, tc := range cases {
		if tc.item.Action != tc.action || tc.item.Disabled != tc.disabled || tc.item.SessionID == "" {
			t.Errorf("%s: %+v, want action %s disabled %v", tc.name, tc.item, tc.action, tc.disabled)
		}
	}
	pause := shown[len(shown)-3]
	if pause.Action != ActTogglePause || !pause.Checkable || pause.Checked {
		t.Errorf("pause item %+v", pause)
	}
}

func TestBuildPausedAndEmpty(t *testing.T) {
	m := Build(Snapshot{Paused: true, Now: now})
	got := labels(m.Items)
	want := []string{"No sessions (supervisor paused)", "---", "Open Session Supervisor…", "Settings…", "Pause supervisor", "---", "Quit"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("menu %q, want %q", got, want)
	}
	if !m.Items[len(m.Items)-3].Checked {
		t.Error("pause must be checked while paused")
	}
	if m.Icon != assets.IconIdle {
		t.Errorf("icon %s", m.Icon)
	}
}

func TestBuildCapsLongLists(t *testing.T) {
	var list []sessions.Session
	for i := range MaxTopLevel + 5 {
		list = append(list, sess(fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), sessions.Idle, nil))
	}
	list[14].NeedsAttention = true // the last one needs attention: it must move to the top
	m := Build(Snapshot{Sessions: list, Now: now})
	var sessionsTop int
	var more *Item
	for i, it := range m.Items {
		if it.SessionID != "" {
			sessionsTop++
		}
		if strings.HasPrefix(it.Label, "More…") {
			more = &m.Items[i]
		}
	}
	if sessionsTop != MaxTopLevel {
		t.Errorf("%d sessions at the top level, want %d", sessionsTop, MaxTopLevel)
	}
	if more == nil || more.Label != "More… (5)" || len(more.Children) != 5 {
		t.Fatalf("More item = %+v", more)
	}
	if first := visible(m.Items)[2]; first.SessionID != "s14" {
		t.Errorf("first session %q, want the one needing attention", first.SessionID)
	}
}

// The tray sleeps: with nothing changed it builds no menu until a label
// would move (an hour-old session's age at its next hour), a snapshot that
// repeats the model (every minute from every machine) builds none, and a
// menu whose labels are unchanged is not sent to the tray again.
func TestFollowSleepsWhileNothingMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		list := func() []sessions.Session {
			return []sessions.Session{
				// "1h" until 30 minutes from now, then "2h".
				{ID: "a", Name: "alpha", State: sessions.Idle, StateChangedAt: start.Add(-90 * time.Minute)},
				{ID: "b", Name: "beta", State: sessions.WaitingOnUser, StateChangedAt: start.Add(-5 * time.Hour)},
			}
		}
		m := model.New()
		m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: list()})
		// sent is what Tray.Show would hand the tray host: a menu that
		// differs from the one shown.
		var sent []Menu
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		builds := 0
		counts := func() (int, int) { mu.Lock(); defer mu.Unlock(); return builds, len(sent) }
		done := make(chan struct{})
		go func() {
			defer close(done)
			Follow(ctx, m, time.Now, func(menu Menu) {
				mu.Lock()
				defer mu.Unlock()
				builds++
				if len(sent) == 0 || changed(sent[len(sent)-1], menu) {
					sent = append(sent, menu)
				}
			})
		}()
		for range 29 {
			time.Sleep(time.Minute)
			// The minute's snapshot, the same sessions.
			m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: list()})
		}
		synctest.Wait()
		if n, sent := counts(); n != 1 || sent != 1 {
			t.Fatalf("29 idle minutes: %d menus built, %d sent; want the first only", n, sent)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n, sent := counts(); n != 2 || sent != 2 {
			t.Fatalf("at alpha's next hour: %d menus built, %d sent; want 2", n, sent)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := labels(sent[1].Items); !strings.Contains(strings.Join(got, "\n"), "alpha — Idle · 2h") {
			t.Fatalf("the menu after the hour: %q", got)
		}
		cancel()
		<-done
	})
}

// NextChange is the earliest label to move: an age, or the link's
// countdown every second while it shows.
func TestNextChange(t *testing.T) {
	cases := []struct {
		name string
		snap Snapshot
		want time.Duration
	}{
		{"no sessions", Snapshot{Now: now}, 0},
		{"minutes and hours", Snapshot{Now: now, Sessions: []sessions.Session{
			{StateChangedAt: now.Add(-3*time.Hour - 10*time.Minute)}, {StateChangedAt: now.Add(-12*time.Minute - 20*time.Second)}}}, 40 * time.Second},
		{"the link's countdown", Snapshot{Now: now, Link: "Supervisor not running — reconnecting in 4s (attempt 2)",
			Sessions: []sessions.Session{{StateChangedAt: now.Add(-3 * time.Hour)}}}, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NextChange(c.snap)
			if c.want == 0 {
				if !got.IsZero() {
					t.Fatalf("next change at %s, want none", got)
				}
				return
			}
			if got.Sub(now) != c.want {
				t.Fatalf("next change in %s, want %s", got.Sub(now), c.want)
			}
		})
	}
}

// The submenu offers Acknowledge exactly when acknowledging changes
// something (view.Allows, which follows sessions.Apply): a question asked
// outside a turn is not settled by acknowledging it, a reviewed turn is.
func TestAcknowledgeFollowsApply(t *testing.T) {
	cases := []struct {
		name     string
		s        sessions.Session
		disabled bool
	}{
		{"question out of turn", sess("a", "a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitQuestion }), true},
		{"review", sess("a", "a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitReview }), false},
		{"escalated while working", sess("a", "a", sessions.Working, attention), false},
		{"idle", sess("a", "a", sessions.Idle, nil), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range sessionItem(tc.s, now).Children {
				if c.Action == ActAcknowledge && c.Disabled != tc.disabled {
					t.Errorf("Acknowledge disabled = %t, want %t", c.Disabled, tc.disabled)
				}
			}
		})
	}
}

// Follow renders from the model's memory: once at the start, once per
// burst of model changes, with the model's sessions and Pause.
func TestFollowRendersTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := model.New()
		m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{sess("a", "alpha", sessions.Working, nil)}})
		ctx, cancel := context.WithCancel(context.Background())
		var menus []Menu
		done := make(chan struct{})
		go func() {
			Follow(ctx, m, func() time.Time { return now }, func(mu Menu) { menus = append(menus, mu) })
			close(done)
		}()
		synctest.Wait()
		if len(menus) != 1 || visible(menus[0].Items)[2].Label != "▶ alpha — Working · 12m" {
			t.Fatalf("first menu: %d menus %q", len(menus), labels(menus[len(menus)-1].Items))
		}
		s := sess("a", "alpha", sessions.Errored, attention)
		for range 20 {
			m.Apply(localapi.Message{Type: localapi.MsgSession, Session: &s})
		}
		m.SetPrefs(model.Prefs{Paused: true})
		time.Sleep(renderDelay)
		synctest.Wait()
		if len(menus) != 2 {
			t.Fatalf("%d menus after one burst, want 2", len(menus))
		}
		last := menus[1]
		if last.Icon != assets.IconAttention || !strings.HasSuffix(visible(last.Items)[0].Label, "(supervisor paused)") {
			t.Fatalf("after the burst: icon %s, %q", last.Icon, labels(last.Items))
		}
		cancel()
		<-done
	})
}

// "Resume in the background" is offered only on a terminal session whose
// process died mid-turn, by the shared rule (view.Allows).
func TestResumeItemOnlyWhereAllowed(t *testing.T) {
	dead := sess("t1", "terminal", sessions.Interrupted, func(s *sessions.Session) {
		s.Source, s.AgentSessionID, s.NeedsAttention = sessions.Observed, "sid", true
	})
	alive := sess("t2", "alive", sessions.Interrupted, func(s *sessions.Session) {
		s.Source, s.AgentSessionID, s.ProcessAlive = sessions.Observed, "sid", true
	})
	managed := sess("m1", "managed", sessions.Interrupted, func(s *sessions.Session) { s.AgentSessionID = "sid" })
	for _, tc := range []struct {
		s    sessions.Session
		want bool
	}{{dead, true}, {alive, false}, {managed, false}} {
		var found *Item
		for _, c := range sessionItem(tc.s, now).Children {
			if c.Label == "Resume in the background" {
				found = &c
			}
		}
		if (found != nil) != tc.want || found != nil && (found.Action != ActResume || found.SessionID != tc.s.ID || found.Disabled) {
			t.Errorf("%s: resume item %+v, want present %v", tc.s.Name, found, tc.want)
		}
	}
	if ActResume.String() != "resume" {
		t.Error(ActResume.String())
	}
}

// "Go to terminal" is on every session the app did not launch, enabled
// while its process runs (the shared rule, view.Allows), never on a
// managed one.
func TestGoToTerminalItem(t *testing.T) {
	running := sess("t1", "running", sessions.Working, func(s *sessions.Session) {
		s.Source, s.PID, s.ProcessAlive = sessions.Observed, 4242, true
	})
	gone := sess("t2", "gone", sessions.Interrupted, func(s *sessions.Session) { s.Source, s.PID = sessions.Observed, 4242 })
	managed := sess("m1", "managed", sessions.Working, func(s *sessions.Session) { s.PID, s.ProcessAlive = 4242, true })
	for _, tc := range []struct {
		s                 sessions.Session
		present, disabled bool
	}{{running, true, false}, {gone, true, true}, {managed, false, false}} {
		checkChild(t, tc.s, ActGoToTerminal, "Go to terminal", tc.present, tc.disabled)
	}
	if ActGoToTerminal.String() != "go_to_terminal" {
		t.Error(ActGoToTerminal.String())
	}
}

// The header's second line is the day's equivalent API cost, once the
// supervisor told it, labelled as such (never a charge); a session's
// submenu carries its "Stop recovering" check.
func TestBuildTodayAndRecoverySwitch(t *testing.T) {
	off := sess("o1", "runaway", sessions.Interrupted, func(s *sessions.Session) { s.RecoveryOff = true })
	tests := []struct {
		name  string
		today *model.DayUsage
		want  string // the line after the header; "" for none
	}{
		{"not told yet: no line", nil, ""},
		{"nothing spent today", &model.DayUsage{Day: "2026-12-02"}, "Today: $0.00 equivalent API cost"},
		{"priced", &model.DayUsage{Day: "2026-12-02", Cost: 3_124_000}, "Today: $3.12 equivalent API cost"},
		{"part at the fallback rate", &model.DayUsage{Day: "2026-12-02", Cost: 410_000, Unknown: true},
			"Today: $0.41 equivalent API cost (some models at the fallback rate)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(Snapshot{Sessions: []sessions.Session{off}, Now: now, Today: tt.today})
			got := labels(m.Items)
			if got[0] != "1 idle" && !strings.HasPrefix(got[0], "1 ") {
				t.Fatalf("header %q", got[0])
			}
			line := got[1]
			if line == "---" {
				line = ""
			}
			if line != tt.want {
				t.Fatalf("line after the header %q, want %q (menu %q)", line, tt.want, got)
			}
			if tt.want != "" && !visible(m.Items)[1].Disabled {
				t.Error("the day's line must not be clickable")
			}
			var sw *Item
			for i := range m.Items {
				for j, c := range m.Items[i].Children {
					if c.Action == ActToggleRecovery {
						sw = &m.Items[i].Children[j]
					}
				}
			}
			if sw == nil || sw.Label != "Stop recovering" || !sw.Checkable || !sw.Checked || sw.SessionID != "o1" || sw.Disabled {
				t.Fatalf("the switch: %+v", sw)
			}
		})
	}
	on := sess("w1", "refactor", sessions.Working, nil)
	m := Build(Snapshot{Sessions: []sessions.Session{on}, Now: now})
	for _, c := range visible(m.Items)[2].Children {
		if c.Action == ActToggleRecovery && c.Checked {
			t.Fatalf("a session recovered as usual shows the switch checked: %+v", c)
		}
	}
}

// With other machines configured the menu lists each machine's sessions
// under its heading, this machine first; the icon and the summary count
// every machine's.
func TestBuildGroupsByMachine(t *testing.T) {
	here := sess("a", "local-work", sessions.Idle, nil)
	remote := sess("b@devbox", "remote-fix", sessions.Interrupted, attention)
	many := make([]sessions.Session, MaxTopLevel+2)
	for i := range many {
		many[i] = sess(fmt.Sprintf("z%02d@zeta", i), fmt.Sprintf("z%02d", i), sessions.Idle, nil)
	}
	m := Build(Snapshot{Now: now, Sessions: append([]sessions.Session{here, remote}, many...), Groups: []Group{
		{Heading: "This machine", Sessions: []sessions.Session{here}},
		{Heading: "devbox — reconnecting since 12:03: Connection refused", Sessions: []sessions.Session{remote}},
		{Heading: "zeta — connected", Sessions: many},
	}})
	if m.Icon != assets.IconAttention {
		t.Errorf("icon %s, want attention: the remote session needs the user", m.Icon)
	}
	var got []string
	for _, it := range visible(m.Items) {
		switch {
		case it.Separator:
			got = append(got, "--")
		case it.SessionID != "":
			got = append(got, "s:"+it.SessionID)
		case strings.HasPrefix(it.Label, "More…"):
			got = append(got, fmt.Sprintf("more:%d", len(it.Children)))
		default:
			got = append(got, it.Label)
		}
	}
	want := []string{"1 needs you", "--",
		"This machine", "s:a", "--",
		"devbox — reconnecting since 12:03: Connection refused", "s:b@devbox", "--",
		"zeta — connected"}
	for i := range MaxTopLevel {
		want = append(want, fmt.Sprintf("s:z%02d@zeta", i))
	}
	want = append(want, "more:2", "--", "Open Session Supervisor…", "Settings…", "Pause supervisor", "--", "Quit")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("menu:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The remote session's actions carry its key, which routes them.
	for _, c := range visible(m.Items)[6].Children {
		if c.SessionID != "b@devbox" {
			t.Errorf("%q acts on %q, want b@devbox", c.Label, c.SessionID)
		}
	}
}

// SnapshotOf groups only when the model has machines.
func TestSnapshotOfGroups(t *testing.T) {
	m := model.New()
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{sess("a", "a", sessions.Idle, nil)}})
	if g := SnapshotOf(m, now).Groups; g != nil {
		t.Fatalf("groups %v with no machine configured", g)
	}
	m.SetMachines([]string{"devbox"})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: []sessions.Session{sess(model.Key("devbox", "a"), "a", sessions.Working, nil)}})
	snap := SnapshotOf(m, now)
	if len(snap.Sessions) != 2 || len(snap.Groups) != 2 || snap.Groups[1].Heading != "devbox — connecting…" || len(snap.Groups[1].Sessions) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
}

// "Continue in terminal" is on every managed session, enabled by the shared
// rule (view.Allows: its agent session id known, no other process on its
// conversation), never on a terminal session.
func TestContinueInTerminalItem(t *testing.T) {
	managed := sess("m1", "managed", sessions.Working, func(s *sessions.Session) {
		s.PID, s.ProcessAlive, s.InTurn, s.AgentSessionID = 4242, true, true, "sid"
	})
	starting := sess("m2", "starting", sessions.Working, func(s *sessions.Session) { s.PID, s.ProcessAlive = 4242, true })
	terminal := sess("t1", "terminal", sessions.Working, func(s *sessions.Session) {
		s.Source, s.PID, s.ProcessAlive, s.AgentSessionID = sessions.Observed, 4242, true, "sid"
	})
	for _, tc := range []struct {
		s                 sessions.Session
		present, disabled bool
	}{{managed, true, false}, {starting, true, true}, {terminal, false, false}} {
		checkChild(t, tc.s, ActContinueInTerminal, "Continue in terminal", tc.present, tc.disabled)
	}
	if ActContinueInTerminal.String() != "continue_in_terminal" {
		t.Error(ActContinueInTerminal.String())
	}
}

// checkChild checks that s's submenu has (or has not) the item of action a,
// labelled label, for s, disabled or not.
func checkChild(t *testing.T, s sessions.Session, a Action, label string, present, disabled bool) {
	t.Helper()
	var found *Item
	for _, c := range sessionItem(s, now).Children {
		if c.Action == a {
			found = &c
		}
	}
	if (found != nil) != present || found != nil && (found.Label != label || found.SessionID != s.ID || found.Disabled != disabled) {
		t.Errorf("%s: item %+v, want present %t disabled %t", s.Name, found, present, disabled)
	}
}
