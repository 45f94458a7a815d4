package model

import (
	"slices"
	"strings"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// keySep joins a session id and its machine in the desktop's key. Machine
// names cannot hold it (machines.Parse); an id that does is kept whole.
const keySep = "@"

// Key is how the desktop keys session id of machine ("" for this one):
// session ids are unique per machine only, so another machine's sessions
// are keyed "id@machine" everywhere the desktop holds one (the model, the
// tray's items, the window's selection, a notification's click), and this
// machine's keep their id, exactly as before machines existed. The short
// id shown (the id's first characters) reads the same.
func Key(machine, id string) string {
	if machine == "" {
		return id
	}
	return id + keySep + machine
}

// SplitKey is Key reversed: the machine ("" for this one) and the id that
// machine knows the session by.
func SplitKey(key string) (machine, id string) {
	i := strings.LastIndex(key, keySep)
	if i < 0 || i == len(key)-1 || !validMachine(key[i+1:]) {
		return "", key
	}
	return key[i+1:], key[:i]
}

// validMachine is the shape machines.Parse allows for a name.
func validMachine(s string) bool {
	if len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// SetMachines sets the other machines configured (machines.json), which the
// views group sessions by. A machine dropped from the list takes its
// sessions and link with it; one added shows as connecting until its link
// says more.
func (m *Model) SetMachines(names []string) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Equal(names, m.machines) {
		return
	}
	m.machines = names
	for k := range m.byID {
		if machine, _ := SplitKey(k); machine != "" && !slices.Contains(names, machine) {
			delete(m.byID, k)
			m.list = nil
		}
	}
	for name := range m.links {
		if !slices.Contains(names, name) {
			delete(m.links, name)
			delete(m.last, name)
		}
	}
	m.changedLocked()
}

// Machines is the other machines configured, by name (none: this machine
// alone).
func (m *Model) Machines() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.machines)
}

// Group is one machine's part of the views: its name ("" for this one),
// its link, and its sessions in the view order.
type Group struct {
	Machine  string
	Link     localapi.LinkStatus
	Sessions []sessions.Session
}

// Groups is the sessions by machine, this one first, then the other
// machines by name (each listed even with no session: its state is news);
// nil when no other machine is configured, so the views look as they
// always did.
func (m *Model) Groups() []Group {
	all := m.Sessions()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.machines) == 0 {
		return nil
	}
	groups := make([]Group, 0, 1+len(m.machines))
	index := map[string]int{"": 0}
	groups = append(groups, Group{Link: m.link})
	for _, name := range m.machines {
		index[name] = len(groups)
		groups = append(groups, Group{Machine: name, Link: m.links[name]})
	}
	for _, s := range all {
		machine, _ := SplitKey(s.ID)
		if i, ok := index[machine]; ok {
			groups[i].Sessions = append(groups[i].Sessions, s)
		}
	}
	return groups
}

// LocalHeading names this machine's group.
const LocalHeading = "This machine"

// Heading is the group's header line: the machine's name and its link as
// the user needs it ("devbox — reconnecting since 12:03: Connection
// refused"). Text from the other machine (ssh's reason) is sanitized.
func (g Group) Heading() string {
	if g.Machine == "" {
		return LocalHeading
	}
	return g.Machine + " — " + LinkWords(g.Machine, g.Link)
}

// Parts is the heading in two parts: the machine's name and its link's
// state ("devbox — reconnecting since 12:03"), and the link's reason.
func (g Group) Parts() (title, reason string) {
	if g.Machine == "" {
		return LocalHeading, ""
	}
	state, reason := LinkParts(g.Machine, g.Link)
	return g.Machine + " — " + state, reason
}

// LinkWords says a machine's link in a few words: connecting, connected,
// reconnecting since HH:MM (it was up, then dropped), unreachable (never
// reached since the desktop started) or a wrong API version, with the
// reason ssh or the remote gave.
func LinkWords(machine string, l localapi.LinkStatus) string {
	state, reason := LinkParts(machine, l)
	if reason == "" {
		return state
	}
	return state + ": " + reason
}

// LinkParts is LinkWords in two parts, for a view that gives the reason
// (which can be long: ssh's own sentence) a line of its own: the state in
// a few words, and the reason sanitized ("" when there is none).
func LinkParts(machine string, l localapi.LinkStatus) (state, reason string) {
	reason = strings.TrimPrefix(l.Error, "machine "+machine+": ")
	if reason != "" {
		reason = sessions.SanitizeMessage(reason)
	}
	switch l.State {
	case localapi.LinkConnected:
		if l.Health != nil && l.Health.Status != "" && l.Health.Status != "ok" {
			return "connected, supervisor " + l.Health.Status, reason
		}
		return "connected", ""
	case localapi.LinkReconnecting:
		if l.Up.IsZero() {
			return "unreachable", reason
		}
		return "reconnecting since " + l.Since.Local().Format("15:04"), reason
	case localapi.LinkIncompatible:
		return "wrong API version", reason
	}
	return "connecting…", ""
}
