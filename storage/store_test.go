package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOpenConnectionPragmas(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	// Hold several connections at once so the check covers pooled
	// connections, not just the first one: the pragmas are per connection.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		for _, p := range []struct{ pragma, want string }{
			{"journal_mode", "wal"},
			{"busy_timeout", "5000"},
			{"foreign_keys", "1"},
			{"synchronous", "1"}, // NORMAL
		} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(&got); err != nil {
				t.Fatalf("conn %d: PRAGMA %s: %v", i, p.pragma, err)
			}
			if got != p.want {
				t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, p.pragma, got, p.want)
			}
		}
	}
}

func TestFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs unix file modes (Windows relies on the profile's ACLs)")
	}
	check := func(t *testing.T, path string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("stat %s: %v", path, err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %#o, want %#o", filepath.Base(path), got, want)
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // prepares dir before Open
	}{
		{name: "fresh directory", setup: func(t *testing.T, dir string) {}},
		{name: "loose directory and files from an earlier run", setup: func(t *testing.T, dir string) {
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for p, m := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, FileName): 0o644} {
				if err := os.Chmod(p, m); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "empty 0666 database file", setup: func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, FileName)
			if err := os.WriteFile(p, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o666); err != nil { // WriteFile is subject to umask
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nested", "data")
			tt.setup(t, dir)
			s, err := Open(dir)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			// Write so the WAL and its index certainly exist.
			if _, err := s.AppendEvent(context.Background(), TimelineEvent{SessionID: "s", Time: base, Kind: "k"}); err != nil {
				t.Fatal(err)
			}
			check(t, dir, 0o700)
			db := filepath.Join(dir, FileName)
			check(t, db, 0o600)
			check(t, db+"-wal", 0o600)
			check(t, db+"-shm", 0o600)
		})
	}
}

// TestOpenPathNeedsEscaping opens a directory whose name would break a
// naively built DSN or URI.
func TestOpenPathNeedsEscaping(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "Application Support?x=1#frag%20")
	ctx := context.Background()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	if err := s.WriteSettings(ctx, map[string]*string{"supervisor.tick_seconds": ptr("20")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, parent); !slices.Equal(got, []string{filepath.Base(dir)}) {
		t.Errorf("parent holds %q, want only the data directory", got)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{FileName}) {
		t.Errorf("data directory holds %q after Close, want only %s", got, FileName)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if v, err := storedSetting(ctx, s, "supervisor.tick_seconds"); err != nil || v != "20" {
		t.Errorf("after reopen tick = %q, %v; want 20", v, err)
	}
}

// makeFilledDB builds a real, healthy, closed database with enough rows to
// span many pages and returns its path.
func makeFilledDB(t *testing.T, dir string) string {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess := fullSession("filled", base)
	events := make([]TimelineEvent, 0, 400)
	for i := range 400 {
		events = append(events, TimelineEvent{
			Time: base.Add(time.Duration(i) * time.Second), Kind: "observation", TurnGeneration: int64(i),
			Detail: []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 200))),
		})
	}
	if err := s.SaveSessionWithEvents(ctx, sess, events); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName)
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) // leaves a bad supervisor.db in dir
		why     string                         // expected in the message
	}{
		{name: "random bytes", why: "not a SQLite database", prepare: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, FileName), randomBytes(8192))
		}},
		{name: "text file", why: "not a SQLite database", prepare: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, FileName), []byte("hello, this is not a database\n"))
		}},
		{name: "header only, cut short", why: "truncated", prepare: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, FileName), append([]byte(sqliteMagic), randomBytes(40)...))
		}},
		{name: "magic followed by garbage", why: "page size", prepare: func(t *testing.T, dir string) {
			b := append([]byte(sqliteMagic), randomBytes(4096-len(sqliteMagic))...)
			b[16], b[17] = 0x12, 0x34 // not a power of two
			writeFile(t, filepath.Join(dir, FileName), b)
		}},
		{name: "real database truncated to half", why: "truncated", prepare: func(t *testing.T, dir string) {
			p := makeFilledDB(t, dir)
			truncateTo(t, p, func(size int64) int64 { return size / 2 })
		}},
		{name: "real database missing its last bytes", why: "truncated", prepare: func(t *testing.T, dir string) {
			p := makeFilledDB(t, dir)
			truncateTo(t, p, func(size int64) int64 { return size - 100 })
		}},
		{name: "real database with a garbage page", why: "integrity check failed: ", prepare: func(t *testing.T, dir string) {
			// Same length and a valid header, so only SQLite's own
			// check can tell: overwrite a page in the middle of the data.
			// What SQLite says depends on which page that is (a table's,
			// an index's), so only its check failing is required.
			p := makeFilledDB(t, dir)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			page := 4096
			mid := (len(b) / page / 2) * page
			copy(b[mid:mid+page], randomBytes(page))
			writeFile(t, p, b)
		}},
		{name: "real database with a wrong freelist count", why: "integrity check failed: *** in database main ***", prepare: func(t *testing.T, dir string) {
			// The structure is intact, so SQLite opens it and only
			// quick_check's report (rows, not an error) shows the damage.
			p := makeFilledDB(t, dir)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[36], b[37], b[38], b[39] = 0, 0, 0, 5 // total freelist pages
			writeFile(t, p, b)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prepare(t, dir)
			path := filepath.Join(dir, FileName)
			before, names := fileHash(t, path), dirNames(t, dir)

			s, err := Open(dir)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a corrupt file")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open error %q does not wrap ErrCorrupt", err)
			}
			for _, want := range []string{path, tt.why, "left untouched"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if after := fileHash(t, path); after != before {
				t.Error("Open modified the corrupt file")
			}
			if got := dirNames(t, dir); !slices.Equal(got, names) {
				t.Errorf("Open left files behind: before %q, after %q", names, got)
			}
		})
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(body TEXT); INSERT INTO notes VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, path)
	s, err := Open(dir)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on another program's database")
	}
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open error = %q, want ErrForeign naming %s", err, path)
	}
	if fileHash(t, path) != before {
		t.Error("Open modified the foreign database")
	}
}

// TestTwoStoresWriteConcurrently is the CLI and the running app sharing the
// file: concurrent writers must queue on the lock, not fail with
// SQLITE_BUSY, and every write must land.
func TestTwoStoresWriteConcurrently(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		st := []*Store{a, b}[w%2]
		wg.Go(func() {
			for i := range perWriter {
				sess := fullSession(fmt.Sprintf("w%d", w), base.Add(time.Duration(i)))
				sess.TurnGeneration = int64(i)
				// Read-then-write inside one call, the pattern that fails
				// with SQLITE_BUSY under deferred transactions.
				if _, err := storedSetting(ctx, st, "supervisor.tick_seconds"); err != nil {
					errs <- err
				}
				if err := st.SaveSessionWithEvents(ctx, sess, []TimelineEvent{
					{Time: base, Kind: "k", TurnGeneration: int64(i)},
				}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := a.Timeline(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*perWriter {
		t.Errorf("timeline has %d events, want %d", len(all), writers*perWriter)
	}
}

func TestIntegrityCheckHealthy(t *testing.T) {
	s, _ := openTemp(t)
	got, err := s.IntegrityCheck(context.Background())
	if err != nil || got != "ok" {
		t.Fatalf("IntegrityCheck = %q, %v; want ok", got, err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncateTo(t *testing.T, path string, size func(int64) int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size(fi.Size())); err != nil {
		t.Fatal(err)
	}
}
