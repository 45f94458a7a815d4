package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
)

// now is the fixed clock of the fake probes.
var now = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

// fakeDB is a database whose answers the test sets.
type fakeDB struct {
	integrity    string
	integrityErr error
	version      int
	versionErr   error
	settings     map[string]string
	quarantined  []storage.Quarantined
	closed       bool
}

func (f *fakeDB) IntegrityCheck(context.Context) (string, error) { return f.integrity, f.integrityErr }
func (f *fakeDB) SchemaVersion(context.Context) (int, error)     { return f.version, f.versionErr }
func (f *fakeDB) UserSettings(context.Context) (map[string]string, error) {
	return f.settings, nil
}
func (f *fakeDB) Quarantined(context.Context) ([]storage.Quarantined, error) {
	return f.quarantined, nil
}
func (f *fakeDB) Close() error { f.closed = true; return nil }

// machine is a fake machine: a real private data directory holding a
// database file, and fakes for everything else, each of which a test may
// replace. Unexpected calls fail the test where they would mislead.
type machine struct {
	dir    string
	db     *fakeDB
	probes Probes
	opts   Options
}

func newMachine(t *testing.T) *machine {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "supervisor.db"), make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &machine{dir: dir, db: &fakeDB{integrity: "ok", version: 3}}
	m.probes = Probes{
		Stat:         os.Stat,
		LookPath:     func(f string) (string, error) { return "", &exec.Error{Name: f, Err: exec.ErrNotFound} },
		Version:      func(context.Context, string) (string, error) { return "", errors.New("unexpected --version") },
		OpenDatabase: func(string) (Database, error) { return m.db, nil },
		Health:       func(context.Context) (Health, error) { return Health{}, errors.New("no answer") },
		Lock:         func() (LockState, error) { return LockState{}, nil },
		Service: func(context.Context) (packaging.Status, error) {
			return packaging.Status{Kind: "systemd", UnitPath: "/u/ss.service", State: packaging.StateRunning, Current: true}, nil
		},
		Getenv: func(string) string { return "" },
		BusNames: func(context.Context, string) ([]string, []string, error) {
			return nil, nil, errors.New("unexpected bus query")
		},
		Now: func() time.Time { return now },
	}
	m.opts = Options{Version: "1.2.3", DataDir: dir, Socket: filepath.Join(dir, "supervisor.sock"), GOOS: "linux"}
	return m
}

func (m *machine) run() Report { return Run(context.Background(), m.probes, m.opts) }

// check runs doctor and returns the named check, failing if it is absent.
func (m *machine) check(t *testing.T, name string) Check {
	t.Helper()
	for _, ch := range m.run().Checks {
		if ch.Name == name {
			return ch
		}
	}
	t.Fatalf("no %q check", name)
	return Check{}
}

// fileInfo is a minimal fs.FileInfo for a Stat fake.
type fileInfo struct {
	mode fs.FileMode
	size int64
}

func (f fileInfo) Name() string       { return "x" }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return now }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }
