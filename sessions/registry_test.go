package sessions

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// stubAgent is a registry entry that launches nothing.
type stubAgent struct{ name, display, command string }

func (a stubAgent) Name() string           { return a.name }
func (a stubAgent) DisplayName() string    { return a.display }
func (a stubAgent) DefaultCommand() string { return a.command }
func (a stubAgent) InstallHint() string    { return "" }
func (a stubAgent) Start(context.Context, StartOptions) (Process, error) {
	return nil, errors.New("stub agents launch nothing")
}

func TestRegistry(t *testing.T) {
	one, two := stubAgent{"one", "Agent One", "one"}, stubAgent{"two", "Agent Two", "/opt/two"}
	r, err := NewRegistry(two, one)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"two", "one"}) {
		t.Errorf("Names = %v, want registration order", got)
	}
	if a, ok := r.Lookup("one"); !ok || a.DisplayName() != "Agent One" {
		t.Errorf("Lookup(one) = %v, %v", a, ok)
	}
	if _, ok := r.Lookup("three"); ok {
		t.Error("Lookup found an unregistered agent")
	}
	all := r.All()
	all[0] = nil
	if r.All()[0] == nil {
		t.Error("All handed out the registry's own slice")
	}
}

func TestRegistryRefusesBadEntries(t *testing.T) {
	tests := []struct {
		name   string
		agents []ManagedAgent
	}{
		{"empty name", []ManagedAgent{stubAgent{"", "X", "x"}}},
		{"dot in name", []ManagedAgent{stubAgent{"a.b", "X", "x"}}},
		{"space in name", []ManagedAgent{stubAgent{"a b", "X", "x"}}},
		{"upper case", []ManagedAgent{stubAgent{"Claude", "X", "x"}}},
		{"no default command", []ManagedAgent{stubAgent{"x", "X", ""}}},
		{"duplicate", []ManagedAgent{stubAgent{"x", "X", "x"}, stubAgent{"x", "Y", "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewRegistry(tt.agents...); err == nil {
				t.Error("accepted")
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegistry did not panic on a bad entry")
		}
	}()
	MustRegistry(stubAgent{"", "", ""})
}
