package observe

import (
	"slices"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Summary is what an agent reads its session's file into, line by line:
// the agent-specific part of following a file.
type Summary interface {
	// Reset forgets everything read: the file is read again from its start.
	Reset()
	// Feed reads one line.
	Feed(line []byte)
	// TurnCount is how many turns the lines read so far started.
	TurnCount() int
}

// Follower is one observer's hold on the file its session is written to:
// the tail, the summary T it feeds (through its pointer S) and what was
// sent. Its zero value follows nothing yet.
type Follower[T any, S interface {
	*T
	Summary
}] struct {
	// RereadIsPast: a file read again from its start after the first read
	// (the agent rewrote it with the same history) holds the past, not new
	// turns. Without it only the first read of a file that existed when
	// following began is the past; a later truncation brings new turns.
	RereadIsPast bool

	sum  T
	tail *Tailer
	emit Emitter
	// history: the file existed when following began, so the turns its
	// first read finds are not news; read: it has been read once.
	history, read bool
	grew          bool
}

// Follow starts tailing path (the first file found, or another one the
// session moved to); history says whether the turns it holds already are
// the past.
func (f *Follower[T, S]) Follow(path string, history bool) {
	f.tail, f.history, f.read = NewTailer(path), history, false
	S(&f.sum).Reset()
	f.emit.SetTurns(0)
}

// Following tells whether a file is followed.
func (f *Follower[T, S]) Following() bool { return f.tail != nil }

// Path is the followed file ("" before Follow).
func (f *Follower[T, S]) Path() string {
	if f.tail == nil {
		return ""
	}
	return f.tail.Path()
}

// Tail is the followed file's tailer (nil before Follow).
func (f *Follower[T, S]) Tail() *Tailer { return f.tail }

// Summary is what the lines read so far say.
func (f *Follower[T, S]) Summary() S { return &f.sum }

// Read feeds what was appended since the last read to the summary and
// returns how many lines came. A file read from its start again (first
// read, truncation, re-creation) resets the summary; when that read is
// the past, its turns are not counted as new (a turn still in flight is:
// Emitter).
func (f *Follower[T, S]) Read() (lines int) {
	f.grew = false
	if f.tail == nil {
		return 0
	}
	got, reset, _ := f.tail.Poll()
	sum := S(&f.sum)
	if reset {
		sum.Reset()
		f.emit.SetTurns(0)
	}
	past := reset && (f.history || f.RereadIsPast && f.read)
	if reset {
		f.read = true
		if !f.RereadIsPast {
			f.history = false
		}
	}
	for _, l := range got {
		sum.Feed(l)
	}
	if past {
		f.emit.SetTurns(sum.TurnCount())
	}
	f.grew = len(got) > 0
	return len(got)
}

// Next completes st and says whether to send it (Emitter.Next), counting
// the summary's turns and whether the last Read grew the file.
func (f *Follower[T, S]) Next(st sessions.ObservedState, gone bool) (sessions.ObservedState, bool) {
	return f.emit.Next(st, S(&f.sum).TurnCount(), f.grew, gone)
}

// Opened is open with v added (a call started, a request asked), the
// oldest dropped once it holds max: a summary's bound on what it keeps
// open.
func Opened[T any](open []T, max int, v T) []T {
	if len(open) >= max {
		open = open[1:]
	}
	return append(open, v)
}

// Closed is open without its first entry that closes (a call whose output
// came, a request answered), in a new array: a summary copied before (the
// evidence of an earlier look) keeps its entries.
func Closed[T any](open []T, closes func(T) bool) []T {
	i := slices.IndexFunc(open, closes)
	if i < 0 {
		return open
	}
	return append(open[:i:i], open[i+1:]...)
}
