package tray

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// A menu of the same shape is updated in place (ids kept, an open menu
// stays open); anything that moves an item, a separator, a check box or a
// submenu rebuilds it.
func TestSameShape(t *testing.T) {
	sessionsAt := func(at time.Time, list ...sessions.Session) []Item {
		return Build(Snapshot{Now: at, Sessions: list}).Items
	}
	idle := sess("a", "alpha", sessions.Idle, nil)
	hourLater := now.Add(time.Hour)
	waiting := sess("a", "alpha", sessions.WaitingOnUser, nil)
	other := sess("b", "beta", sessions.Idle, nil)
	sep := Item{Separator: true}
	leaf := Item{Label: "x", Action: ActNudge}
	check := Item{Label: "x", Checkable: true}
	parent := Item{Label: "x", Children: []Item{leaf}}
	cases := []struct {
		name string
		a, b []Item
		want bool
	}{
		{"an age moved", sessionsAt(now, idle), sessionsAt(hourLater, idle), true},
		{"a state changed", sessionsAt(now, idle), sessionsAt(now, waiting), true},
		{"paused: the check and the header", Build(Snapshot{Now: now}).Items, Build(Snapshot{Now: now, Paused: true}).Items, true},
		{"a session more", sessionsAt(now, idle), sessionsAt(now, idle, other), false},
		{"label and action differ", []Item{leaf}, []Item{{Label: "y", Action: ActAcknowledge, Disabled: true}}, true},
		{"separator moved", []Item{sep, leaf}, []Item{leaf, sep}, false},
		{"check box appears", []Item{leaf}, []Item{check}, false},
		{"submenu appears", []Item{leaf}, []Item{parent}, false},
		{"submenu grows", []Item{parent}, []Item{{Label: "x", Children: []Item{leaf, leaf}}}, false},
		{"both empty", nil, []Item{}, true},
	}
	for _, tc := range cases {
		if got := SameShape(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameShape = %v, want %v", tc.name, got, tc.want)
		}
	}
}
