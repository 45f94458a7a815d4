package observe

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Tailing limits. A transcript can grow to gigabytes and /compact writes
// single lines of several megabytes: the tailer never reads a file whole,
// starts at most startWindow from its end, and skips (by measured length,
// without buffering it) any line longer than MaxLine.
const (
	startWindow = 2 * MaxLine
	MaxLine     = 1 << 20
	readChunk   = 256 << 10
)

// Tailer reads the complete lines appended to one file since its last call.
// It survives the file being truncated (it starts again from the top),
// replaced by another file under the same name (rotation: the new file is
// read from its start, or from its tail window when it is already large),
// a partial last line (kept until its newline arrives) and huge lines
// (skipped, and counted).
type Tailer struct {
	path    string
	fi      os.FileInfo
	offset  int64
	partial []byte
	// skipping: inside a line longer than MaxLine, discarding to its end.
	skipping bool
	// Skipped counts lines dropped for their size.
	Skipped int
	// BytesRead counts every byte read, for tests and benchmarks.
	BytesRead int64
	// FromStart reads a large file from its first byte too, never from
	// its tail window (a reader that must see every line, such as one
	// counting a session's usage).
	FromStart bool
}

// NewTailer returns a tailer for path; nothing is read until Poll.
func NewTailer(path string) *Tailer { return &Tailer{path: path} }

// Path is the file the tailer follows.
func (t *Tailer) Path() string { return t.path }

// Poll returns the complete lines appended since the last call. reset is
// true when the file was truncated, replaced or read for the first time:
// whatever was inferred from earlier lines no longer holds. A missing file
// is no error: it yields nothing until it appears.
func (t *Tailer) Poll() (lines [][]byte, reset bool, err error) {
	fh, err := os.Open(t.path)
	if err != nil {
		if os.IsNotExist(err) {
			if t.fi != nil {
				t.restart(nil)
				return nil, true, nil
			}
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("opening transcript: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading transcript size: %w", err)
	}
	switch {
	case t.fi == nil || !os.SameFile(t.fi, fi):
		// First read, or another file under the same name.
		t.restart(fi)
		reset = true
		if size := fi.Size(); size > startWindow && !t.FromStart {
			t.offset = size - startWindow
			// The window starts inside a line: drop up to the first newline.
			t.skipping = true
		}
	case fi.Size() < t.offset:
		// Truncated in place: start over from the top.
		t.restart(fi)
		reset = true
	}
	t.fi = fi
	if fi.Size() == t.offset {
		return nil, reset, nil
	}
	if _, err := fh.Seek(t.offset, io.SeekStart); err != nil {
		return nil, reset, fmt.Errorf("seeking the transcript: %w", err)
	}
	buf := make([]byte, readChunk)
	for {
		n, rerr := fh.Read(buf)
		if n > 0 {
			t.offset += int64(n)
			t.BytesRead += int64(n)
			lines = t.split(buf[:n], lines)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return lines, reset, fmt.Errorf("reading the transcript: %w", rerr)
		}
	}
	return lines, reset, nil
}

func (t *Tailer) restart(fi os.FileInfo) {
	t.fi, t.offset, t.partial, t.skipping = fi, 0, nil, false
}

// split appends the complete lines of chunk (with the partial line carried
// over) to lines; a line growing past MaxLine is dropped.
func (t *Tailer) split(chunk []byte, lines [][]byte) [][]byte {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if t.skipping {
			if i < 0 {
				return lines
			}
			t.skipping = false
			chunk = chunk[i+1:]
			continue
		}
		if i < 0 {
			if len(t.partial)+len(chunk) > MaxLine {
				t.partial, t.skipping = nil, true
				t.Skipped++
				return lines
			}
			t.partial = append(t.partial, chunk...)
			return lines
		}
		line := chunk[:i]
		chunk = chunk[i+1:]
		if len(t.partial)+len(line) > MaxLine {
			t.partial = nil
			t.Skipped++
			continue
		}
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		} else {
			line = bytes.Clone(line)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}
