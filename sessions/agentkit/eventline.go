package agentkit

import (
	"io"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Frame is what every line-framed adapter's line info says of a line
// whatever its protocol: where it stands, how long it is and, when it
// produced nothing, why. An adapter's LineInfo embeds it and adds what its
// protocol says (a type, a method).
type Frame struct {
	// Number is the 1-based line number in the stream (0 from DecodeLine).
	Number int64
	// Size is the line's length in bytes without its line ending.
	Size int
	// Skip says why the line produced no events (SkipNone when decoded).
	Skip SkipReason
	// Detail is the reason in words for a skipped line.
	Detail string
}

func (f *Frame) frame() *Frame { return f }

// Framed is a pointer to an adapter's line info: a struct embedding Frame.
type Framed[I any] interface {
	*I
	frame() *Frame
}

// Oversize is the info of a line too long to keep: skipped, with its size
// and the skip's words (a LineDecoder's oversize line).
func Oversize[I any, P Framed[I]](raw RawLine, detail string) I {
	var info I
	*P(&info).frame() = Frame{Number: raw.Number, Size: raw.Size, Skip: SkipOversize, Detail: detail}
	return info
}

// Numbered sets the line number of an info its decode made (decode knows
// the bytes, not where they stood) and returns it with the line's tally.
func Numbered[I any, P Framed[I]](info I, raw RawLine, events []sessions.Event) (I, Tally) {
	f := P(&info).frame()
	f.Number = raw.Number
	return info, TallyOf(events, f.Skip)
}

// EventLine is one stdout line of an adapter whose lines are only events
// and their info: what it produced and what it was. A skipped line has no
// events and Info's Skip set.
type EventLine[I any] struct {
	Events []sessions.Event
	Info   I
}

// NewEventDecoder is the LineDecoder of such an adapter: its state decodes
// one line's bytes into events and their info (decode); the line numbers,
// the tallies and the oversize lines are the kit's. decode's error is not
// the stream's: a skipped line says why in its info.
func NewEventDecoder[S, I any, P Framed[I]](r io.Reader, maxLine, def int, agent string,
	decode func(st *S, line []byte) ([]sessions.Event, I, error)) *LineDecoder[S, EventLine[I]] {
	return NewLineDecoder(r, maxLine, def, agent,
		func(st *S, raw RawLine) (EventLine[I], Tally) {
			events, info, _ := decode(st, raw.Bytes)
			info, tally := Numbered[I, P](info, raw, events)
			return EventLine[I]{Events: events, Info: info}, tally
		},
		func(raw RawLine, detail string) EventLine[I] {
			return EventLine[I]{Info: Oversize[I, P](raw, detail)}
		})
}
