package sessions

import (
	"fmt"
	"strings"
)

// Registry is the ordered list of agents the app knows. The composition
// root builds it with one entry per agent package; the supervisor launches
// through it, the settings registry derives agents.NAME.command from it, and
// the New session dialog and doctor list it. Order is display order; the
// first agent is the default choice.
type Registry struct {
	agents []ManagedAgent
}

// NewRegistry validates and records agents: each needs a non-empty name
// without dots, spaces or upper case (it becomes part of a settings key and
// is stored with every session) and a default command, and names are
// unique.
func NewRegistry(agents ...ManagedAgent) (*Registry, error) {
	seen := map[string]bool{}
	for _, a := range agents {
		n := a.Name()
		if n == "" || n != strings.ToLower(n) || strings.ContainsAny(n, ". \t\n/") {
			return nil, fmt.Errorf("agent registry: invalid agent name %q", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("agent registry: agent %q registered twice", n)
		}
		if a.DefaultCommand() == "" {
			return nil, fmt.Errorf("agent registry: agent %q has no default command", n)
		}
		seen[n] = true
	}
	return &Registry{agents: append([]ManagedAgent(nil), agents...)}, nil
}

// MustRegistry is NewRegistry for the composition root's fixed list, where
// an invalid entry is a programming error.
func MustRegistry(agents ...ManagedAgent) *Registry {
	r, err := NewRegistry(agents...)
	if err != nil {
		panic(err)
	}
	return r
}

// Lookup returns the agent called name.
func (r *Registry) Lookup(name string) (ManagedAgent, bool) {
	for _, a := range r.agents {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// All returns the agents in display order. The slice is the caller's.
func (r *Registry) All() []ManagedAgent { return append([]ManagedAgent(nil), r.agents...) }

// Names returns the agents' names in display order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.agents))
	for i, a := range r.agents {
		out[i] = a.Name()
	}
	return out
}
