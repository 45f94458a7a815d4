// Package storage keeps the app's durable state in one SQLite file
// (modernc.org/sqlite, no cgo): the sessions, the supervisor_events timeline
// and the settings, behind versioned migrations.
//
// Two promises shape the package. It never damages a database it does not
// understand: a file that is not SQLite, fails its check or was written by a
// newer build is refused before anything writes to it, and left byte for byte
// as it was. And what it reports as committed survives a crash: WAL mode, one
// transaction per logical change (a session's new state together with the
// timeline rows that explain it).
package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the database's name inside the data directory.
const FileName = "supervisor.db"

// fileMode is the database's mode (and its -wal and -shm files'): it holds
// the same private data as the directory.
const fileMode os.FileMode = 0o600

// busyTimeoutMS is how long a statement waits for another connection's lock
// before failing with SQLITE_BUSY. The CLI and the running app share the file;
// five seconds is far longer than any of our transactions holds the lock.
const busyTimeoutMS = 5000

// Sentinel errors; the returned errors wrap them with the file and the detail.
var (
	// ErrCorrupt: the file is not a SQLite database or fails its integrity
	// check. The file is left untouched.
	ErrCorrupt = errors.New("database file is corrupt")
	// ErrTooNew: the database was migrated by a newer build than this one.
	// The file is left untouched.
	ErrTooNew = errors.New("database schema is newer than this app supports")
	// ErrForeign: the file is a healthy SQLite database that some other
	// program created (it has tables but no schema_migrations). The file is
	// left untouched.
	ErrForeign = errors.New("database file was not created by Session Supervisor")
	// ErrNotFound: no row with that key.
	ErrNotFound = errors.New("not found")
)

// Store is the open database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating if needed) the database in dir, migrates it to the
// current schema and returns the store. dir is created with mode 0700 and the
// database file gets 0600, whatever the umask.
//
// An existing file is checked read-only first; if it is not a SQLite
// database or fails PRAGMA quick_check the error wraps ErrCorrupt, if it was
// migrated by a newer build it wraps ErrTooNew, and in both cases the file is
// not modified. Moving a bad file aside is the user's decision, not ours.
func Open(dir string) (*Store, error) {
	return openWith(context.Background(), dir, migrations)
}

// openWith is Open with the migration list passed in, so a test can build a
// database at an older schema version and then Open it.
func openWith(ctx context.Context, dir string, list []migration) (*Store, error) {
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)

	created, err := createIfMissing(path)
	if err != nil {
		return nil, err
	}
	if !created {
		if err := preflight(ctx, path, latestVersion(list)); err != nil {
			return nil, err
		}
	}
	// Tighten an existing file before SQLite opens it: SQLite creates the
	// -wal and -shm files with the database's mode, so they start private.
	if err := restrictFiles(path); err != nil {
		return nil, err
	}

	db, err := sql.Open("sqlite", fileURI(path, readWriteParams()))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := migrate(ctx, db, path, list); err != nil {
		db.Close()
		return nil, err
	}
	// Again now that the -wal and -shm exist: ones left by an older build
	// or a hand copy may predate the chmod above and be looser.
	if err := restrictFiles(path); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database. The last connection to close checkpoints the
// WAL into the main file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database %s: %w", s.path, err)
	}
	return nil
}

// Path is the database file's path.
func (s *Store) Path() string { return s.path }

// IntegrityCheck runs PRAGMA integrity_check and returns its report: "ok"
// for a healthy database, otherwise one problem per line.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	lines, err := pragmaLines(ctx, s.db, "PRAGMA integrity_check")
	if err != nil {
		return "", fmt.Errorf("integrity check of %s: %w", s.path, err)
	}
	return strings.Join(lines, "\n"), nil
}

// readWriteParams are the DSN parameters of the store's own connections.
// Every pooled connection runs them, which matters for the per-connection
// pragmas (busy_timeout, foreign_keys, synchronous).
//
// synchronous=NORMAL is the documented safe choice with WAL: a commit is
// durable across a process crash (the crash test kills the writer with
// SIGKILL), and only a power loss may roll back the last few commits, never
// corrupt the file. _txlock=immediate makes every transaction take the write
// lock at BEGIN, so two writers queue on busy_timeout instead of one failing
// with SQLITE_BUSY when it upgrades a read lock mid-transaction. Reads don't
// use transactions, so they stay concurrent.
func readWriteParams() url.Values {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return q
}

// fileURI builds a SQLite "file:" URI for path. A URI rather than a plain
// name because the path may hold characters ('?', '#', '%', spaces in
// "Application Support") that a plain name with query parameters would
// misread, and because only a URI honours SQLite's own mode and immutable
// parameters.
func fileURI(path string, q url.Values) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		// Windows: C:/x becomes /C:/x, which SQLite's URI parser accepts.
		p = "/" + p
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// createIfMissing creates an empty database file with mode 0600 if none
// exists and reports whether it did. SQLite treats an empty file as an empty
// database, and creating it ourselves fixes its mode before SQLite writes a
// byte. O_EXCL so two processes starting at once cannot both "create" it.
func createIfMissing(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("create database %s: %w", path, err)
	}
	return true, nil
}

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// headerLen is the size of the SQLite database header.
const headerLen = 100

// preflight checks an existing database file without writing to it: the
// header, then PRAGMA quick_check and the schema version over a read-only
// connection. Any failure leaves the file as it was.
func preflight(ctx context.Context, path string, supported int) error {
	before, err := observe(path)
	if err != nil {
		return err
	}
	err = checkOnce(ctx, path, supported)
	if errors.Is(err, ErrCorrupt) {
		// A check without locks (see checkOnce) can race another process
		// that opened the database after we looked for its WAL and
		// checkpointed into the main file while we read it. If anything
		// moved, look again (now with locks if a WAL appeared) before
		// calling a healthy file corrupt.
		if after, aerr := observe(path); aerr == nil && after != before {
			err = checkOnce(ctx, path, supported)
		}
	}
	return err
}

// fileState is what preflight compares to notice a concurrent writer.
type fileState struct {
	size    int64
	modTime time.Time
	wal     bool
}

func observe(path string) (fileState, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}, fmt.Errorf("stat database %s: %w", path, err)
	}
	return fileState{size: fi.Size(), modTime: fi.ModTime(), wal: exists(path + "-wal")}, nil
}

func checkOnce(ctx context.Context, path string, supported int) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("stat database %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("database %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() == 0 {
		// An empty file is an empty database (we create one that way; a
		// crash right after creating it leaves one behind).
		return nil
	}
	if err := checkHeader(path); err != nil {
		return err
	}

	// Open for the check with immutable=1 when no -wal or -journal file
	// exists: then the main file is the whole database, and immutable makes
	// SQLite read it without creating -wal/-shm files or taking locks, so
	// checking a bad file leaves nothing behind. With a -wal (the app is
	// running, or was killed) the committed data lives partly in the WAL, so
	// the check must read it: mode=ro does, and still never writes the
	// database file.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	if exists(path+"-wal") || exists(path+"-journal") {
		q.Set("mode", "ro")
	} else {
		q.Set("immutable", "1")
	}
	db, err := sql.Open("sqlite", fileURI(path, q))
	if err != nil {
		return fmt.Errorf("check database %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	lines, err := pragmaLines(ctx, db, "PRAGMA quick_check")
	if err != nil {
		if isCorruption(err) {
			return corruptError(path, "integrity check failed: "+err.Error())
		}
		return fmt.Errorf("check database %s: %w", path, err)
	}
	if len(lines) != 1 || lines[0] != "ok" {
		if len(lines) > 5 {
			lines = append(lines[:5], fmt.Sprintf("(and %d more)", len(lines)-5))
		}
		return corruptError(path, "integrity check failed: "+strings.Join(lines, "; "))
	}

	v, hasTable, err := readVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("check database %s: %w", path, err)
	}
	if v > supported {
		return tooNewError(path, v, supported)
	}
	if !hasTable {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
			return fmt.Errorf("check database %s: %w", path, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: %s has %d schema objects but no schema_migrations table; the file was left untouched (choose another data directory)", ErrForeign, path, n)
		}
	}
	return nil
}

// checkHeader validates the 100-byte header: the magic string, a legal page
// size, and, when no WAL could hold the rest, that the file is as long as the
// header says. SQLite reads a truncated file's missing pages as zeros, so
// its own check reports the damage only indirectly ("Fragmentation of 88
// bytes reported as 0 on page 57") or not at all when the lost pages were
// free; this names the cause.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read database header %s: %w", path, err)
	}
	defer f.Close()
	h := make([]byte, headerLen)
	n, err := io.ReadFull(f, h)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("read database header %s: %w", path, err)
	}
	h = h[:n]
	// The size is taken after the header is read, so a file that grew in
	// between is not mistaken for a truncated one; preflight re-checks if a
	// concurrent writer changed the file anyway.
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat database %s: %w", path, err)
	}
	size := fi.Size()
	if !bytes.HasPrefix(h, []byte(sqliteMagic)) {
		return corruptError(path, `not a SQLite database (the file does not start with "SQLite format 3")`)
	}
	if n < headerLen {
		return corruptError(path, fmt.Sprintf("truncated: the file is %d bytes, shorter than the %d-byte SQLite header", n, headerLen))
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return corruptError(path, fmt.Sprintf("invalid page size %d in the header", pageSize))
	}
	// The in-header page count is only valid when the change counter
	// matches the version-valid-for number (older writers did not maintain
	// it). A WAL may legitimately hold pages beyond the main file's end.
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	valid := binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if valid && pages > 0 && !exists(path+"-wal") && size < pages*pageSize {
		return corruptError(path, fmt.Sprintf("truncated: the header says %d pages of %d bytes (%d bytes) but the file has %d bytes", pages, pageSize, pages*pageSize, size))
	}
	return nil
}

func corruptError(path, why string) error {
	return fmt.Errorf("%w: %s: %s; the file was left untouched (move it aside to start with an empty database)", ErrCorrupt, path, why)
}

func tooNewError(path string, dbVersion, supported int) error {
	return fmt.Errorf("%w: %s is at schema version %d, this build supports up to version %d; upgrade Session Supervisor to open it (the file was left untouched)", ErrTooNew, path, dbVersion, supported)
}

// isCorruption reports whether err is SQLite saying the file is damaged or
// not a database. Other failures (locked, permission denied, disk full) are
// not evidence of corruption and are reported as they are.
func isCorruption(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// restrictFiles sets the database, -wal and -shm files to 0600 (unix).
func restrictFiles(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if fi.Mode().Perm() != fileMode {
			if err := os.Chmod(p, fileMode); err != nil {
				return fmt.Errorf("restrict %s to mode 0600: %w", p, err)
			}
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pragmaLines runs a pragma that returns one text column and collects it.
func pragmaLines(ctx context.Context, db *sql.DB, pragma string) ([]string, error) {
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// timeFormat is RFC 3339 with exactly nine fractional digits, always UTC.
// time.RFC3339Nano trims trailing zeros, which breaks the text ordering the
// queries rely on ("…:05Z" sorts after "…:05.5Z"); a fixed width keeps
// string order equal to time order, and time.Parse(time.RFC3339Nano) still
// reads it.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// execer is what *sql.DB and *sql.Tx share, so a write can run alone or
// inside a caller's transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// inTx runs fn in one transaction, committing if it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error from fn is the one worth reporting
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
