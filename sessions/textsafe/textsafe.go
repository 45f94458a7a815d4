// Package textsafe makes text that came from an agent (a session name, a
// prompt's first line, a model reply quoted as evidence, a tool's error) safe
// to print on a terminal or show in a desktop notification: a reply can carry
// escape sequences that recolour, retitle or rewrite the user's terminal, or
// bidirectional overrides that make a line read differently than it is.
//
// What goes: ANSI escape sequences whole (CSI, OSC, DCS and the other string
// sequences, and two-byte escapes), C0 and C1 control characters other than
// tab and newline, DEL, and the Unicode bidirectional controls. Invalid UTF-8
// becomes U+FFFD. Everything else, including tabs and newlines that lay out
// the CLI's own tables, is kept.
package textsafe

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Clean returns s with escape sequences and control characters removed.
func Clean(s string) string {
	if isPlain(s) {
		return s
	}
	var f filter
	var b strings.Builder
	b.Grow(len(s))
	f.run([]byte(s), &b, true)
	return b.String()
}

// isPlain reports whether s has nothing to remove (printable ASCII, tabs and
// newlines): the common case costs one pass and no allocation.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c == 0x7f || c < 0x20 && c != '\t' && c != '\n' {
			return false
		}
	}
	return true
}

// Writer cleans what is written through it before it reaches w. It keeps
// its place inside an escape sequence or a UTF-8 character split across
// writes, so a sequence cut in two by a buffer boundary is still removed.
type Writer struct {
	w io.Writer
	f filter
}

// NewWriter returns a Writer that cleans text on its way to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write cleans p and writes the result; it reports len(p) on success, as
// the bytes it drops were consumed, not lost.
func (cw *Writer) Write(p []byte) (int, error) {
	var b strings.Builder
	b.Grow(len(p))
	cw.f.run(p, &b, false)
	if b.Len() > 0 {
		if _, err := io.WriteString(cw.w, b.String()); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// state is where the filter stands in the byte stream.
type state int

const (
	text     state = iota
	escape         // after ESC
	csi            // inside ESC [ … final byte
	str            // inside an OSC/DCS/SOS/PM/APC string, until BEL or ST
	strEsc         // ESC seen inside a string (ESC \ ends it)
	escInter       // after ESC and an intermediate byte (ESC ( B, …)
)

func (s state) String() string {
	switch s {
	case text:
		return "text"
	case escape:
		return "escape"
	case csi:
		return "csi"
	case str:
		return "string"
	case strEsc:
		return "string-escape"
	case escInter:
		return "escape-intermediate"
	}
	return "unknown"
}

// filter is the streaming state machine behind Clean and Writer.
type filter struct {
	st      state
	partial []byte // the start of a UTF-8 character cut by the end of a write
}

// run filters p into out; final says no more input follows (a cut
// character at the end is then invalid, not pending).
func (f *filter) run(p []byte, out *strings.Builder, final bool) {
	if len(f.partial) > 0 {
		p = append(f.partial, p...)
		f.partial = nil
	}
	for i := 0; i < len(p); {
		c := p[i]
		if c == '\n' && f.st != text {
			// A newline ends any sequence, unlike on a terminal: an
			// unterminated OSC in one session's evidence must not swallow
			// every line a `watch` prints after it.
			f.st = text
		}
		switch f.st {
		case escape:
			if c >= utf8.RuneSelf {
				f.st = text // not an escape: the character is read as text
				continue
			}
			i++
			switch {
			case c == '[':
				f.st = csi
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				f.st = str
			case c >= 0x20 && c <= 0x2f:
				f.st = escInter
			default:
				f.st = text // a two-byte escape (ESC 7, ESC c, …)
			}
			continue
		case escInter:
			i++
			if c < 0x20 || c > 0x2f {
				f.st = text
			}
			continue
		case csi:
			i++
			if c >= 0x40 && c <= 0x7e {
				f.st = text
			}
			continue
		case str:
			i++
			switch c {
			case 0x07:
				f.st = text
			case 0x1b:
				f.st = strEsc
			}
			continue
		case strEsc:
			i++
			if c == '\\' {
				f.st = text
			} else {
				f.st = str
			}
			continue
		}
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == 0x1b:
				f.st = escape
			case c == '\t' || c == '\n':
				out.WriteByte(c)
			case c < 0x20 || c == 0x7f:
				// dropped: a control character
			default:
				out.WriteByte(c)
			}
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			f.partial = append([]byte(nil), p[i:]...)
			return
		}
		r, size := utf8.DecodeRune(p[i:])
		i += size
		switch {
		case r == 0x9b: // the one-byte CSI
			f.st = csi
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // OSC, DCS, SOS, PM, APC
			f.st = str
		case r >= 0x80 && r <= 0x9f:
			// dropped: a C1 control character
		case isBidiControl(r):
			// dropped: it would reorder what the user reads
		default:
			out.WriteRune(r) // invalid UTF-8 decodes as U+FFFD
		}
	}
}

// isBidiControl reports the Unicode bidirectional formatting characters
// (embeddings, overrides, isolates and marks).
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}
