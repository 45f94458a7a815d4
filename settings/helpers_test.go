package settings

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/storage"
)

// testReg is the registry as the composition root builds it, with one agent
// named like the real one so agents.claude.command exists.
var testReg = MustRegistry(Agent{Name: "claude", DisplayName: "Claude Code", DefaultCommand: "claude"})

// testStore is a real store in a temporary directory with its settings as
// testReg defines them.
type testStore struct {
	*storage.Store
	DB
}

// openTemp opens a store in a fresh temporary directory and closes it when
// the test ends.
func openTemp(t testing.TB) (*testStore, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() { st.Close() })
	return &testStore{Store: st, DB: testReg.On(st)}, dir
}
