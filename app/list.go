package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// The state filter's first two choices; the rest are the states' labels.
const (
	filterAll       = "All states"
	filterAttention = "Needs attention"
)

// emptyText is what the list says before the first session: the two ways
// to start one that exist.
const emptyText = "No sessions yet. Start one with New session…, or run session-supervisor new in a terminal."

// sessionsView is the Sessions list: a filter bar over a keyboard-driven
// list, one row per session.
type sessionsView struct {
	w     *Window
	all   []sessions.Session
	shown []sessions.Session
	// rows are the list's rows: shown, each machine's under its heading
	// when other machines are configured (ui/fleet), else shown alone.
	rows    []listRow
	state   *widget.Select
	text    *widget.Entry
	count   *widget.RichText
	empty   *widget.Label
	newBtn  *widget.Button
	list    *sessionList
	content *fyne.Container
	// redraws counts the ticks that changed a row (for the test of the
	// idle cost).
	redraws int
}

func newSessionsView(w *Window) *sessionsView {
	v := &sessionsView{w: w}
	options := []string{filterAll, filterAttention}
	for _, st := range sessions.AllStates {
		options = append(options, st.Label())
	}
	v.state = widget.NewSelect(options, func(string) { v.apply() })
	v.state.SetSelected(filterAll)
	v.text = widget.NewEntry()
	v.text.SetPlaceHolder("Filter by name, folder or evidence")
	v.text.OnChanged = func(string) { v.apply() }
	v.count = fieldName("") // not truncated: a count must be read whole
	v.newBtn = widget.NewButtonWithIcon("New session…", theme.ContentAddIcon(), func() { w.ShowNewSession() })
	v.newBtn.Importance = widget.HighImportance

	v.list = newSessionList(func() []listRow { return v.rows }, w.now, w.cost, func() []view.AccountWindow { return view.AccountWindows(v.shown) }, func(s sessions.Session) {
		w.ShowSession(s.ID)
	})
	v.empty = widget.NewLabel("")
	v.empty.Alignment = fyne.TextAlignCenter
	v.empty.Hide()

	bar := container.NewBorder(nil, nil,
		fixedWidth(170, v.state),
		container.NewHBox(v.count, v.newBtn),
		v.text)
	v.content = container.NewBorder(
		container.NewVBox(bar, widget.NewSeparator()), nil, nil, nil,
		container.NewStack(v.list, container.NewCenter(v.empty)))
	return v
}

// set replaces the sessions (from a Refresh) and re-applies the filter.
func (v *sessionsView) set(list []sessions.Session) {
	v.all = append([]sessions.Session(nil), list...)
	view.Sort(v.all)
	v.apply()
}

// apply filters all into shown and redraws, keeping the keyboard cursor
// on the same session when it is still listed.
func (v *sessionsView) apply() {
	if v.list == nil {
		return // the Select fires during construction
	}
	cur, hadCur := v.list.current()
	v.shown = v.shown[:0]
	for _, s := range v.all {
		if matches(s, v.state.Selected, v.text.Text) {
			v.shown = append(v.shown, s)
		}
	}
	v.rows = groupRows(v.shown, v.w.m.Groups())
	switch {
	case len(v.all) == 0:
		v.empty.SetText(emptyText)
		v.empty.Show()
	case len(v.shown) == 0:
		v.empty.SetText("No session matches the filter.")
		v.empty.Show()
	default:
		v.empty.Hide()
	}
	if len(v.shown) == len(v.all) {
		setMuted(v.count, plural(len(v.all), "session", "sessions"))
	} else {
		setMuted(v.count, fmt.Sprintf("%d of %d", len(v.shown), len(v.all)))
	}
	// The cursor stays on its session when the user put it there (a key,
	// a click); else it is on the first session (not a machine's heading):
	// the most urgent, at the top and in view. Following a session nobody
	// chose scrolled the list to wherever the sort took it (100 sessions
	// added with the window open left it at the end).
	idx := slices.IndexFunc(v.rows, func(r listRow) bool { return r.heading == "" })
	chosen := -1
	for i, r := range v.rows {
		if hadCur && v.list.chosen && r.heading == "" && r.s.ID == cur.ID {
			chosen = i
		}
	}
	if chosen >= 0 {
		idx = chosen
	} else {
		v.list.chosen = false
	}
	idx = max(idx, 0)
	v.list.moveCursor(idx)
	v.list.Refresh()
	// Showing or hiding the empty note and a new count width need a
	// layout pass; visibility changes alone do not trigger one.
	if v.content != nil {
		v.content.Refresh()
	}
}

func (v *sessionsView) focus() {
	if c := v.w.win.Canvas(); c != nil && len(v.shown) > 0 {
		c.Focus(v.list)
	}
}

// tick moves the texts on the rows that move with time (the age, a turn's
// time left), each only when its text changed: an idle window must cost
// next to nothing, and a whole list redrawn shapes every row's text again.
// Run calls it at the instant nextChange gave.
func (v *sessionsView) tick() {
	if v.list.tick(v.w.now()) {
		v.redraws++
	}
}

// inTurnRecheck is how often a listed turn's time left is read again: its
// band moves with the turn's pace, at no instant known in advance.
const inTurnRecheck = 15 * time.Second

// nextChange is the next instant a text of the listed sessions moves.
func (v *sessionsView) nextChange(now time.Time) time.Time {
	var next time.Time
	for _, s := range v.shown {
		next = model.Earliest(next, model.NextAgeChange(now, s.StateChangedAt))
		if s.InTurn && v.w.cost != nil {
			next = model.Earliest(next, now.Add(inTurnRecheck))
		}
	}
	return next
}

// matches is the filter: a state choice (or needs-attention) and a
// case-insensitive text matched against name, folder and evidence.
func matches(s sessions.Session, state, text string) bool {
	switch state {
	case "", filterAll:
	case filterAttention:
		if !s.NeedsAttention {
			return false
		}
	default:
		if s.State.Label() != state {
			return false
		}
	}
	text = strings.ToLower(strings.TrimSpace(text))
	if text == "" {
		return true
	}
	for _, f := range []string{s.DisplayName(), s.Cwd, s.Evidence, s.Agent} {
		if strings.Contains(strings.ToLower(f), text) {
			return true
		}
	}
	return false
}

// listRow is one row of the list: a session, or a machine's heading.
type listRow struct {
	heading string
	// note is under a heading: how many sessions the machine has.
	note string
	// down marks a machine whose link is not up (its heading in red).
	down bool
	s    sessions.Session
}

// groupRows lays out shown: alone without groups (no other machine
// configured), else each group's shown sessions under its heading, in the
// groups' order (this machine first), a machine with none still headed.
func groupRows(shown []sessions.Session, groups []model.Group) []listRow {
	rows := make([]listRow, 0, len(shown)+len(groups))
	if len(groups) == 0 {
		for _, s := range shown {
			rows = append(rows, listRow{s: s})
		}
		return rows
	}
	in := make(map[string]bool, len(shown))
	for _, s := range shown {
		in[s.ID] = true
	}
	for _, g := range groups {
		down := g.Machine != "" && g.Link.State != localapi.LinkConnected
		title, reason := g.Parts()
		rows = append(rows, listRow{heading: title, note: groupNote(reason, len(g.Sessions), down), down: down})
		for _, s := range g.Sessions {
			if in[s.ID] {
				rows = append(rows, listRow{s: s})
			}
		}
	}
	return rows
}

// groupNote is the line under a machine's heading: the link's reason (on
// a line of its own, as ssh's sentences are long) and the machine's
// sessions, which while its link is down are as they were when it dropped.
func groupNote(reason string, n int, down bool) string {
	count := "no sessions"
	if n > 0 {
		count = plural(n, "session", "sessions")
		if down {
			count += ", as last seen"
		}
	}
	if reason == "" {
		return count
	}
	return reason + " · " + count
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sessionList is a widget.List driven by the keyboard: Up and Down move a
// cursor, Enter (or Space) opens the session under it; a click opens too.
//
// widget.List's own keyboard focus index is private, so the cursor here
// mirrors it exactly: keys are passed on to the List (which moves its
// focus highlight and scrolls) and the same rule is applied to cursor.
// List selection is not used to mark the cursor: a row that stayed
// selected could not be clicked open again, so a click's selection is
// cleared at once.
type sessionList struct {
	widget.List
	items   func() []listRow
	onOpen  func(sessions.Session)
	cursor  int
	focused bool
	// chosen is set when the user moved the cursor (a key or a click):
	// only then does it follow its session through a change of the list.
	chosen bool
	// bound is each row the List created, and the item it shows now, so
	// a tick moves the texts of the rows in place (tick).
	bound map[*sessionRow]widget.ListItemID
	now   func() time.Time
	cost  func(sessions.Usage) string
	// windows are the plan usage windows of the shown sessions.
	windows func() []view.AccountWindow
}

// cost prices a session's usage (nil: no cost column); windows are the
// plan usage windows the shown sessions reported.
func newSessionList(items func() []listRow, now func() time.Time, cost func(sessions.Usage) string, windows func() []view.AccountWindow, onOpen func(sessions.Session)) *sessionList {
	l := &sessionList{items: items, onOpen: onOpen, bound: map[*sessionRow]widget.ListItemID{}, now: now, cost: cost, windows: windows}
	l.Length = func() int { return len(l.items()) }
	l.CreateItem = func() fyne.CanvasObject { return newSessionRow(cost != nil) }
	l.UpdateItem = func(id widget.ListItemID, o fyne.CanvasObject) {
		list := l.items()
		l.bound[o.(*sessionRow)] = id
		if id < len(list) {
			if h := list[id].heading; h != "" {
				o.(*sessionRow).setHeading(h, list[id].note, list[id].down)
				return
			}
			o.(*sessionRow).set(list[id].s, now(), cost, windows, l.focused && id == l.cursor)
		}
	}
	l.OnSelected = func(id widget.ListItemID) {
		// A click: the List focused itself and moved its focus index here.
		l.cursor, l.chosen = id, true
		l.UnselectAll()
		l.open()
	}
	l.ExtendBaseWidget(l)
	return l
}

// tick moves the texts of the rows that move with time and reports
// whether any did.
func (l *sessionList) tick(now time.Time) bool {
	list := l.items()
	moved := false
	for r, id := range l.bound {
		if id < len(list) && list[id].heading == "" && r.tick(list[id].s, now, l.cost, l.windows) {
			moved = true
		}
	}
	return moved
}

// current is the session under the cursor (none on a heading).
func (l *sessionList) current() (sessions.Session, bool) {
	list := l.items()
	if l.cursor < 0 || l.cursor >= len(list) || list[l.cursor].heading != "" {
		return sessions.Session{}, false
	}
	return list[l.cursor].s, true
}

func (l *sessionList) open() {
	if s, ok := l.current(); ok {
		l.onOpen(s)
	}
}

// moveCursor puts the cursor (and the List's focus index with it) on idx,
// used when the rows change under it.
func (l *sessionList) moveCursor(idx int) {
	for l.cursor > idx {
		l.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
		l.cursor--
	}
	n := len(l.items())
	for l.cursor < idx && l.cursor < n-1 {
		l.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
		l.cursor++
	}
}

// TypedKey moves the cursor or opens the session under it.
func (l *sessionList) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyDown, fyne.KeyUp, fyne.KeyHome, fyne.KeyEnd:
		l.chosen = true
	}
	switch ev.Name {
	case fyne.KeyDown:
		if l.cursor < len(l.items())-1 {
			l.List.TypedKey(ev)
			l.cursor++
			l.Refresh()
		}
	case fyne.KeyUp:
		if l.cursor > 0 {
			l.List.TypedKey(ev)
			l.cursor--
			l.Refresh()
		}
	case fyne.KeyHome:
		l.moveCursor(0)
		l.Refresh()
	case fyne.KeyEnd:
		l.moveCursor(len(l.items()) - 1)
		l.Refresh()
	case fyne.KeyReturn, fyne.KeyEnter, fyne.KeySpace:
		l.open()
	}
}

// FocusGained shows the cursor; it is drawn only while the list has the
// keyboard, like a text cursor.
func (l *sessionList) FocusGained() {
	l.focused = true
	l.List.FocusGained()
	l.Refresh()
}

// FocusLost hides the cursor.
func (l *sessionList) FocusLost() {
	l.focused = false
	l.List.FocusLost()
	l.Refresh()
}

// sessionRow is one list row: badge | name · agent · folder / evidence |
// cost / time left | age.
type sessionRow struct {
	widget.BaseWidget
	cursor   *canvas.Rectangle
	badge    *badge
	title    *widget.RichText
	evidence *widget.RichText
	// cost and left are the equivalent API cost and the time-left band;
	// shown only when the window prices tokens (Options.Cost).
	cost    *widget.RichText
	left    *widget.RichText
	age     *widget.Label
	content *fyne.Container
	// titleKey is the title as drawn: set draws it again only when it
	// changed (shaping text is most of a redraw's cost).
	titleKey string
}

func newSessionRow(withCost bool) *sessionRow {
	r := &sessionRow{
		cursor:   canvas.NewRectangle(theme.Color(theme.ColorNameSelection)),
		badge:    newBadge(),
		title:    widget.NewRichText(),
		evidence: mutedText(true),
		cost:     mutedText(false),
		left:     mutedText(false),
		age:      widget.NewLabel("00m"),
	}
	r.cursor.CornerRadius = theme.SelectionRadiusSize()
	r.cursor.Hide()
	r.title.Truncation = fyne.TextTruncateEllipsis
	r.age.Alignment = fyne.TextAlignTrailing
	text := container.New(layout.NewCustomPaddedVBoxLayout(-2*theme.Padding()), r.title, r.evidence)
	var right fyne.CanvasObject = fixedWidth(56, r.age)
	if withCost {
		figures := container.New(layout.NewCustomPaddedVBoxLayout(-2*theme.Padding()), r.cost, r.left)
		right = container.NewHBox(fixedWidth(150, figures), fixedWidth(56, r.age))
	}
	r.content = container.NewStack(r.cursor, container.NewBorder(nil, nil,
		container.NewCenter(r.badge), right, text))
	r.ExtendBaseWidget(r)
	return r
}

func (r *sessionRow) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(r.content)
}

// showBadge shows or hides the badge's column; the List reuses rows for
// both kinds, so the row is laid out again when it changes kind.
func (r *sessionRow) showBadge(show bool) {
	if r.badge.Visible() == show {
		return
	}
	if show {
		r.badge.Show()
	} else {
		r.badge.Hide()
	}
	r.content.Refresh()
}

// setHeading shows a machine's heading: its name and link, bold, on the
// row's whole width, and a note under it.
func (r *sessionRow) setHeading(text, note string, down bool) {
	r.showBadge(false)
	r.cursor.Hide()
	setLabel(r.age, "")
	colour := theme.ColorNamePrimary
	if down {
		colour = theme.ColorNameError
	}
	if key := "h\x00" + text + "\x00" + string(colour); key != r.titleKey {
		r.titleKey = key
		r.title.Segments = []widget.RichTextSegment{
			&widget.TextSegment{Text: text, Style: widget.RichTextStyle{Inline: true, TextStyle: fyne.TextStyle{Bold: true}, ColorName: colour}},
		}
		r.title.Refresh()
	}
	setMuted(r.evidence, note)
	setMuted(r.cost, "")
	setMuted(r.left, "")
}

// set shows s; cursor marks the keyboard position.
func (r *sessionRow) set(s sessions.Session, now time.Time, cost func(sessions.Usage) string, windows func() []view.AccountWindow, cursor bool) {
	r.showBadge(true)
	r.badge.set(s)
	meta := s.Agent
	if s.Cwd != "" {
		meta += " · " + shortPath(s.Cwd)
	}
	if key := "s\x00" + view.Title(s) + "\x00" + meta; key != r.titleKey {
		r.titleKey = key
		r.title.Segments = []widget.RichTextSegment{
			&widget.TextSegment{Text: view.Title(s), Style: widget.RichTextStyle{Inline: true, TextStyle: fyne.TextStyle{Bold: true}}},
			&widget.TextSegment{Text: "   " + meta, Style: mutedStyle()},
		}
		r.title.Refresh()
	}
	ev := s.Evidence
	if ev == "" {
		ev = "—"
	}
	setMuted(r.evidence, ev)
	if cost != nil {
		setMuted(r.cost, costCell(s, cost))
		setMuted(r.left, leftCell(s, windows(), now))
	}
	setLabel(r.age, sessions.Age(now, s.StateChangedAt))
	if cursor {
		// Read at each draw so a theme switch recolours it.
		r.cursor.FillColor = theme.Color(theme.ColorNameSelection)
		r.cursor.Show()
	} else {
		r.cursor.Hide()
	}
}

// tick moves the row's texts that move with time, s being the session it
// shows: its age, and a turn's time left. It reports whether one moved.
func (r *sessionRow) tick(s sessions.Session, now time.Time, cost func(sessions.Usage) string, windows func() []view.AccountWindow) bool {
	moved := setLabel(r.age, sessions.Age(now, s.StateChangedAt))
	if cost != nil && s.InTurn {
		moved = setMuted(r.left, leftCell(s, windows(), now)) || moved
	}
	return moved
}

// costCell is the list's cost figure: the equivalent API cost of the
// session's tokens, labelled as such in a few characters; "—" before any.
func costCell(s sessions.Session, cost func(sessions.Usage) string) string {
	if len(s.Usage.Total) == 0 {
		return "—"
	}
	return cost(s.Usage.Total) + " API equiv."
}

// leftCell is the list's time left: the band while a turn is in flight
// ("20–45 min left"), "no estimate yet" without signal enough, "" between
// turns; a plan window the session will hit wins (the detail says which
// and when).
func leftCell(s sessions.Session, windows []view.AccountWindow, now time.Time) string {
	if !s.InTurn {
		return ""
	}
	if view.WindowWarning(s, windows, now, time.Local) != "" {
		return "hits its plan limit"
	}
	b := view.TimeLeft(s, now)
	if !b.OK() {
		return "no estimate yet"
	}
	return b.Range() + " left"
}
