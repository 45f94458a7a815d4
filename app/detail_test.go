package app

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/storage"
)

// timelineLines is the timeline as the list holds it: "# Turn N" headers
// and row texts, top to bottom.
func timelineLines(tv *timelineView) []string {
	var out []string
	for _, it := range tv.items {
		if it.header {
			out = append(out, "# "+view.TurnTitle(it.gen))
		} else {
			out = append(out, rowText(it.row, time.UTC))
		}
	}
	return out
}

func TestDetailHeaderAndTimelineGroupedByTurn(t *testing.T) {
	e := newEnv(t, seed(), seedTimeline())
	e.w.ShowSession("a1")
	d := e.w.detail
	if d.name.Text != "refactor-auth" || d.badge.text.Text != "Needs attention" {
		t.Fatalf("header: %q [%s]", d.name.Text, d.badge.text.Text)
	}
	if ev := richString(d.evidence); !strings.Contains(ev, "Interrupted — turn 3 died mid-work") || !strings.HasSuffix(ev, "(for 12m)") {
		t.Errorf("evidence: %q", ev)
	}
	if info := richString(d.info); info != "Agent claude (managed)     Folder ~/src/refactor-auth     Process not running     Turn 3     Permissions default" {
		t.Errorf("info: %q", info)
	}
	want := []string{
		"# Turn 3",
		"14:48:00 · escalated · nothing left to try",
		"14:45:00 · nudge sent · continuation nudge 2 of 2",
		"14:40:00 · nudge sent · continuation nudge 1 of 2",
		"# Turn 2",
		"14:30:00 · stall interrupt · 150 min silent; interrupting the turn",
		"14:20:00 · marked suspect · 10 min silent, pid 4242 alive",
		"14:10:00 · prompt sent · prompt sent by the user",
		"# Turn 1",
		"14:00:00 · state changed · Working → Waiting on user: turn 1 finished",
		"13:50:00 · prompt sent · prompt sent by the user",
	}
	if got := timelineLines(d.timeline); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !d.recovery.Visible() || !d.escalated.Visible() {
		t.Error("an escalated session must say nothing automatic is left")
	}
	// A selected row is readable in full below the list.
	d.timeline.list.Select(1)
	if got := richString(d.timeline.full); got != want[1] {
		t.Errorf("full text: %q", got)
	}
}

// manyRows gives session id n rows in turn 1 and 2, a minute apart.
func manyRows(id string, n int) []storage.TimelineEvent {
	var out []storage.TimelineEvent
	for i := range n {
		gen := int64(1)
		if i >= n/2 {
			gen = 2
		}
		out = append(out, row(id, gen, time.Duration(n-i)*time.Minute+time.Hour, "marked_suspect", map[string]any{"message": "row " + string(rune('A'+i%26))}))
	}
	return out
}

func TestNewTimelineRowsKeepTheScrollPosition(t *testing.T) {
	list := seed()
	e := newEnv(t, list, manyRows("b2", 60))
	e.w.ShowSession("b2")
	tv := e.w.detail.timeline
	step := tv.rowH + theme.Padding()
	tv.list.ScrollToOffset(10 * step)
	before := tv.list.GetScrollOffset()
	if before == 0 {
		t.Fatal("the timeline did not scroll; the test needs more rows")
	}
	top := tv.items[int(before/step)].key()

	// A real command publishes new rows (acknowledged, state changed) in
	// the newest turn; the window picks them up on its next refresh.
	if _, err := e.rt.Ack(e.ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	e.refresh()

	if got := tv.items[1].row.Kind; got != "state_changed" && got != "acknowledged" {
		t.Fatalf("newest row is %q, want the acknowledgement", got)
	}
	after := tv.list.GetScrollOffset()
	if got := tv.items[int(after/step)].key(); got != top {
		t.Fatalf("the rows on screen moved: top was %s, now %s (offset %v → %v)", top, got, before, after)
	}

	// At the top, new rows simply appear at the top.
	tv.list.ScrollToTop()
	if _, err := e.rt.Ack(e.ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	e.refresh()
	if tv.list.GetScrollOffset() != 0 {
		t.Fatal("a reader at the top must stay at the top to see new rows")
	}
}

func TestAnotherSessionStartsAtTheTopOfItsTimeline(t *testing.T) {
	e := newEnv(t, seed(), append(manyRows("b2", 60), manyRows("g7", 60)...))
	e.w.ShowSession("b2")
	e.w.detail.timeline.list.ScrollToOffset(400)
	e.w.ShowSession("g7")
	if off := e.w.detail.timeline.list.GetScrollOffset(); off != 0 {
		t.Fatalf("the next session's timeline opened scrolled to %v", off)
	}
}

func TestAcknowledgeMakesAReviewIdle(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("b2")
	d := e.w.detail
	if d.ack.Disabled() {
		t.Fatal("Acknowledge must be offered for a finished turn awaiting review")
	}
	test.Tap(d.ack)
	if s := e.session("b2"); s.State != sessions.Idle {
		t.Fatalf("backend state after Acknowledge: %s", s.State)
	}
	if d.badge.text.Text != "Idle" || d.errLabel.Visible() {
		t.Fatalf("detail after Acknowledge: badge %q, error %q", d.badge.text.Text, d.errLabel.Text)
	}
	if lines := timelineLines(d.timeline); len(lines) < 2 || !strings.Contains(strings.Join(lines, "\n"), "acknowledged by the user") {
		t.Fatalf("the acknowledgement is not in the timeline: %q", lines)
	}
	// The list agrees.
	e.w.showList()
	for _, r := range e.renderedRows() {
		if strings.Contains(r, "docs-site") && !strings.HasPrefix(r, "[Idle]") {
			t.Fatalf("list row after Acknowledge: %s", r)
		}
	}
}

func TestApproveDenyOnlyWithAPendingPermission(t *testing.T) {
	e := newEnv(t, seed(), nil)
	d := e.w.detail
	e.w.ShowSession("c3")
	if !d.permission.Visible() || !d.approve.Visible() || !d.deny.Visible() {
		t.Fatal("Approve/Deny hidden with a pending permission")
	}
	if got := d.permissionAsk.Text; got != "claude asks to use Bash: go test ./..." {
		t.Errorf("ask: %q", got)
	}
	e.w.ShowSession("b2")
	if d.permission.Visible() {
		t.Fatal("Approve/Deny shown without a pending permission")
	}

	// Approving needs the agent's process; here there is none, and the
	// refusal is shown, not swallowed.
	e.w.ShowSession("c3")
	test.Type(d.answer, "go ahead")
	test.Tap(d.approve)
	if !d.errLabel.Visible() || !strings.Contains(d.errLabel.Text, "Approve failed") || !strings.Contains(d.errLabel.Text, "no running process") {
		t.Fatalf("error after Approve: visible=%v %q", d.errLabel.Visible(), d.errLabel.Text)
	}
	if d.answer.Text != "go ahead" {
		t.Error("a failed answer must keep the message typed")
	}
	// The answer names the request the window shows (issue 20, item 10).
	spy := &answerSpy{Backend: e.w.b}
	e.w.b = spy
	test.Tap(d.deny)
	if !slices.Equal(spy.requests, []string{"req-1"}) {
		t.Errorf("Deny answered requests %q, want the one shown, req-1", spy.requests)
	}
}

// answerSpy records the request ids the window answers.
type answerSpy struct {
	Backend
	requests []string
}

func (s *answerSpy) Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error) {
	s.requests = append(s.requests, requestID)
	return s.Backend.Answer(ctx, id, requestID, allow, message)
}

func TestSendErrorsAreShownAndCtrlEnterSends(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("f6")
	d := e.w.detail
	test.Tap(d.send)
	if !strings.Contains(d.errLabel.Text, "Type a prompt first") {
		t.Fatalf("empty send: %q", d.errLabel.Text)
	}
	test.Type(d.prompt, "carry on")
	d.prompt.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierControl})
	// The seeded session has no agent session to resume: the runtime
	// refuses and says why.
	if !strings.Contains(d.errLabel.Text, "Send failed") || !strings.Contains(d.errLabel.Text, "no agent session id") {
		t.Fatalf("Ctrl+Enter did not send (or its error was lost): %q", d.errLabel.Text)
	}
	if d.prompt.Text != "carry on" {
		t.Error("a failed send must keep the prompt")
	}
	// Other shortcuts are still the entry's.
	d.prompt.TypedShortcut(&fyne.ShortcutSelectAll{})
	if d.prompt.SelectedText() != "carry on" {
		t.Error("select-all no longer works in the prompt")
	}
}

func TestCommandErrorForAnotherSessionGoesToADialog(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("f6")
	d := e.w.detail
	d.report("b2", "Nudge", sessions.Session{}, errTest)
	if d.errLabel.Visible() {
		t.Fatal("another session's error must not be shown as this one's")
	}
	if len(e.w.win.Canvas().Overlays().List()) == 0 {
		t.Fatal("the error was not shown at all")
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("agent pipe closed")

func TestCountdownMovesEverySecond(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("d4")
	d := e.w.detail
	if got := d.next.Text; got != "Next attempt in 4m 10s" {
		t.Fatalf("countdown: %q", got)
	}
	if got := d.failure.Text; got != "Failure: rate limited — 429: rate limit reached for requests" {
		t.Errorf("failure: %q", got)
	}
	if got := d.plan.Text; got != "Recovery: rate limit, attempt 1" {
		t.Errorf("plan: %q", got)
	}
	e.now = e.now.Add(11 * time.Second)
	e.w.tick()
	if got := d.next.Text; got != "Next attempt in 3m 59s" {
		t.Fatalf("countdown after 11 s: %q", got)
	}
	e.now = e.now.Add(time.Hour)
	e.w.tick()
	if got := d.next.Text; got != "Next attempt due now" {
		t.Fatalf("countdown once passed: %q", got)
	}
}

func TestOpenFolderAndButtonsFollowTheTrayRules(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("g7")
	d := e.w.detail
	test.Tap(d.openDir)
	if len(e.opened) != 1 || e.opened[0] != "/home/dev/src/old-experiment" {
		t.Fatalf("OpenDir calls: %q", e.opened)
	}
	if !d.interrupt.Disabled() {
		t.Error("Interrupt offered with no turn in flight")
	}
	if d.nudge.Disabled() {
		t.Error("Nudge not offered between turns")
	}
	if !d.ack.Disabled() {
		t.Error("Acknowledge offered for an idle session")
	}
}

func TestShowUnknownSessionShowsAnError(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSession("nope")
	if e.w.detail.content.Visible() {
		t.Fatal("an unknown session opened a detail")
	}
	if len(e.w.win.Canvas().Overlays().List()) == 0 {
		t.Fatal("no error shown")
	}
}

func TestCloseOnlyHides(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.hide()
	if e.w.shown {
		t.Fatal("still marked shown")
	}
	// Nothing is torn down: showing again works and is fresh.
	e.w.Show()
	if !e.w.shown || len(e.renderedRows()) != 7 {
		t.Fatal("the window did not come back")
	}
}

func TestCountdownAndAgeWording(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "due now"}, {0, "due now"}, {9 * time.Second, "in 9s"},
		{65 * time.Second, "in 1m 05s"}, {2*time.Hour + 3*time.Minute, "in 2h 03m"},
	} {
		if got := countdown(t0, t0.Add(c.d)); got != c.want {
			t.Errorf("countdown(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := sessions.Age(t0, time.Time{}); got != "-" {
		t.Errorf("age of zero time: %q", got)
	}
	if got := sessions.Age(t0, t0.Add(-90*time.Minute)); got != "1h" {
		t.Errorf("age 90m: %q", got)
	}
}

// "Resume in the background" is shown only for a terminal session whose
// process died mid-turn (the rule the tray uses), and its command reaches
// the supervisor: this one has no launcher for the agent, so the refusal is
// shown inline.
func TestResumeButtonOnlyForADeadTerminalSession(t *testing.T) {
	list := seed()
	dead := list[0]
	dead.ID, dead.Name, dead.Source, dead.AgentSessionID = "t9", "terminal-run", sessions.Observed, "sid-9"
	e := newEnv(t, append(list, dead), nil)
	e.w.ShowSession("a1") // managed, interrupted
	d := e.w.detail
	if d.resume.Visible() {
		t.Fatal("Resume offered for a managed session")
	}
	e.w.ShowSession("t9")
	if !d.resume.Visible() {
		t.Fatal("Resume not offered for a terminal session whose process died mid-turn")
	}
	test.Tap(d.resume)
	if !d.errLabel.Visible() || !strings.Contains(d.errLabel.Text, `no launcher for agent "claude"`) {
		t.Fatalf("after Resume: error %q", d.errLabel.Text)
	}
}

// "Go to terminal" is offered for a session the app did not launch (never
// for a managed one), enabled while its process runs and disabled beside
// Resume once it is gone; what the focus did, or why it could not, is shown.
func TestGoToTerminalForATerminalSession(t *testing.T) {
	list := seed()
	live := list[0]
	live.ID, live.Name, live.Source, live.AgentSessionID = "t8", "in-tmux", sessions.Observed, "sid-8"
	live.PID, live.ProcessAlive = 4242, true
	live.Terminal = &termloc.Location{Kind: termloc.KindTmux, TTY: "/dev/pts/4", Tmux: &termloc.Tmux{Socket: "/s", Session: "work", Window: 2, Pane: 1}}
	dead := live
	dead.ID, dead.ProcessAlive = "t9", false
	e := newEnv(t, append(list, dead), nil)
	// Into the model as the runtime publishes it while its process runs
	// (booted from the store, a terminal session's process is not known).
	e.m.Put(live)
	var asked []string
	e.w.focus = func(_ context.Context, s sessions.Session) (string, error) {
		asked = append(asked, s.ID)
		return "", testError("cannot focus the terminal: no X display")
	}
	d := e.w.detail
	e.w.ShowSession("a1")
	if d.goTerminal.Visible() {
		t.Fatal("Go to terminal offered for a managed session")
	}
	e.w.ShowSession("t8")
	if !d.goTerminal.Visible() || d.goTerminal.Disabled() {
		t.Fatal("Go to terminal not offered for a running terminal session")
	}
	if info := richString(d.info); !strings.Contains(info, "tmux work:2.1, not attached") {
		t.Errorf("the detail does not say where it runs: %q", info)
	}
	test.Tap(d.goTerminal)
	if !d.errLabel.Visible() || !strings.Contains(d.errLabel.Text, "no X display") {
		t.Fatalf("a failed focus shows %q", d.errLabel.Text)
	}
	e.w.focus = func(_ context.Context, s sessions.Session) (string, error) {
		asked = append(asked, s.ID)
		return "selected tmux pane work:2.1", nil
	}
	test.Tap(d.goTerminal)
	if !d.status.Visible() || !strings.Contains(d.status.Text, "selected tmux pane work:2.1") || d.errLabel.Visible() {
		t.Fatalf("after focus: status %q, error %q", d.status.Text, d.errLabel.Text)
	}
	e.w.ShowSession("t9")
	if !d.goTerminal.Visible() || !d.goTerminal.Disabled() || !d.resume.Visible() {
		t.Fatalf("gone: Go to terminal visible %t disabled %t, Resume visible %t", d.goTerminal.Visible(), d.goTerminal.Disabled(), d.resume.Visible())
	}
	if len(asked) != 2 || asked[0] != "t8" {
		t.Errorf("focus asked for %q", asked)
	}
}

// Forget is offered only for an ended session; it removes the session from
// the runtime and the list, keeping or deleting its timeline as chosen
// (issue 20, item 11).
func TestForgetAnEndedSession(t *testing.T) {
	for _, drop := range []bool{false, true} {
		e := newEnv(t, seed(), seedTimeline())
		d := e.w.detail
		e.w.ShowSession("f6")
		running, _ := e.m.Session("f6")
		running.InTurn, running.ProcessAlive = true, true
		d.show(running)
		if !d.forget.Disabled() {
			t.Fatal("Forget offered for a session whose turn is in flight")
		}
		e.w.ShowSession("a1")
		if d.forget.Disabled() {
			t.Fatal("Forget not offered for an ended session")
		}
		d.forgetSession(drop)
		e.pump()
		if _, err := e.rt.Session("a1"); err == nil {
			t.Fatalf("drop=%t: the runtime still has a1", drop)
		}
		for _, s := range e.m.Sessions() {
			if s.ID == "a1" {
				t.Fatalf("drop=%t: the model still lists a1", drop)
			}
		}
		e.rt.Settle()
		rows, err := e.store.Timeline(e.ctx, "a1", 0)
		if err != nil || (len(rows) == 0) != drop {
			t.Errorf("drop=%t: %d timeline rows left, %v", drop, len(rows), err)
		}
	}
}

// The detail's "Stop recovering this session" check switches the session's
// recovery in the supervisor, says so in the failure and recovery section
// and in the timeline, and follows the session when it is switched
// elsewhere (the CLI, the tray); a budget the session is past is said
// there too.
func TestStopRecoveringSwitch(t *testing.T) {
	list := seed()
	budget := list[0]
	budget.Supervision.Budget = "daily cost budget $20.00 reached ($20.41)"
	budget.Supervision.BudgetKey = "daily_cost 2026-03-14"
	list[0] = budget
	e := newEnv(t, list, nil)
	e.w.ShowSession("b2")
	d := e.w.detail
	stopped := func() bool { return d.recovery.Visible() && d.stopped.Visible() }
	if d.stopRecovering.Checked || stopped() {
		t.Fatalf("a session recovered as usual: check %v, stopped %q", d.stopRecovering.Checked, d.stopped.Text)
	}
	test.Tap(d.stopRecovering)
	e.refresh()
	if s := e.session("b2"); !s.RecoveryOff {
		t.Fatal("the check did not switch the session's recovery off")
	}
	if !d.stopRecovering.Checked || !stopped() || !strings.Contains(d.stopped.Text, "switched off for this session") {
		t.Fatalf("after the switch: check %v, stopped %q (visible %v)", d.stopRecovering.Checked, d.stopped.Text, stopped())
	}
	if lines := strings.Join(timelineLines(d.timeline), "\n"); !strings.Contains(lines, "switched off for this session by the user") {
		t.Fatalf("the switch is not in the timeline:\n%s", lines)
	}
	// Switched on again elsewhere: the check follows, and showing it sends
	// nothing back.
	if _, err := e.rt.SetRecovery(e.ctx, "b2", true); err != nil {
		t.Fatal(err)
	}
	e.refresh()
	if d.stopRecovering.Checked || stopped() {
		t.Fatalf("after the switch elsewhere: check %v, stopped visible %v", d.stopRecovering.Checked, stopped())
	}
	if s := e.session("b2"); s.RecoveryOff {
		t.Fatal("showing the check switched the session")
	}
	e.w.ShowSession("a1")
	if !stopped() || !strings.Contains(d.stopped.Text, "daily cost budget $20.00 reached ($20.41)") || d.stopRecovering.Checked {
		t.Fatalf("a session past a budget: stopped %q (visible %v), check %v", d.stopped.Text, stopped(), d.stopRecovering.Checked)
	}
}

// The detail says how long the turn has left (the band, its signals, each
// alone), the account's plan windows, and that this session will hit one.
func TestDetailShowsTimeLeftAndPlanWindows(t *testing.T) {
	e := newEnv(t, seed(), nil)
	s := e.session("f6")
	s.InTurn, s.TurnStarted = true, t0.Add(-12*time.Minute)
	s.Todos, s.TodosSince = sessions.TodoProgress{Total: 7, Completed: 3}, t0.Add(-12*time.Minute)
	s.PastTurns = []sessions.TurnRecord{{Duration: 20 * time.Minute}, {Duration: 40 * time.Minute}, {Duration: 30 * time.Minute}}
	s.RateWindows = []sessions.RateWindow{{Kind: "five_hour", Used: 90, FirstUsed: 50, ResetsAt: t0.Add(3 * time.Hour), At: t0, FirstAt: t0.Add(-time.Hour)}}
	e.m.Put(s)
	e.refresh()
	e.w.ShowSession("f6")
	info := richString(e.w.detail.info)
	for _, want := range []string{"Time left", "(todos 3/7, past turns); todos ", "past turns ", "Plan window five_hour 90% used, resets",
		"Plan limit will hit the five_hour window at about"} {
		if !strings.Contains(info, want) {
			t.Errorf("info lacks %q: %q", want, info)
		}
	}
}

// "Continue in terminal" is offered for a managed session (never a
// terminal one), enabled by the shared rule; it asks first (a dialog), and
// what the hand-over did, or why it could not, is shown. The interrupt is
// the person's choice.
func TestContinueInTerminalForAManagedSession(t *testing.T) {
	list := seed()
	term := list[0]
	term.ID, term.Name, term.Source, term.AgentSessionID = "t8", "in-tmux", sessions.Observed, "sid-8"
	e := newEnv(t, append(list, term), nil)
	type call struct {
		id        string
		interrupt bool
	}
	var asked []call
	e.w.handover = func(_ context.Context, id string, interrupt bool) (string, error) {
		asked = append(asked, call{id, interrupt})
		if len(asked) == 1 {
			return "", testError("session a1 was left as it was: cannot open a terminal: no tmux server runs and there is no display")
		}
		return "opened tmux window home:1.0 running claude --resume sid-1", nil
	}
	d := e.w.detail
	e.w.ShowSession("t8")
	if d.handover.Visible() {
		t.Fatal("Continue in terminal offered for a terminal session")
	}
	e.w.ShowSession("a1")
	managed, _ := e.m.Session("a1")
	managed.AgentSessionID, managed.InTurn, managed.ProcessAlive = "sid-1", true, true
	d.show(managed)
	if !d.handover.Visible() || d.handover.Disabled() {
		t.Fatalf("Continue in terminal on a managed session: visible %t disabled %t", d.handover.Visible(), d.handover.Disabled())
	}
	test.Tap(d.handover)
	if len(e.w.win.Canvas().Overlays().List()) == 0 {
		t.Fatal("no confirmation dialog")
	}
	if len(asked) != 0 {
		t.Fatal("handed over before the person confirmed")
	}
	d.continueInTerminal(false)
	if !d.errLabel.Visible() || !strings.Contains(d.errLabel.Text, "left as it was") {
		t.Fatalf("a failed hand-over shows %q", d.errLabel.Text)
	}
	d.continueInTerminal(true)
	if !d.status.Visible() || !strings.Contains(d.status.Text, "opened tmux window home:1.0") || d.errLabel.Visible() {
		t.Fatalf("after the hand-over: status %q, error %q", d.status.Text, d.errLabel.Text)
	}
	if len(asked) != 2 || asked[0] != (call{"a1", false}) || asked[1] != (call{"a1", true}) {
		t.Errorf("asked %+v", asked)
	}
	managed.AgentSessionID = ""
	d.show(managed)
	if !d.handover.Disabled() {
		t.Error("offered before the agent session id is known")
	}
}
