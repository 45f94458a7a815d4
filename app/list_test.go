package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

func TestListShowsSessionsWithStateText(t *testing.T) {
	e := newEnv(t, seed(), nil)
	got := e.renderedRows()
	want := []string{
		"[Needs attention] refactor-auth   claude · ~/src/refactor-auth | turn 3 died mid-work; 2 nudges sent, nothing left to try | 12m",
		"[Waiting on user] api-migration   claude · ~/src/api-migration | asks to run Bash: go test ./... | 45s",
		"[Waiting on user] docs-site   claude · ~/src/docs-site | turn 5 finished; waiting for your review | 3m",
		"[Suspect] search-index   claude · ~/src/search-index | 12 min silent, Bash open, pid 4242 alive | 2m",
		"[Recovering] billing-export   claude · ~/src/billing-export | rate limited; continuing when the limit resets | 6m",
		"[Working] ui-polish   claude · ~/src/ui-polish | tool Edit finished | 20s",
		"[Idle] old-experiment   claude · ~/src/old-experiment | session closed | 2d",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := richString(e.w.list.count); c != "7 sessions" {
		t.Errorf("count = %q", c)
	}
}

func TestBadgeColourFollowsTheTray(t *testing.T) {
	for _, s := range seed() {
		b := newBadge()
		b.set(s)
		want := map[string]any{
			"refactor-auth": colorAttention, "docs-site": colorWaiting, "api-migration": colorWaiting,
			"billing-export": colorRecovering, "search-index": colorRecovering,
			"ui-polish": colorWorking, "old-experiment": colorIdle,
		}[s.Name]
		if b.bg.FillColor != want {
			t.Errorf("%s: colour %v, want %v", s.Name, b.bg.FillColor, want)
		}
		if b.text.Text == "" {
			t.Errorf("%s: a badge without words", s.Name)
		}
	}
	// Errored or Interrupted and not yet escalated: the supervisor is on it.
	for _, st := range []sessions.State{sessions.Errored, sessions.Interrupted} {
		if c := stateColor(sessions.Session{State: st}); c != colorRecovering {
			t.Errorf("%s: %v, want the recovering purple", st, c)
		}
	}
}

func TestFilterByStateAndText(t *testing.T) {
	e := newEnv(t, seed(), nil)
	v := e.w.list

	v.state.SetSelected(sessions.WaitingOnUser.Label())
	if rows := e.renderedRows(); len(rows) != 2 || !strings.Contains(rows[0], "api-migration") || !strings.Contains(rows[1], "docs-site") {
		t.Fatalf("waiting filter: %q", rows)
	}
	if c := richString(v.count); c != "2 of 7" {
		t.Errorf("count = %q", c)
	}

	test.Type(v.text, "docs")
	if rows := e.renderedRows(); len(rows) != 1 || !strings.Contains(rows[0], "docs-site") {
		t.Fatalf("waiting + docs: %q", rows)
	}

	// Text matches the evidence and the folder too, case-insensitively.
	v.state.SetSelected(filterAll)
	v.text.SetText("BASH")
	if rows := e.renderedRows(); len(rows) != 2 {
		t.Fatalf("evidence filter: %q", rows)
	}
	v.text.SetText("src/ui-")
	if rows := e.renderedRows(); len(rows) != 1 || !strings.Contains(rows[0], "ui-polish") {
		t.Fatalf("folder filter: %q", rows)
	}

	v.text.SetText("")
	v.state.SetSelected(filterAttention)
	if rows := e.renderedRows(); len(rows) != 1 || !strings.Contains(rows[0], "refactor-auth") {
		t.Fatalf("attention filter: %q", rows)
	}

	v.state.SetSelected(sessions.Compacting.Label())
	if len(e.renderedRows()) != 0 || !v.empty.Visible() || v.empty.Text != "No session matches the filter." {
		t.Fatalf("an empty filter result must say so: visible=%v %q", v.empty.Visible(), v.empty.Text)
	}
}

func TestKeyboardMovesAndOpens(t *testing.T) {
	e := newEnv(t, seed(), nil)
	c := e.w.win.Canvas()
	if c.Focused() != e.w.list.list {
		t.Fatalf("showing the list focuses it; focused = %T", c.Focused())
	}
	e.key(fyne.KeyDown)
	e.key(fyne.KeyDown)
	e.key(fyne.KeyUp)
	if s, _ := e.w.list.list.current(); s.ID != "c3" {
		t.Fatalf("cursor on %s, want api-migration (second row)", s.Name)
	}
	e.key(fyne.KeyReturn)
	if !e.w.detail.content.Visible() || e.w.list.content.Visible() {
		t.Fatal("Enter did not open the detail")
	}
	if e.w.detail.name.Text != "api-migration" {
		t.Fatalf("opened %q", e.w.detail.name.Text)
	}

	// Back keeps the cursor where it was and the keyboard on the list.
	test.Tap(e.w.detail.back)
	if c.Focused() != e.w.list.list {
		t.Fatal("back from the detail must return the keyboard to the list")
	}
	e.key(fyne.KeyDown)
	e.key(fyne.KeyEnter)
	if e.w.detail.name.Text != "docs-site" {
		t.Fatalf("opened %q, want the row below api-migration", e.w.detail.name.Text)
	}

	// The detail takes the keyboard from the list; Escape goes back.
	if c.Focused() != nil {
		t.Fatalf("the hidden list kept the keyboard: %T", c.Focused())
	}
	c.OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if !e.w.list.content.Visible() {
		t.Fatal("Escape did not go back to the list")
	}

	// The cursor never leaves the list.
	for range 20 {
		e.key(fyne.KeyDown)
	}
	if s, _ := e.w.list.list.current(); s.ID != "g7" {
		t.Fatalf("cursor on %s after many Downs, want the last row", s.Name)
	}
}

func TestFocusNextReachesTheList(t *testing.T) {
	e := newEnv(t, seed(), nil)
	c := e.w.win.Canvas()
	c.Unfocus()
	for range 10 {
		test.FocusNext(c)
		if c.Focused() == e.w.list.list {
			return
		}
	}
	t.Fatal("Tab never reaches the sessions list")
}

func TestClickOpensEvenTheSameRowTwice(t *testing.T) {
	e := newEnv(t, seed(), nil)
	l := e.w.list.list
	// What a click does: the List moves its focus index and selects.
	l.Select(3)
	if e.w.detail.name.Text != "search-index" {
		t.Fatalf("click opened %q", e.w.detail.name.Text)
	}
	e.w.showList()
	l.Select(3)
	if !e.w.detail.content.Visible() {
		t.Fatal("a second click on the same row must open it again")
	}
}

func TestCursorFollowsItsSessionThroughRefresh(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.key(fyne.KeyDown)
	e.key(fyne.KeyDown) // docs-site
	e.w.list.text.SetText("docs")
	if s, _ := e.w.list.list.current(); s.ID != "b2" {
		t.Fatalf("cursor on %s after filtering, want docs-site", s.Name)
	}
	e.w.list.text.SetText("")
	e.refresh()
	if s, _ := e.w.list.list.current(); s.ID != "b2" {
		t.Fatalf("cursor on %s after a refresh, want docs-site", s.Name)
	}
}

func TestEmptyListSaysHowToStart(t *testing.T) {
	e := newEnv(t, nil, nil)
	// Both ways it names exist; there are no hooks to install.
	txt := e.w.list.empty.Text
	if !e.w.list.empty.Visible() || !strings.Contains(txt, "New session") || !strings.Contains(txt, "session-supervisor new") || strings.Contains(txt, "hook") {
		t.Fatalf("empty state: %q", txt)
	}
}

func TestMatches(t *testing.T) {
	s := sessions.Session{Name: "Alpha", Cwd: "/src/x", Evidence: "Bash open", State: sessions.Working, Agent: "claude"}
	for _, c := range []struct {
		state, text string
		want        bool
	}{
		{"", "", true},
		{filterAll, "alpha", true},
		{filterAll, "SRC/X", true},
		{filterAll, "bash", true},
		{filterAll, "nope", false},
		{"Working", "", true},
		{"Idle", "", false},
		{filterAttention, "", false},
	} {
		if got := matches(s, c.state, c.text); got != c.want {
			t.Errorf("matches(%q, %q) = %v", c.state, c.text, got)
		}
	}
}

// TestListTickRedrawsOnlyWhenAnAgeMoves: an idle window does not redraw its
// list every second; it redraws when a shown age changes (here: the
// seconds-old sessions move every second, and once none is shown, only the
// minute boundary redraws).
func TestListTickRedrawsOnlyWhenAnAgeMoves(t *testing.T) {
	e := newEnv(t, seed(), nil)
	v := e.w.list
	v.tick() // the first tick draws what it measured
	base := v.redraws
	e.now = e.now.Add(time.Second)
	v.tick()
	if v.redraws != base+1 {
		t.Fatalf("seconds-old sessions shown: %d redraws after a second, want 1", v.redraws-base)
	}
	// And again at every following second: the ages keep moving.
	for i := 2; i <= 3; i++ {
		e.now = e.now.Add(time.Second)
		v.tick()
		if v.redraws != base+i {
			t.Fatalf("after %d seconds: %d redraws, want %d", i, v.redraws-base, i)
		}
	}
	// Only the hour- and day-old sessions: filter to Idle (2d old).
	v.state.SetSelected("Idle")
	v.tick()
	base = v.redraws
	for range 59 {
		e.now = e.now.Add(time.Second)
		v.tick()
	}
	if v.redraws != base {
		t.Errorf("a list of day-old sessions redrew %d times in a minute, want 0", v.redraws-base)
	}
}

// With another machine configured the list shows each machine's sessions
// under its heading, this machine first; the filter applies within each,
// a heading stays; opening a remote row opens it by its key.
func TestListGroupsByMachine(t *testing.T) {
	e := newEnv(t, seed()[:2], nil)
	remote := e.onDevbox(seed()[5], localapi.LinkStatus{State: localapi.LinkConnected})
	want := []string{
		"# This machine | 2 sessions",
		"[Needs attention] refactor-auth   claude · ~/src/refactor-auth | turn 3 died mid-work; 2 nudges sent, nothing left to try | 12m",
		"[Waiting on user] docs-site   claude · ~/src/docs-site | turn 5 finished; waiting for your review | 3m",
		"# devbox — connected | 1 session",
		"[Working] ui-polish   claude · ~/src/ui-polish | tool Edit finished | 20s",
	}
	e.wantRows(want...)
	if c := richString(e.w.list.count); c != "3 sessions" {
		t.Errorf("count = %q, want every machine's", c)
	}
	e.w.list.text.SetText("polish")
	if got := e.renderedRows(); strings.Join(got, "\n") != strings.Join([]string{want[0], want[3], want[4]}, "\n") {
		t.Fatalf("filtered rows:\n%s", strings.Join(got, "\n"))
	}
	// The cursor starts on the first session, not on a heading (here the
	// remote row, under two headings); Enter on a heading opens nothing;
	// the remote row opens its detail by its key.
	e.w.list.focus()
	if cur, ok := e.w.list.list.current(); !ok || cur.ID != remote.ID {
		t.Fatalf("cursor on %q (%v), want the first session, %q", cur.ID, ok, remote.ID)
	}
	e.key(fyne.KeyUp)
	e.key(fyne.KeyReturn)
	if e.w.detail.content.Visible() {
		t.Fatal("Enter on a heading opened something")
	}
	e.key(fyne.KeyDown)
	e.key(fyne.KeyReturn)
	if e.w.detail.id != remote.ID {
		t.Errorf("opened %q, want %q", e.w.detail.id, remote.ID)
	}
}

// wantRows fails the test unless the list shows want, row by row.
func (e *env) wantRows(want ...string) {
	e.t.Helper()
	if got := e.renderedRows(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// onDevbox configures the machine devbox with s as its one session and
// link as its link, and redraws; s comes back keyed as the model holds it.
func (e *env) onDevbox(s sessions.Session, link localapi.LinkStatus) sessions.Session {
	e.m.SetMachines([]string{"devbox"})
	s.ID = model.Key("devbox", s.ID)
	e.m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: []sessions.Session{s}})
	e.m.Apply(localapi.Message{Type: localapi.MsgLink, Machine: "devbox", Link: &link})
	e.w.Refresh()
	return s
}

// A machine whose link dropped keeps its sessions listed, marked as last
// seen; ssh's reason (often long) has the line under the heading, so the
// heading's state is never cut off by it.
func TestListMachineDownShowsReasonOnItsOwnLine(t *testing.T) {
	e := newEnv(t, seed()[:1], nil)
	at := time.Date(2025, 3, 14, 14, 55, 0, 0, time.Local)
	e.onDevbox(seed()[5], localapi.LinkStatus{State: localapi.LinkReconnecting,
		Since: at, Up: at.Add(-time.Hour), Error: "machine devbox: ssh: connect to host devbox.example.internal port 22: No route to host"})
	e.wantRows("# This machine | 1 session",
		"[Needs attention] refactor-auth   claude · ~/src/refactor-auth | turn 3 died mid-work; 2 nudges sent, nothing left to try | 12m",
		"# devbox — reconnecting since 14:55 | ssh: connect to host devbox.example.internal port 22: No route to host · 1 session, as last seen",
		"[Working] ui-polish   claude · ~/src/ui-polish | tool Edit finished | 20s")
}

// With a price for tokens the list has a column of each session's
// equivalent API cost and, while a turn runs, its time-left band (or that
// there is no estimate yet, or that it will hit its plan limit).
func TestListShowsCostAndTimeLeft(t *testing.T) {
	e := newEnvWith(t, seed(), nil, func(o *Options) {
		o.Cost = func(u sessions.Usage) string { return "$" + strings.Repeat("3", len(u)) }
	})
	// The boot stops the stored turns; these run now, as the runtime
	// would publish them.
	list := seed()
	for i := range list {
		switch list[i].ID {
		case "f6": // working: 3 of 7 todos in 12 minutes
			list[i].InTurn, list[i].TurnStarted = true, t0.Add(-12*time.Minute)
			list[i].Todos, list[i].TodosSince = sessions.TodoProgress{Total: 7, Completed: 3}, t0.Add(-12*time.Minute)
			list[i].Usage.Total = sessions.Usage{"claude-sonnet-4-5": {Input: 1_000_000}}
		case "e5": // suspect, in a turn with nothing to go on
			list[i].InTurn, list[i].TurnStarted = true, t0.Add(-20*time.Minute)
		case "d4": // in a turn; its account's window is filling fast (another
			// agent: every session of an agent shares its account's windows)
			list[i].Agent = "codex"
			list[i].InTurn, list[i].TurnStarted = true, t0.Add(-time.Minute)
			list[i].RateWindows = []sessions.RateWindow{{Kind: "five_hour", Used: 90, FirstUsed: 50, ResetsAt: t0.Add(3 * time.Hour), At: t0, FirstAt: t0.Add(-time.Hour)}}
		}
	}
	for _, s := range list {
		if s.InTurn {
			e.m.Put(s)
		}
	}
	e.refresh()
	want := map[string]string{
		"ui-polish":      "| $3 API equiv. / 8–32 min left |",
		"search-index":   "| — / no estimate yet |",
		"billing-export": "| — / hits its plan limit |",
		"docs-site":      "| — /  |",
	}
	rows := e.renderedRows()
	for name, cell := range want {
		found := false
		for _, r := range rows {
			if strings.Contains(r, "] "+name+" ") {
				found = true
				if !strings.Contains(r, cell) {
					t.Errorf("%s: %q lacks %q", name, r, cell)
				}
			}
		}
		if !found {
			t.Errorf("no row for %s in %q", name, rows)
		}
	}
}

// Sessions added while the window is open (100, each working, then
// waiting) leave the list at its top: the most urgent session first and in
// view, the cursor on it, whether the list started empty or held sessions
// (it has the keyboard then). A cursor the user moved stays on its
// session (TestCursorFollowsItsSessionThroughRefresh).
func TestManySessionsAddedKeepTheTopInView(t *testing.T) {
	for _, c := range []struct {
		name  string
		start []sessions.Session
	}{
		{"from an empty list", nil},
		{"over sessions listed", seed()},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.start, nil)
			put := func(s sessions.Session) {
				e.m.Apply(localapi.Message{Type: localapi.MsgSession, Session: &s})
				e.w.Refresh()
			}
			for i := range 100 {
				s := sessions.Session{ID: fmt.Sprintf("n%03d", i), Name: fmt.Sprintf("idle-%d", i), Agent: "claude",
					State: sessions.Working, InTurn: true, StateChangedAt: e.now, UpdatedAt: e.now}
				put(s)
				s.State, s.InTurn, s.WaitReason = sessions.WaitingOnUser, false, sessions.WaitReview
				s.StateChangedAt = e.now.Add(time.Duration(i) * time.Second)
				s.UpdatedAt = s.StateChangedAt
				put(s)
			}
			urgent := sessions.Session{ID: "n050", Name: "idle-50", Agent: "claude", State: sessions.Errored, NeedsAttention: true,
				StateChangedAt: e.now.Add(time.Hour), UpdatedAt: e.now.Add(time.Hour)}
			put(urgent)
			if off := e.w.list.list.GetScrollOffset(); off != 0 {
				t.Fatalf("the list is scrolled %.0f down, want its top", off)
			}
			rows := e.renderedRows()
			if len(rows) == 0 || !strings.Contains(rows[0], "idle-50") {
				t.Fatalf("first row on screen %q, want the session that needs attention", rows[:min(len(rows), 1)])
			}
			if s, _ := e.w.list.list.current(); s.ID != "n050" {
				t.Fatalf("cursor on %s, want the most urgent session", s.Name)
			}
		})
	}
}
