package model

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
)

// NextAgeChange is the instant sessions.Age(·, since) next shows another
// text after now: its seconds move every second for a minute, then its
// minutes every minute, its hours every hour up to two days, then its days.
// A view that shows ages redraws then, not on a fixed tick. Zero for a zero
// since (Age shows "-", which never moves).
func NextAgeChange(now, since time.Time) time.Time {
	if since.IsZero() || now.IsZero() {
		return time.Time{}
	}
	d := now.Sub(since)
	if d < 0 {
		// Age shows "0s" until the first whole second.
		return since.Add(time.Second)
	}
	unit := time.Second
	switch {
	case d < time.Minute:
	case d < time.Hour:
		unit = time.Minute
	case d < 48*time.Hour:
		unit = time.Hour
	default:
		unit = 24 * time.Hour
	}
	return since.Add((d/unit + 1) * unit)
}

// Earliest is the earlier of two instants where zero means none.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Redraw says why Pace calls a view's render.
type Redraw int

// Why a view redraws.
const (
	// RedrawChanged: the model changed (once per burst), or the start.
	RedrawChanged Redraw = iota
	// RedrawDue: the instant the view asked for came (a text it shows
	// moves with time: an age, a countdown).
	RedrawDue
)

var redrawNames = [...]string{RedrawChanged: "changed", RedrawDue: "due"}

func (r Redraw) String() string { return enum.Name(r, "redraw", redrawNames[:]) }

// Deadline is where a view tells Pace the next instant one of its texts
// changes by itself (zero: none, as for a hidden view). A later Set
// replaces an earlier one not yet taken. Set may be called from any one
// goroutine at a time: the view's (its render, or Fyne's).
type Deadline struct{ ch chan time.Time }

// NewDeadline returns an empty Deadline.
func NewDeadline() *Deadline { return &Deadline{ch: make(chan time.Time, 1)} }

// Set replaces the pending instant with at.
func (d *Deadline) Set(at time.Time) {
	for {
		select {
		case d.ch <- at:
			return
		default:
		}
		select {
		case <-d.ch:
		default:
		}
	}
}

// Pace runs a view's redraws until ctx is done or changes is closed: once
// at the start and once per burst of changes (delay after the first
// signal, the rest swallowed), render(RedrawChanged); and at the instant
// the view last set on next, render(RedrawDue), no sooner than floor after
// the previous due redraw (a tray batches the ages of many sessions that
// each move at their own second). Nothing is rendered while nothing
// changes and nothing is due: an idle desktop sleeps.
func Pace(ctx context.Context, changes <-chan struct{}, delay, floor time.Duration, next *Deadline, render func(Redraw)) {
	render(RedrawChanged)
	var fire <-chan time.Time
	due := time.NewTimer(time.Hour)
	due.Stop()
	var dueC <-chan time.Time
	var lastDue time.Time
	for {
		select {
		case <-ctx.Done():
			due.Stop()
			return
		case _, ok := <-changes:
			if !ok {
				due.Stop()
				return
			}
			if fire == nil {
				fire = time.After(delay)
			}
		case <-fire:
			fire = nil
			render(RedrawChanged)
		case at := <-next.ch:
			due.Stop()
			dueC = nil
			if !at.IsZero() {
				if earliest := lastDue.Add(floor); at.Before(earliest) {
					at = earliest
				}
				due.Reset(time.Until(at))
				dueC = due.C
			}
		case <-dueC:
			dueC = nil
			lastDue = time.Now()
			render(RedrawDue)
		}
	}
}
