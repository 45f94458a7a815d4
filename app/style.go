package app

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/view"
)

// The state colours. They are the tray icons' colours, so the window and the
// tray read the same at a glance; every use pairs them with text.
var (
	colorAttention  = color.NRGBA{R: 0xd3, G: 0x2f, B: 0x2f, A: 0xff}
	colorWaiting    = color.NRGBA{R: 0xf0, G: 0x8c, B: 0x00, A: 0xff}
	colorRecovering = color.NRGBA{R: 0x7b, G: 0x1f, B: 0xa2, A: 0xff}
	colorWorking    = color.NRGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}
	colorIdle       = color.NRGBA{R: 0x75, G: 0x75, B: 0x75, A: 0xff}

	// Badge text colours: white reads well on every badge colour except the
	// amber, where it falls far below a readable contrast.
	colorOnBadge = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	colorOnAmber = color.NRGBA{R: 0x1f, G: 0x1f, B: 0x1f, A: 0xff}
)

// stateColor is the badge colour of a session.
func stateColor(s sessions.Session) color.NRGBA {
	switch view.UrgencyOf(s) {
	case view.NeedsAttention:
		return colorAttention
	case view.Waiting:
		return colorWaiting
	case view.Recovering:
		return colorRecovering
	case view.Working:
		return colorWorking
	}
	return colorIdle
}

// countdown is the time left until t: "in 4m 05s", "in 1h 02m", or
// "due now" once t has passed (the supervisor acts at its next tick).
func countdown(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "due now"
	}
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("in %dh %02dm", h, m)
	case m > 0:
		return fmt.Sprintf("in %dm %02ds", m, s)
	}
	return fmt.Sprintf("in %ds", s)
}

// homeDir is read once: it only shortens paths for display.
var homeDir, _ = os.UserHomeDir()

// shortPath shows a path under the home directory as ~/…, which is how
// people recognise their project folders.
func shortPath(p string) string {
	if homeDir == "" || p == "" {
		return p
	}
	if p == homeDir {
		return "~"
	}
	if rel, ok := strings.CutPrefix(p, homeDir+string(filepath.Separator)); ok {
		return "~" + string(filepath.Separator) + rel
	}
	return p
}

// badge is a state pill: a coloured rounded rectangle with the state's name
// written on it, so colour is never the only signal.
type badge struct {
	widget.BaseWidget
	bg   *canvas.Rectangle
	text *canvas.Text
}

// badgeWidth fits the longest label ("Needs attention", "Waiting on user")
// so badges line up in a column.
const badgeWidth = 124

func newBadge() *badge {
	b := &badge{bg: canvas.NewRectangle(colorIdle), text: canvas.NewText("", colorOnBadge)}
	b.bg.CornerRadius = 5
	b.text.TextStyle.Bold = true
	b.text.Alignment = fyne.TextAlignCenter
	b.text.TextSize = theme.CaptionTextSize() + 1
	b.ExtendBaseWidget(b)
	return b
}

// set shows a session's state.
func (b *badge) set(s sessions.Session) {
	c := stateColor(s)
	b.bg.FillColor = c
	b.text.Text = view.Badge(s)
	b.text.Color = colorOnBadge
	if c == colorWaiting {
		b.text.Color = colorOnAmber
	}
	b.bg.Refresh()
	b.text.Refresh()
}

func (b *badge) CreateRenderer() fyne.WidgetRenderer {
	return &badgeRenderer{b: b}
}

type badgeRenderer struct{ b *badge }

func (r *badgeRenderer) Layout(size fyne.Size) {
	r.b.bg.Resize(size)
	r.b.bg.Move(fyne.NewPos(0, 0))
	ts := r.b.text.MinSize()
	r.b.text.Resize(fyne.NewSize(size.Width, ts.Height))
	r.b.text.Move(fyne.NewPos(0, (size.Height-ts.Height)/2))
}

func (r *badgeRenderer) MinSize() fyne.Size {
	ts := r.b.text.MinSize()
	return fyne.NewSize(max(badgeWidth, ts.Width+2*theme.Padding()), ts.Height+theme.Padding())
}

func (r *badgeRenderer) Refresh() {
	r.b.bg.Refresh()
	r.b.text.Refresh()
}

func (r *badgeRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.b.bg, r.b.text}
}

func (r *badgeRenderer) Destroy() {}

// mutedText is secondary text (evidence, paths, help): the theme's
// placeholder colour, which stays readable where the "disabled" colour of a
// low-importance label is too faint on a light background.
func mutedText(truncate bool) *widget.RichText {
	rt := widget.NewRichText(&widget.TextSegment{Style: mutedStyle()})
	if truncate {
		rt.Truncation = fyne.TextTruncateEllipsis
	} else {
		rt.Wrapping = fyne.TextWrapWord
	}
	return rt
}

func mutedStyle() widget.RichTextStyle {
	return widget.RichTextStyle{ColorName: theme.ColorNamePlaceHolder, Inline: true}
}

// setMuted replaces a mutedText's words, keeping its style (a caption
// size, monospace).
//
// Unchanged text is not set again (a refresh shapes the text anew, most of
// a redraw's cost); it reports whether the text changed.
func setMuted(rt *widget.RichText, text string) bool {
	style := mutedStyle()
	if len(rt.Segments) == 1 {
		if seg, ok := rt.Segments[0].(*widget.TextSegment); ok {
			if seg.Text == text {
				return false
			}
			style = seg.Style
		}
	}
	rt.Segments = []widget.RichTextSegment{&widget.TextSegment{Style: style, Text: text}}
	rt.Refresh()
	return true
}

// setLabel sets a label's text when it changed, and reports whether it did.
func setLabel(l *widget.Label, text string) bool {
	if l.Text == text {
		return false
	}
	l.SetText(text)
	return true
}

// mutedLine is a one-line mutedText showing s.
func mutedLine(s string) *widget.RichText {
	rt := mutedText(true)
	setMuted(rt, s)
	return rt
}

// fieldName is a muted caption before a value ("Agent", "Folder").
func fieldName(s string) *widget.RichText {
	rt := widget.NewRichText(&widget.TextSegment{Style: mutedStyle(), Text: s})
	return rt
}

// boldLabel is a label in bold, for names and headings.
func boldLabel(text string) *widget.Label {
	l := widget.NewLabel(text)
	l.TextStyle.Bold = true
	return l
}

// errorLabel is an inline error: red, wrapped, hidden until set.
func errorLabel() *widget.Label {
	l := widget.NewLabel("")
	l.Importance = widget.DangerImportance
	l.Wrapping = fyne.TextWrapWord
	l.Hide()
	return l
}

// setError shows msg on l, or hides l when msg is empty. It reports
// whether anything changed, so callers re-lay out only then: text
// measuring makes a layout pass the costly part of an update.
func setError(l *widget.Label, msg string) bool {
	if l.Text == msg && l.Visible() == (msg != "") {
		return false
	}
	l.SetText(msg)
	if msg == "" {
		l.Hide()
	} else {
		l.Show()
	}
	return true
}

// minWidth lays its objects out stacked, at least w wide: fixed columns
// (badges, timeline kinds) without hard-coding the whole row.
type minWidth struct{ w float32 }

func (m minWidth) MinSize(objects []fyne.CanvasObject) fyne.Size {
	s := fyne.NewSize(m.w, 0)
	for _, o := range objects {
		if o.Visible() {
			s = s.Max(o.MinSize())
		}
	}
	return s
}

func (m minWidth) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objects {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

// fixedWidth wraps o in a column at least w wide.
func fixedWidth(w float32, o fyne.CanvasObject) *fyne.Container {
	return container.New(minWidth{w}, o)
}

// section is a titled group: a bold heading over its content.
func section(title string, content ...fyne.CanvasObject) *fyne.Container {
	h := widget.NewLabel(title)
	h.TextStyle.Bold = true
	h.SizeName = theme.SizeNameSubHeadingText
	return container.NewVBox(append([]fyne.CanvasObject{h}, content...)...)
}
