package app

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// tlItem is one line of the timeline list: a turn header or an event row.
type tlItem struct {
	header bool
	gen    int64
	row    localapi.TimelineRow
}

// key identifies an item across refreshes, to keep the scroll position on
// the same rows when new ones arrive above them.
func (it tlItem) key() string {
	if it.header {
		return fmt.Sprintf("turn:%d", it.gen)
	}
	// A live row may not carry its stored id yet.
	return "row:" + model.RowKey(it.row)
}

// timelineItems groups rows (newest first, as the backend returns them) by
// turn generation: a "Turn N" header before each run of rows of one turn.
func timelineItems(rows []localapi.TimelineRow) []tlItem {
	var out []tlItem
	for i, r := range rows {
		if i == 0 || r.TurnGeneration != rows[i-1].TurnGeneration {
			out = append(out, tlItem{header: true, gen: r.TurnGeneration})
		}
		out = append(out, tlItem{gen: r.TurnGeneration, row: r})
	}
	return out
}

// rowText is the whole line: "15:04:05 · kind · message".
func rowText(r localapi.TimelineRow, loc *time.Location) string {
	return r.Time.In(loc).Format("15:04:05") + " · " + view.KindLabel(r.Kind) + " · " + view.TimelineDetail(r.Detail)
}

// timelineView is the live timeline: newest first, grouped by turn. New
// rows are inserted above without moving what the user is reading.
type timelineView struct {
	items    []tlItem
	loc      func() *time.Location
	list     *widget.List
	selected string // key of the selected row, kept across refreshes
	full     *widget.RichText
	count    *widget.RichText
	head     *fyne.Container
	content  *fyne.Container
	rowH     float32
}

func newTimelineView(loc func() *time.Location) *timelineView {
	tv := &timelineView{loc: loc}
	tv.list = widget.NewList(
		func() int { return len(tv.items) },
		func() fyne.CanvasObject { return newTimelineRow() },
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id < len(tv.items) {
				o.(*timelineRow).set(tv.items[id], tv.loc())
			}
		})
	tv.list.HideSeparators = true
	tv.rowH = newTimelineRow().MinSize().Height
	// Rows are cut to one line to keep the list scannable; the selected
	// row's full text is shown below it.
	tv.full = mutedText(false)
	tv.showFull("")
	tv.list.OnSelected = func(id widget.ListItemID) {
		if id >= len(tv.items) {
			return
		}
		it := tv.items[id]
		tv.selected = it.key()
		if it.header {
			tv.showFull(view.TurnTitle(it.gen))
		} else {
			tv.showFull(rowText(it.row, tv.loc()))
		}
	}
	tv.count = fieldName("")
	tv.head = container.NewBorder(nil, nil, nil, container.NewCenter(tv.count), section("Timeline"))
	tv.content = container.NewBorder(
		tv.head,
		container.NewVBox(widget.NewSeparator(), tv.full), nil, nil,
		tv.list)
	return tv
}

// set shows rows (newest first). When the user has scrolled down to read
// older rows, the offset grows by the height of what was inserted above
// the first visible row, so the rows on screen stay put; at the top, new
// rows simply appear.
func (tv *timelineView) set(rows []localapi.TimelineRow) {
	next := timelineItems(rows)
	offset := tv.list.GetScrollOffset()
	step := tv.rowH + theme.Padding()
	shift := 0
	if offset > 0 && len(tv.items) > 0 {
		top := min(int(offset/step), len(tv.items)-1)
		key := tv.items[top].key()
		for i, it := range next {
			if it.key() == key {
				shift = i - top
				break
			}
		}
	}
	tv.items = next
	setMuted(tv.count, plural(len(rows), "event", "events"))
	tv.head.Refresh()
	// The List tracks its selection by index; move it with the rows.
	sel := -1
	for i, it := range next {
		if tv.selected != "" && it.key() == tv.selected {
			sel = i
		}
	}
	tv.list.UnselectAll()
	tv.list.Refresh()
	if shift != 0 {
		offset += float32(shift) * step
		tv.list.ScrollToOffset(offset)
	}
	// Re-select only a row on screen: selecting scrolls to the row, which
	// would undo the kept position. Off screen, its text stays below.
	first, last := int(offset/step), int((offset+tv.list.Size().Height)/step)
	if sel >= first && sel < last {
		tv.list.Select(sel)
	}
}

// reset empties the view for another session.
func (tv *timelineView) reset() {
	// Scroll while the old rows are still there: with no rows the List
	// has nothing to scroll and would keep the old offset.
	tv.list.ScrollToOffset(0)
	tv.items = nil
	tv.selected = ""
	tv.list.UnselectAll()
	tv.showFull("")
}

// showFull shows a selected row's whole text under the list, or a muted
// hint when nothing is selected.
func (tv *timelineView) showFull(text string) {
	style := widget.RichTextStyle{Inline: true}
	if text == "" {
		text, style = "Select a row to read it in full.", mutedStyle()
	}
	tv.full.Segments = []widget.RichTextSegment{&widget.TextSegment{Text: text, Style: style}}
	tv.full.Refresh()
}

// timelineRow draws a tlItem: a bold turn header, or time · kind · message.
type timelineRow struct {
	widget.BaseWidget
	header  *widget.Label
	when    *widget.RichText
	kind    *widget.Label
	message *widget.RichText
	row     *fyne.Container
	content *fyne.Container
}

func newTimelineRow() *timelineRow {
	r := &timelineRow{
		header:  boldLabel(""),
		when:    fieldName("00:00:00"),
		kind:    widget.NewLabel(""),
		message: mutedText(true),
	}
	r.when.Segments[0].(*widget.TextSegment).Style.TextStyle.Monospace = true
	r.kind.TextStyle.Bold = true
	r.kind.Truncation = fyne.TextTruncateEllipsis
	r.header.Importance = widget.HighImportance
	r.row = container.NewBorder(nil, nil,
		container.NewHBox(r.when, fixedWidth(150, r.kind)), nil, r.message)
	r.content = container.NewStack(r.header, r.row)
	r.ExtendBaseWidget(r)
	return r
}

func (r *timelineRow) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(r.content)
}

func (r *timelineRow) set(it tlItem, loc *time.Location) {
	if it.header {
		r.row.Hide()
		r.header.SetText(view.TurnTitle(it.gen))
		r.header.Show()
		return
	}
	r.header.Hide()
	setMuted(r.when, it.row.Time.In(loc).Format("15:04:05"))
	r.kind.SetText(view.KindLabel(it.row.Kind))
	setMuted(r.message, view.TimelineDetail(it.row.Detail))
	r.row.Show()
}
