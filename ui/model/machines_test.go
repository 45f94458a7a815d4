package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestKeyRoundTrip(t *testing.T) {
	cases := []struct {
		machine, id, key string
	}{
		{"", "4f2a1b2c-0000", "4f2a1b2c-0000"},
		{"devbox", "4f2a1b2c-0000", "4f2a1b2c-0000@devbox"},
		{"gpu.box_2", "abc", "abc@gpu.box_2"},
		// An id of this machine holding the separator stays whole when
		// what follows it is no machine name.
		{"", "user@host/x", "user@host/x"},
	}
	for _, tc := range cases {
		if got := Key(tc.machine, tc.id); got != tc.key {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.machine, tc.id, got, tc.key)
		}
		if m, id := SplitKey(tc.key); m != tc.machine || id != tc.id {
			t.Errorf("SplitKey(%q) = %q, %q; want %q, %q", tc.key, m, id, tc.machine, tc.id)
		}
	}
	if got := sessions.ShortID(Key("devbox", "4f2a1b2c-0000")); got != sessions.ShortID("4f2a1b2c-0000") {
		t.Errorf("short id of a remote key %q, want the id's own", got)
	}
}

func keyed(machine string, list ...sessions.Session) []sessions.Session {
	out := make([]sessions.Session, len(list))
	for i, s := range list {
		s.ID = Key(machine, s.ID)
		out[i] = s
	}
	return out
}

func keys(list []sessions.Session) string {
	var b []string
	for _, s := range list {
		b = append(b, s.ID)
	}
	return strings.Join(b, ",")
}

// A machine's snapshot is the authority on that machine's sessions only:
// it never wipes this machine's or another's, and the same id on two
// machines is two sessions.
func TestSnapshotsPerMachine(t *testing.T) {
	m := New()
	m.SetMachines([]string{"zeta", "devbox"})
	a, b := sess("aaaa", sessions.Working, time.Minute), sess("bbbb", sessions.Idle, time.Minute)
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{a, b},
		Settings: []localapi.SettingValue{{Key: "supervisor.enabled", Value: "true"}}})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: keyed("devbox", a),
		Settings: []localapi.SettingValue{{Key: "supervisor.enabled", Value: "false"}}})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "zeta", Sessions: keyed("zeta", b)})
	if got := len(m.Sessions()); got != 4 {
		t.Fatalf("%d sessions, want 4 (aaaa here and on devbox, bbbb here and on zeta): %s", got, keys(m.Sessions()))
	}
	if m.Prefs().Paused {
		t.Error("another machine's settings paused this desktop")
	}
	m.Apply(localapi.Message{Type: localapi.MsgUsage, Usage: &localapi.DayUsage{Day: "2026-11-29", Recoveries: 1}})
	m.Apply(localapi.Message{Type: localapi.MsgUsage, Machine: "devbox", Usage: &localapi.DayUsage{Day: "2026-11-29", Recoveries: 9}})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: keyed("devbox", a), Usage: &localapi.DayUsage{Recoveries: 9}})
	if d, ok := m.Today(); !ok || d.Recoveries != 1 {
		t.Errorf("today %+v: another machine's usage replaced this one's", d)
	}
	// devbox's next snapshot drops its aaaa and nothing else.
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox"})
	if got := keys(m.Sessions()); got != "aaaa,bbbb,bbbb@zeta" {
		t.Fatalf("after devbox's empty snapshot: %s", got)
	}
	// A machine not configured (any more) is not listened to.
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "gone", Sessions: keyed("gone", a)})
	if _, err := m.Session(Key("gone", "aaaa")); !errors.Is(err, ErrNotFound) {
		t.Errorf("a session of an unconfigured machine was kept (%v)", err)
	}
	// Removing zeta takes its sessions.
	m.SetMachines([]string{"devbox"})
	if got := keys(m.Sessions()); got != "aaaa,bbbb" {
		t.Fatalf("after zeta was removed: %s", got)
	}
}

func TestGroupsOrderAndLinks(t *testing.T) {
	m := New()
	if m.Groups() != nil {
		t.Fatal("groups without any machine configured: the views must look as before")
	}
	m.SetMachines([]string{"zeta", "devbox"})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{sess("here", sessions.Idle, time.Minute)}})
	m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "zeta", Sessions: keyed("zeta", sess("z1", sessions.Working, time.Minute), sess("z2", sessions.Idle, time.Minute))})
	m.Apply(localapi.Message{Type: localapi.MsgLink, Machine: "zeta", Link: &localapi.LinkStatus{State: localapi.LinkConnected}})
	var got []string
	for _, g := range m.Groups() {
		got = append(got, fmt.Sprintf("%s[%s]", g.Heading(), keys(g.Sessions)))
	}
	want := []string{"This machine[here]", "devbox — connecting…[]", "zeta — connected[z1@zeta,z2@zeta]"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("groups %q, want %q", got, want)
	}
	// Another machine's link is not this desktop's banner.
	m.Apply(localapi.Message{Type: localapi.MsgLink, Machine: "zeta", Link: &localapi.LinkStatus{State: localapi.LinkReconnecting, Since: time.Now()}})
	if s := m.LinkSentence(time.Now()); s != "" {
		t.Errorf("banner %q for another machine's link", s)
	}
}

func TestLinkWords(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 3, 0, 0, time.Local)
	cases := []struct {
		link localapi.LinkStatus
		want string
	}{
		{localapi.LinkStatus{}, "connecting…"},
		{localapi.LinkStatus{State: localapi.LinkConnected}, "connected"},
		{localapi.LinkStatus{State: localapi.LinkConnected, Health: &localapi.Health{Status: "stalled"}}, "connected, supervisor stalled"},
		{localapi.LinkStatus{State: localapi.LinkReconnecting, Since: at, Up: at.Add(-time.Hour), Error: "machine devbox: Connection closed by 127.0.0.1 port 2222"},
			"reconnecting since 12:03: Connection closed by 127.0.0.1 port 2222"},
		{localapi.LinkStatus{State: localapi.LinkReconnecting, Since: at, Error: "machine devbox: Permission denied (publickey)."},
			"unreachable: Permission denied (publickey)."},
		{localapi.LinkStatus{State: localapi.LinkIncompatible, Since: at, Error: "machine devbox speaks API version 9 (app 9.0); this app speaks 1: update the older one"},
			"wrong API version: machine devbox speaks API version 9 (app 9.0); this app speaks 1: update the older one"},
	}
	for _, tc := range cases {
		if got := LinkWords("devbox", tc.link); got != tc.want {
			t.Errorf("LinkWords(%+v) = %q, want %q", tc.link, got, tc.want)
		}
	}
}
