package app

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// detailView is one session: who and where it is, what went wrong and what
// the supervisor is doing about it, the live timeline, and the user's
// actions.
type detailView struct {
	w  *Window
	id string
	s  sessions.Session
	// shownRows is the model's timeline version on screen.
	shownRows uint64

	back     *widget.Button
	name     *widget.Label
	badge    *badge
	evidence *widget.RichText
	info     *widget.RichText // agent, folder, process, turn, permissions

	recovery  *fyne.Container
	failure   *widget.Label
	plan      *widget.Label
	next      *widget.Label
	escalated *widget.Label
	// stopped says why the supervisor does not recover this session (a
	// budget, the switch below): view.RecoveryText.
	stopped *widget.Label
	// stopRecovering is the session's "stop recovering" switch; showing
	// is set while show sets its check, so only the user's click sends.
	stopRecovering *widget.Check
	showing        bool

	permission    *fyne.Container
	permissionAsk *widget.Label
	// request is the id of the permission request shown: Approve and Deny
	// answer it, never whichever is oldest when the call runs.
	request       string
	answer        *widget.Entry
	approve, deny *widget.Button

	nudge, interrupt, ack, openDir *widget.Button
	// forget removes an ended session (after a confirmation that asks
	// whether its timeline goes too).
	forget *widget.Button
	// resume is "Resume in the background", shown only where view.Allows it
	// (a terminal session whose process died mid-turn).
	resume *widget.Button
	// goTerminal is "Go to terminal", for a session the app did not launch
	// (enabled while its process runs; beside Resume once it is gone).
	goTerminal *widget.Button
	// handover is "Continue in terminal", for a managed session.
	handover *widget.Button

	prompt *promptEntry
	send   *widget.Button

	status   *widget.Label // what the last action did
	errLabel *widget.Label // what the last action failed with

	header *fyne.Container
	// left is the column of sections that appear and disappear with the
	// session's state; it is re-laid out after each change.
	left       *fyne.Container
	leftScroll *container.Scroll
	timeline   *timelineView
	content    *fyne.Container
}

func newDetailView(w *Window) *detailView {
	d := &detailView{w: w}
	d.back = widget.NewButtonWithIcon("Sessions", theme.NavigateBackIcon(), func() { w.showList() })
	d.name = boldLabel("")
	d.name.SizeName = theme.SizeNameSubHeadingText
	d.badge = newBadge()
	d.evidence = mutedLine("")
	d.info = widget.NewRichText()
	d.info.Truncation = fyne.TextTruncateEllipsis

	line := func() *widget.Label {
		l := widget.NewLabel("")
		l.Wrapping = fyne.TextWrapWord
		return l
	}
	d.failure, d.plan, d.next = line(), line(), line()
	d.next.TextStyle.Bold = true
	d.escalated = line()
	d.escalated.SetText("Nothing automatic is left to try: the supervisor is waiting for you.")
	d.escalated.Importance = widget.DangerImportance
	d.stopped = line()
	d.stopped.Importance = widget.WarningImportance
	d.recovery = section("Failure and recovery", d.failure, d.plan, d.next, d.stopped, d.escalated)

	d.permissionAsk = line()
	d.answer = widget.NewEntry()
	d.answer.SetPlaceHolder("Optional message to the agent")
	d.approve = widget.NewButtonWithIcon("Approve", theme.ConfirmIcon(), func() { d.answerPermission(true) })
	d.approve.Importance = widget.HighImportance
	d.deny = widget.NewButtonWithIcon("Deny", theme.CancelIcon(), func() { d.answerPermission(false) })
	d.deny.Importance = widget.DangerImportance
	d.permission = section("Permission requested", d.permissionAsk, d.answer,
		container.NewGridWithColumns(2, d.approve, d.deny))

	d.nudge = widget.NewButtonWithIcon("Nudge now", theme.MediaPlayIcon(), func() {
		d.command("Nudge", func(ctx context.Context, id string) (sessions.Session, error) { return w.b.NudgeNow(ctx, id) })
	})
	d.interrupt = widget.NewButtonWithIcon("Interrupt", theme.MediaStopIcon(), func() {
		d.command("Interrupt", func(ctx context.Context, id string) (sessions.Session, error) { return w.b.Interrupt(ctx, id) })
	})
	d.ack = widget.NewButtonWithIcon("Acknowledge", theme.ConfirmIcon(), func() {
		d.command("Acknowledge", func(ctx context.Context, id string) (sessions.Session, error) { return w.b.Ack(ctx, id) })
	})
	d.openDir = widget.NewButtonWithIcon("Open folder", theme.FolderOpenIcon(), d.openFolder)
	d.forget = widget.NewButtonWithIcon("Forget…", theme.DeleteIcon(), d.confirmForget)
	actions := container.NewGridWithColumns(2, d.nudge, d.interrupt, d.ack, d.openDir, d.forget)
	d.stopRecovering = widget.NewCheck("Stop recovering this session", func(off bool) {
		if d.showing {
			return
		}
		what := "Stop recovering"
		if !off {
			what = "Recover again"
		}
		d.command(what, func(ctx context.Context, id string) (sessions.Session, error) { return w.b.SetRecovery(ctx, id, !off) })
	})
	d.resume = widget.NewButtonWithIcon("Resume in the background", theme.MediaReplayIcon(), func() {
		d.command("Resume in the background", func(ctx context.Context, id string) (sessions.Session, error) {
			s, err := w.b.Resume(ctx, id)
			if err == nil {
				// The work goes on in the new managed session: show it.
				fyne.Do(func() { w.ShowSession(s.ID) })
			}
			return s, err
		})
	})
	d.resume.Importance = widget.HighImportance
	d.resume.Hide()
	d.goTerminal = widget.NewButtonWithIcon("Go to terminal", theme.ComputerIcon(), d.goToTerminal)
	d.goTerminal.Hide()
	d.handover = widget.NewButtonWithIcon("Continue in terminal", theme.ComputerIcon(), d.confirmHandover)
	d.handover.Hide()

	d.prompt = newPromptEntry(d.sendPrompt)
	d.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), d.sendPrompt)
	d.send.Importance = widget.HighImportance
	sendRow := container.NewBorder(nil, nil, nil, d.send, mutedLine("Ctrl+Enter sends"))

	d.status = line()
	d.status.Importance = widget.SuccessImportance
	d.status.Hide()
	d.errLabel = errorLabel()

	d.header = container.NewVBox(
		container.NewBorder(nil, nil, d.back, nil,
			container.NewHBox(d.name, container.NewCenter(d.badge))),
		d.evidence,
		d.info,
		widget.NewSeparator(),
	)
	// The left column holds what the user acts on, the prompt always in
	// reach at its foot; the timeline gets the full height on the right.
	d.left = container.NewVBox(d.errLabel, d.status, d.permission, d.recovery, section("Actions", actions, d.stopRecovering, d.goTerminal, d.handover, d.resume))
	d.leftScroll = container.NewVScroll(d.left)
	left := container.NewBorder(nil, section("Send a prompt", d.prompt, sendRow), nil, nil, d.leftScroll)
	d.timeline = newTimelineView(func() *time.Location { return w.now().Location() })
	split := container.NewHSplit(left, container.NewPadded(d.timeline.content))
	split.Offset = 0.42
	d.content = container.NewBorder(d.header, nil, nil, nil, split)
	return d
}

// setError shows (or with "" clears) the inline error.
func (d *detailView) setError(msg string) {
	if setError(d.errLabel, msg) {
		d.relayout()
	}
}

// relayout lays the header and the left column out again: changing a
// label's text or showing a section does not by itself move its neighbours.
func (d *detailView) relayout() {
	d.header.Refresh() // a longer name moves the badge
	d.left.Refresh()
	d.leftScroll.Refresh()
}

// infoSegments are the header's facts: muted names, plain values.
func infoSegments(pairs ...string) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	for i := 0; i+1 < len(pairs); i += 2 {
		name := pairs[i] + " "
		if i > 0 {
			name = "     " + name
		}
		out = append(out,
			&widget.TextSegment{Text: name, Style: mutedStyle()},
			&widget.TextSegment{Text: pairs[i+1], Style: widget.RichTextStyle{Inline: true}})
	}
	return out
}

// open shows session id (from the model).
func (d *detailView) open(id string) error {
	s, err := d.w.m.Session(id)
	if err != nil {
		return err
	}
	if s.ID != d.id {
		// Another session: nothing typed or reported for the previous one
		// may leak into this one.
		d.id = s.ID
		d.prompt.SetText("")
		d.answer.SetText("")
		d.timeline.reset()
		d.shownRows = 0
		d.setError("")
		d.status.Hide()
	}
	d.show(s)
	d.loadTimeline()
	return nil
}

// refresh redraws the open session and its timeline from the model.
func (d *detailView) refresh() {
	if d.id == "" {
		return
	}
	s, err := d.w.m.Session(d.id)
	if err != nil {
		d.setError("This session is gone: " + err.Error())
		return
	}
	d.show(s)
	d.loadTimeline()
}

// loadTimeline shows the model's timeline of the open session, redrawing
// only when its rows changed. The stored history is read once, when the
// model asks for it (the session was just opened, or messages were
// missed), off Fyne's goroutine; live rows arrive through the model.
func (d *detailView) loadTimeline() {
	m, id := d.w.m, d.id
	if m.Follow(id) {
		d.w.async(func() {
			rows, err := d.w.b.Timeline(context.Background(), id, model.TimelineLimit)
			if err != nil {
				m.LoadFailed(id)
				d.w.do(func() {
					if d.id == id {
						d.setError("Could not read the timeline: " + err.Error())
					}
				})
				return
			}
			m.SetTimeline(id, rows)
			d.w.do(func() {
				if d.id == id {
					d.loadTimeline()
				}
			})
		})
	}
	rows, version := m.Timeline(id)
	if version == d.shownRows {
		return
	}
	d.shownRows = version
	d.timeline.set(rows)
}

// show fills every widget from s.
func (d *detailView) show(s sessions.Session) {
	d.s = s
	now := d.w.now()
	d.name.SetText(s.DisplayName())
	d.badge.set(s)
	ev := s.Evidence
	if s.State == sessions.WaitingOnUser && s.WaitReason != sessions.NoWait {
		ev = fmt.Sprintf("Waiting for your %s: %s", s.WaitReason, ev)
	}
	if s.NeedsAttention {
		ev = fmt.Sprintf("%s — %s", s.State.Label(), ev)
	}
	setMuted(d.evidence, fmt.Sprintf("%s (for %s)", ev, sessions.Age(now, s.StateChangedAt)))

	process := "not running"
	switch {
	case s.PID > 0 && s.ProcessAlive:
		process = fmt.Sprintf("pid %d, running", s.PID)
	case s.PID > 0:
		process = fmt.Sprintf("pid %d, exited", s.PID)
	}
	turn := strconv.FormatInt(s.TurnGeneration, 10)
	if s.InTurn {
		turn += fmt.Sprintf(", in flight for %s", sessions.Age(now, s.TurnStarted))
	}
	mode := s.PermissionMode
	if mode == "" {
		mode = "default"
	}
	info := []string{
		"Agent", fmt.Sprintf("%s (%s)", s.Agent, s.Source),
		"Folder", shortPath(s.Cwd),
		"Process", process,
		"Turn", turn,
		"Permissions", mode}
	if s.Terminal != nil {
		info = append(info, "Terminal", s.Terminal.String())
	}
	if shared := view.SharedText(s); shared != "" {
		info = append(info, "Conversation", shared)
	}
	if s.InTurn {
		band := view.TimeLeft(s, now)
		left := band.String()
		if parts := band.PartsText(); parts != "" {
			left += "; " + parts
		}
		info = append(info, "Time left", left)
	}
	// The account's windows: the newest any of this agent's sessions saw.
	windows := view.AccountWindows(d.w.list.all)
	for _, a := range windows {
		if a.Agent == s.Agent {
			info = append(info, "Plan window", view.WindowText(a.Window, now, now.Location()))
		}
	}
	if warn := view.WindowWarning(s, windows, now, now.Location()); warn != "" {
		info = append(info, "Plan limit", warn)
	}
	d.info.Segments = infoSegments(info...)
	d.info.Refresh()

	d.showRecovery(now)

	if p := s.Permission; p != nil {
		// What the tool would do (the command, the file) is the part the
		// answer depends on; the agent does not always say.
		ask := fmt.Sprintf("%s asks to use %s.", s.Agent, p.Tool)
		if p.Input != "" {
			ask = fmt.Sprintf("%s asks to use %s: %s", s.Agent, p.Tool, p.Input)
		}
		d.permissionAsk.SetText(ask)
		d.request = p.RequestID
		d.permission.Show()
	} else {
		d.request = ""
		d.permission.Hide()
	}
	// The shared rules: the tray's submenu offers the same commands.
	setEnabled(d.nudge, view.Allows(s, view.Nudge))
	setEnabled(d.interrupt, view.Allows(s, view.Interrupt))
	setEnabled(d.ack, view.Allows(s, view.Acknowledge))
	setEnabled(d.approve, view.Allows(s, view.Approve))
	setEnabled(d.deny, view.Allows(s, view.Deny))
	setEnabled(d.forget, view.Allows(s, view.Forget))
	if view.Allows(s, view.Resume) {
		d.resume.Show()
	} else {
		d.resume.Hide()
	}
	setEnabled(d.openDir, s.Cwd != "" && d.w.dir != nil)
	d.showing = true
	d.stopRecovering.SetChecked(s.RecoveryOff)
	d.showing = false
	if d.w.focus != nil && s.Source != sessions.Managed {
		setEnabled(d.goTerminal, view.Allows(s, view.GoToTerminal))
		d.goTerminal.Show()
	} else {
		d.goTerminal.Hide()
	}
	if d.w.handover != nil && s.Source == sessions.Managed {
		setEnabled(d.handover, view.Allows(s, view.ContinueInTerminal))
		d.handover.Show()
	} else {
		d.handover.Hide()
	}
	d.relayout()
}

// showRecovery fills the failure and recovery section; it is hidden when
// there is nothing to tell.
func (d *detailView) showRecovery(now time.Time) {
	s := d.s
	f, sup := s.Failure, s.Supervision
	stopped := view.RecoveryText(s)
	if f.IsZero() && sup.Recovery == "" && sup.NextAttemptAt.IsZero() && !s.NeedsAttention && s.Nudge.Attempts == 0 && stopped == "" {
		d.recovery.Hide()
		return
	}
	if stopped != "" {
		d.stopped.SetText("Recovery " + stopped)
		d.stopped.Show()
	} else {
		d.stopped.Hide()
	}
	if text := view.FailureText(f); text != "" {
		d.failure.SetText("Failure: " + text)
		d.failure.Show()
	} else {
		d.failure.Hide()
	}
	var plan string
	switch {
	case sup.Recovery != "":
		plan = fmt.Sprintf("Recovery: %s, attempt %d", view.KindLabel(sup.Recovery), sup.RecoveryAttempts)
	case s.Nudge.Attempts > 0:
		plan = fmt.Sprintf("Continuation nudges this incident: %d", s.Nudge.Attempts)
	}
	d.plan.SetText(plan)
	if plan == "" {
		d.plan.Hide()
	} else {
		d.plan.Show()
	}
	if at := nextAttempt(s); !at.IsZero() {
		d.next.SetText("Next attempt " + countdown(now, at))
		d.next.Show()
	} else {
		d.next.Hide()
	}
	if s.NeedsAttention {
		d.escalated.Show()
	} else {
		d.escalated.Hide()
	}
	d.recovery.Show()
}

// nextAttempt is when something happens next on its own: the supervisor's
// held recovery, else the agent's own retry.
func nextAttempt(s sessions.Session) time.Time {
	if !s.Supervision.NextAttemptAt.IsZero() {
		return s.Supervision.NextAttemptAt
	}
	return s.Failure.RetryAt
}

// tick moves the countdown (every second while the detail is on screen).
func (d *detailView) tick() {
	if d.id == "" {
		return
	}
	was := d.next.Visible()
	d.showRecovery(d.w.now())
	if d.next.Visible() != was {
		d.relayout()
	}
}

func setEnabled(b *widget.Button, on bool) {
	if on {
		b.Enable()
	} else {
		b.Disable()
	}
}

// command runs one session command and reports its outcome in the view.
func (d *detailView) command(what string, call func(ctx context.Context, id string) (sessions.Session, error)) {
	id := d.id
	d.setError("")
	d.status.Hide()
	var s sessions.Session
	d.w.act(func(ctx context.Context) error {
		var err error
		s, err = call(ctx, id)
		return err
	}, func(err error) {
		d.report(id, what, s, err)
	})
}

// report shows a command's outcome: inline when its session is still on
// screen, else in a dialog, never only in the log.
func (d *detailView) report(id, what string, s sessions.Session, err error) {
	if err != nil {
		err = fmt.Errorf("%s failed: %w", what, err)
		d.w.log.Warn("window command failed", "session", id, "err", err)
	}
	if id != d.id || !d.content.Visible() {
		if err != nil {
			d.w.showErrorNow(err)
		}
		return
	}
	if err != nil {
		d.setError(err.Error())
	} else {
		d.status.SetText(what + ": done.")
		d.status.Show()
	}
	if s.ID == id {
		d.show(s)
	}
	d.loadTimeline()
	d.w.list.set(d.w.m.Sessions())
	d.relayout()
}

func (d *detailView) answerPermission(allow bool) {
	what, msg, req := "Deny", d.answer.Text, d.request
	if allow {
		what = "Approve"
	}
	d.command(what, func(ctx context.Context, id string) (sessions.Session, error) {
		s, err := d.w.b.Answer(ctx, id, req, allow, msg)
		if err == nil {
			d.w.do(func() { d.answer.SetText("") })
		}
		return s, err
	})
}

// confirmForget asks before forgetting the session shown, and whether its
// timeline goes with it.
func (d *detailView) confirmForget() {
	d.confirm("Forget "+d.name.Text+"?", "Forget", "It leaves the app's lists for good. Its timeline is kept\n(session-supervisor timeline ID) unless you delete it too.",
		"Also delete its timeline", d.forgetSession)
}

// confirm asks the person before an action on the session shown: text,
// and a choice (a check, none when choice is "") then handed to do.
func (d *detailView) confirm(title, action, text, choice string, do func(checked bool)) {
	check := widget.NewCheck(choice, nil)
	body := container.NewVBox(widget.NewLabel(text))
	if choice != "" {
		body.Add(check)
	}
	dialog.ShowCustomConfirm(title, action, "Cancel", body, func(ok bool) {
		if ok {
			do(check.Checked)
		}
	}, d.w.win)
}

// forgetSession forgets the session shown and goes back to the list.
func (d *detailView) forgetSession(dropTimeline bool) {
	timeline := localapi.KeepTimeline
	if dropTimeline {
		timeline = localapi.DropTimeline
	}
	d.command("Forget", func(ctx context.Context, id string) (sessions.Session, error) {
		s, err := d.w.b.Forget(ctx, id, timeline)
		if err == nil {
			d.w.do(d.w.showList)
		}
		return s, err
	})
}

func (d *detailView) sendPrompt() {
	text := d.prompt.Text
	if text == "" {
		d.setError("Type a prompt first.")
		return
	}
	d.command("Send", func(ctx context.Context, id string) (sessions.Session, error) {
		s, err := d.w.b.Send(ctx, id, text)
		if err == nil {
			// Cleared only once sent: a failed send keeps what was typed.
			d.w.do(func() {
				if d.prompt.Text == text {
					d.prompt.SetText("")
				}
			})
		}
		return s, err
	})
}

// goToTerminal focuses the session's terminal and says what it did, or
// what it could not do and where the terminal is.
func (d *detailView) goToTerminal() {
	if d.w.focus == nil {
		return
	}
	s := d.s
	d.reportOutcome("Go to terminal", s.ID, func(ctx context.Context) (string, error) { return d.w.focus(ctx, s) })
}

// reportOutcome runs an action that says in a line what it did (focus, a
// hand-over) off the UI, then shows that line, or the error, on session
// id's detail (in the window's banner when the person moved on).
func (d *detailView) reportOutcome(what, id string, call func(ctx context.Context) (string, error)) {
	d.setError("")
	d.status.Hide()
	var did string
	d.w.act(func(ctx context.Context) error {
		var err error
		did, err = call(ctx)
		return err
	}, func(err error) {
		if id != d.id {
			if err != nil {
				d.w.showErrorNow(fmt.Errorf("%s: %w", what, err))
			}
			return
		}
		if err != nil {
			d.setError(what + ": " + err.Error())
		} else {
			d.status.SetText(what + ": " + did + ".")
			d.status.Show()
		}
		d.relayout()
	})
}

// confirmHandover asks before handing the session over: its process will
// be stopped. With a turn in flight the person chooses to wait for its end
// or to interrupt it.
func (d *detailView) confirmHandover() {
	if d.w.handover == nil {
		return
	}
	choice := ""
	if d.s.InTurn {
		choice = "Interrupt the turn in flight (otherwise wait for it to end)"
	}
	d.confirm("Continue "+d.name.Text+" in a terminal?", "Continue in terminal",
		"Its process is stopped and the agent's own resume opens in a new tmux window\n(or your terminal). It goes on there as a terminal session, with the same timeline.",
		choice, d.continueInTerminal)
}

// continueInTerminal hands the session over and says what it did, or why
// it could not (the session then left as it was, or how to go on).
func (d *detailView) continueInTerminal(interrupt bool) {
	id := d.id
	d.reportOutcome("Continue in terminal", id, func(ctx context.Context) (string, error) {
		return d.w.handover(ctx, id, interrupt)
	})
}

func (d *detailView) openFolder() {
	if d.w.dir == nil || d.s.Cwd == "" {
		return
	}
	if err := d.w.dir(d.s.Cwd); err != nil {
		d.setError("Open folder failed: " + err.Error())
	}
}

// promptEntry is a multi-line entry where Ctrl+Enter (Cmd+Enter on macOS)
// sends instead of adding a line.
type promptEntry struct {
	widget.Entry
	onSubmit func()
}

func newPromptEntry(onSubmit func()) *promptEntry {
	e := &promptEntry{onSubmit: onSubmit}
	e.ExtendBaseWidget(e)
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetPlaceHolder("Ask the agent something, or tell it what to do next")
	e.SetMinRowsVisible(4)
	return e
}

// TypedShortcut catches Ctrl/Cmd+Enter; everything else (copy, paste, …)
// is the entry's.
func (e *promptEntry) TypedShortcut(s fyne.Shortcut) {
	if c, ok := s.(*desktop.CustomShortcut); ok && isSubmit(c) {
		e.onSubmit()
		return
	}
	e.Entry.TypedShortcut(s)
}

func isSubmit(c *desktop.CustomShortcut) bool {
	return (c.KeyName == fyne.KeyReturn || c.KeyName == fyne.KeyEnter) &&
		(c.Modifier == fyne.KeyModifierControl || c.Modifier == fyne.KeyModifierSuper)
}
