package packaging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Log file rotation: at most LogMaxBytes per file and LogKeep old files,
// so a service that runs for months keeps about 20 MB of recent history.
const (
	LogMaxBytes = 5 << 20
	LogKeep     = 3
)

// LogPath is the log file of a service-started `run` (launchd, Windows).
func LogPath(dataDir string) string {
	return filepath.Join(dataDir, "logs", Name+".log")
}

// NewLogger returns the logger for a `run` started as launch: stderr in a
// terminal, the journal's format under systemd, a rotating file in the data
// directory under launchd and the Windows service manager. The closer
// closes the file (a no-op for stderr).
func NewLogger(launch Launch, dataDir string, stderr io.Writer, level slog.Leveler) (*slog.Logger, io.Closer, error) {
	switch launch {
	case LaunchSystemd:
		return slog.New(NewJournalHandler(stderr, level)), nopCloser{}, nil
	case LaunchLaunchd, LaunchWindowsService:
		f, err := OpenRotatingFile(LogPath(dataDir), LogMaxBytes, LogKeep)
		if err != nil {
			return nil, nil, err
		}
		return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level})), f, nil
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nopCloser{}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// NewJournalHandler logs one line per record for the journal: a "<N>"
// syslog priority prefix (systemd reads it from a service's stderr, so
// `journalctl -p warning` works) and no timestamp (the journal adds its own).
func NewJournalHandler(w io.Writer, level slog.Leveler) slog.Handler {
	pw := &prefixWriter{w: w}
	inner := slog.NewTextHandler(pw, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return &journalHandler{mu: &sync.Mutex{}, w: pw, inner: inner}
}

// journalHandler sets the priority prefix for each record, then lets the
// text handler write the line. The mutex is shared by every handler derived
// with WithAttrs/WithGroup, since they share the writer.
type journalHandler struct {
	mu    *sync.Mutex
	w     *prefixWriter
	inner slog.Handler
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.w.prefix = syslogPrefix(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &journalHandler{mu: h.mu, w: h.w, inner: h.inner.WithAttrs(as)}
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return &journalHandler{mu: h.mu, w: h.w, inner: h.inner.WithGroup(name)}
}

// syslogPrefix maps a level to sd-daemon(3)'s priority prefix.
func syslogPrefix(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	}
	return "<7>"
}

// prefixWriter writes prefix and the line in one Write, so the journal
// never sees a prefix on a line of its own.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	buf := make([]byte, 0, len(p.prefix)+len(b))
	buf = append(append(buf, p.prefix...), b...)
	if _, err := p.w.Write(buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// RotatingFile is an append-only log file that moves itself aside when it
// would grow past max bytes: path → path.1 → … → path.keep, the oldest
// dropped. Safe for concurrent use.
type RotatingFile struct {
	path string
	max  int64
	keep int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// OpenRotatingFile opens (creating, with its directory) the log at path.
// The directory is 0700 and the files 0600: logs name sessions, working
// directories and failure messages, like the database beside them.
func OpenRotatingFile(path string, maxBytes int64, keep int) (*RotatingFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the log directory %s: %w", filepath.Dir(path), err)
	}
	r := &RotatingFile{path: path, max: maxBytes, keep: keep}
	if err := r.open(os.O_APPEND); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open(flag int) error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log file %s: %w", r.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening the log file %s: %w", r.path, err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past its limit.
// A single write larger than the limit still goes in whole: a log line is
// never split across files.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// rotate closes the file before renaming it: Windows cannot rename an open
// file.
func (r *RotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("rotating %s: %w", r.path, err)
	}
	r.f = nil
	name := func(i int) string { return r.path + "." + strconv.Itoa(i) }
	if r.keep > 0 {
		_ = os.Remove(name(r.keep))
		for i := r.keep - 1; i >= 1; i-- {
			_ = os.Rename(name(i), name(i+1))
		}
		if err := os.Rename(r.path, name(1)); err != nil {
			return fmt.Errorf("rotating %s: %w", r.path, err)
		}
	}
	return r.open(os.O_TRUNC)
}

// Close closes the file.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
