package tray

import (
	"reflect"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// visible is what a tray host shows of items: the hidden places left out.
func visible(items []Item) []Item {
	var out []Item
	for _, it := range items {
		if it.Hidden {
			continue
		}
		it.Children = visible(it.Children)
		out = append(out, it)
	}
	return out
}

// placesAfter is what the tray shows after showing menus in turn, each
// brought in place.
func placesAfter(t *testing.T, menus ...[]Item) []Item {
	t.Helper()
	places := menus[0]
	for i, next := range menus[1:] {
		var ok bool
		if places, ok = Reconcile(places, next); !ok {
			t.Fatalf("menu %d of the way rebuilds", i+1)
		}
	}
	return places
}

// keepsPlaces checks that plan keeps every place of shown, of the same
// kind, at every level: no item of shown loses its id.
func keepsPlaces(t *testing.T, shown, plan []Item, path string) {
	t.Helper()
	if len(plan) < len(shown) {
		t.Errorf("%s: %d places planned for %d shown", path, len(plan), len(shown))
		return
	}
	for i, was := range shown {
		if kindOf(was) != kindOf(plan[i]) {
			t.Errorf("%s[%d]: a %s where a %s was", path, i, kindOf(plan[i]), kindOf(was))
		}
		keepsPlaces(t, was.Children, plan[i].Children, path+"/"+was.Label)
	}
}

// Reconcile brings the shown menu to the next in place (every id kept)
// through the usual changes, sessions coming and going included, and
// gives up (a rebuild) only where systray cannot follow: a kind changing
// at a place or a separator appearing or going in the middle.
func TestReconcile(t *testing.T) {
	at := func(when time.Time, snap Snapshot) []Item { snap.Now = when; return Build(snap).Items }
	with := func(list ...sessions.Session) []Item { return at(now, Snapshot{Sessions: list}) }
	alpha := sess("a", "alpha", sessions.Idle, nil)
	beta := sess("b", "beta", sessions.Idle, nil)
	gamma := sess("c", "gamma", sessions.WaitingOnUser, nil)
	dead := sess("d", "dead", sessions.Interrupted, func(s *sessions.Session) {
		s.Source, s.AgentSessionID, s.NeedsAttention = sessions.Observed, "sid", true
	})
	deadAlive := dead
	deadAlive.ProcessAlive, deadAlive.NeedsAttention = true, false
	var many []sessions.Session
	for i := range MaxTopLevel + 1 {
		many = append(many, sess(string(rune('k'+i)), string(rune('k'+i)), sessions.Idle, nil))
	}
	machines := func(groups ...Group) []Item {
		var all []sessions.Session
		for _, g := range groups {
			all = append(all, g.Sessions...)
		}
		return at(now, Snapshot{Sessions: all, Groups: groups})
	}
	sep := Item{Separator: true}
	leaf := Item{Label: "x", Action: ActNudge}
	check := Item{Label: "x", Checkable: true}
	parent := Item{Label: "x", Children: []Item{leaf}}
	cases := []struct {
		name       string
		shown, to  []Item
		want       bool
		openKeeps  bool // "Open Session Supervisor…" at the place it was
		hiddenRest int  // places of shown's top level hidden by the plan that showed
	}{
		{"an age moved", with(alpha), at(now.Add(time.Hour), Snapshot{Sessions: []sessions.Session{alpha}}), true, true, 0},
		{"a state changed", with(alpha), with(sess("a", "alpha", sessions.WaitingOnUser, nil)), true, true, 0},
		{"paused", Build(Snapshot{Now: now}).Items, Build(Snapshot{Now: now, Paused: true}).Items, true, true, 0},
		{"a second session", with(alpha), with(alpha, beta), true, true, 0},
		{"a session sorted first", with(alpha, beta), with(alpha, beta, gamma), true, true, 0},
		{"a session gone", with(alpha, beta), with(alpha), true, true, 1},
		{"a gone session's place taken again", placesAfter(t, with(alpha, beta), with(alpha)), with(alpha, gamma), true, true, 0},
		{"the eleventh session: More…", with(many[:MaxTopLevel]...), with(many...), true, true, 0},
		{"More… emptied", with(many...), with(many[:MaxTopLevel]...), true, true, 1},
		{"the link and the day's line", with(alpha), at(now, Snapshot{Sessions: []sessions.Session{alpha}, Link: "Supervisor not running", Today: &model.DayUsage{Day: "2026-12-02"}}), true, true, 0},
		{"Resume appears in a submenu", with(deadAlive), with(dead), true, true, 0},
		{"Resume goes", with(dead), with(deadAlive), true, true, 0},
		{"Resume back", placesAfter(t, with(dead), with(deadAlive)), with(dead), true, true, 0},
		{"a session moves between machines", machines(Group{Heading: "here", Sessions: []sessions.Session{alpha}}, Group{Heading: "devbox"}),
			machines(Group{Heading: "here"}, Group{Heading: "devbox", Sessions: []sessions.Session{alpha}}), true, true, 1},
		{"the first session: a separator appears", Build(Snapshot{Now: now}).Items, with(alpha), false, false, 0},
		{"the last session gone: a separator goes", with(alpha), Build(Snapshot{Now: now}).Items, false, false, 0},
		{"a machine more", machines(Group{Heading: "here"}), machines(Group{Heading: "here"}, Group{Heading: "devbox"}), false, false, 0},
		{"label and action differ", []Item{leaf}, []Item{{Label: "y", Action: ActAcknowledge, Disabled: true}}, true, false, 0},
		{"separator moved", []Item{sep, leaf}, []Item{leaf, sep}, false, false, 0},
		{"check box where a plain item was", []Item{leaf}, []Item{check}, false, false, 0},
		{"a separator would go", []Item{leaf, sep}, []Item{leaf}, false, false, 0},
		{"a submenu appears", []Item{leaf}, []Item{parent}, true, false, 0},
		{"an item showing loses its submenu", []Item{parent}, []Item{leaf}, false, false, 0},
		{"a submenu grows", []Item{parent}, []Item{{Label: "x", Children: []Item{leaf, check}}}, true, false, 0},
		{"a submenu's check box where a plain item was", []Item{parent}, []Item{{Label: "x", Children: []Item{check}}}, false, false, 0},
		{"items appended at the end", []Item{leaf}, []Item{leaf, sep, check}, true, false, 0},
		{"both empty", nil, []Item{}, true, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, ok := Reconcile(tc.shown, tc.to)
			if ok != tc.want {
				t.Fatalf("Reconcile ok = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if got, want := visible(plan), visible(tc.to); !reflect.DeepEqual(got, want) {
				t.Errorf("the plan shows\n%q\nwant\n%q", labels(got), labels(want))
			}
			keepsPlaces(t, tc.shown, plan, "")
			if tc.openKeeps {
				i := indexOf(tc.shown, "Open Session Supervisor…")
				if i < 0 || plan[i].Label != "Open Session Supervisor…" || plan[i].Hidden {
					t.Errorf("Open was at %d; the plan shows %+v there", i, plan[i])
				}
			}
			newlyHidden := 0
			for i, was := range tc.shown {
				if !was.Hidden && plan[i].Hidden {
					newlyHidden++
					if plan[i].Label != was.Label {
						t.Errorf("hidden place %d retitled %q (was %q): hiding changes nothing else", i, plan[i].Label, was.Label)
					}
				}
			}
			if newlyHidden != tc.hiddenRest {
				t.Errorf("%d places hidden, want %d", newlyHidden, tc.hiddenRest)
			}
		})
	}
}

// A place that comes to show another session hides the actions it showed
// and appends the new session's: a click on an id read for the session
// before acts on nothing, never on the session now shown there; the next
// plan shows the session's actions in the first places again.
func TestReconcileAnotherSessionsActions(t *testing.T) {
	with := func(list ...sessions.Session) []Item { return Build(Snapshot{Now: now, Sessions: list}).Items }
	alpha := sess("a", "alpha", sessions.Idle, nil)
	beta := sess("b", "beta", sessions.Idle, nil)
	shown := with(alpha, beta)
	place := indexOf(shown, SessionLabel(alpha, now))
	plan, ok := Reconcile(shown, with(beta))
	if !ok || plan[place].SessionID != "b" {
		t.Fatalf("alpha gone: ok %v, its place shows %+v", ok, plan[place])
	}
	before := shown[place].Children
	got := plan[place].Children
	if len(got) != len(before)+len(before) {
		t.Fatalf("the place's actions: %d, want alpha's %d hidden and beta's appended", len(got), len(before))
	}
	for i, was := range before {
		if !got[i].Hidden || got[i].SessionID != "a" || got[i].Action != was.Action {
			t.Errorf("action %d: %+v, want alpha's %v hidden", i, got[i], was.Action)
		}
		if c, ok := clickable(&node{item: got[i], parent: &node{item: plan[place]}}); ok {
			t.Errorf("a click on alpha's %v would act on %+v", was.Action, c)
		}
	}
	for i, it := range got[len(before):] {
		if it.Hidden || it.SessionID != "b" {
			t.Errorf("appended action %d: %+v, want beta's shown", i, it)
		}
	}
	again, ok := Reconcile(plan, with(beta))
	if !ok || len(again[place].Children) != len(got) || again[place].Children[0].Hidden || again[place].Children[0].SessionID != "b" || !again[place].Children[len(before)].Hidden {
		t.Fatalf("the next plan: ok %v, %+v", ok, again[place].Children)
	}
}

func indexOf(items []Item, label string) int {
	for i, it := range items {
		if it.Label == label {
			return i
		}
	}
	return -1
}

// A click acts on what its item shows now, and on nothing when the item
// or a menu above it is hidden (a tray host may click an id it read
// before), disabled or without an action.
func TestClickable(t *testing.T) {
	open := Item{Label: "Open", Action: ActOpenSession, SessionID: "a"}
	session := &node{item: Item{Label: "alpha", SessionID: "a"}}
	gone := &node{item: Item{Label: "alpha", SessionID: "a", Hidden: true}}
	cases := []struct {
		name string
		n    *node
		want bool
	}{
		{"an action", &node{item: open, parent: session}, true},
		{"the header", &node{item: Item{Label: "No sessions", Disabled: true}}, false},
		{"a session's own item", session, false},
		{"disabled", &node{item: Item{Label: "Interrupt turn", Action: ActInterrupt, Disabled: true}, parent: session}, false},
		{"hidden", &node{item: Item{Label: "Open", Action: ActOpenWindow, Hidden: true}}, false},
		{"in a hidden session's submenu", &node{item: open, parent: gone}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := clickable(tc.n)
			if ok != tc.want {
				t.Fatalf("clickable = %v, want %v", ok, tc.want)
			}
			if ok && !reflect.DeepEqual(got, tc.n.item) {
				t.Errorf("acts on %+v, want what the item shows: %+v", got, tc.n.item)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[kind]string{kindPlain: "plain", kindCheck: "check", kindSeparator: "separator", kind(7): "kind(7)"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", int(k), k.String(), want)
		}
	}
}
