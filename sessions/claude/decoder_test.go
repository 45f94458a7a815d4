package claude

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

const initLine = `{"type":"system","subtype":"init","session_id":"abc"}`

func TestDecoderBlankMalformedUnknown(t *testing.T) {
	stream := "\n\n   \n" +
		initLine + "\r\n" + // CRLF line ending
		"garbage\n" +
		"\t\n" +
		`{"type":"mystery"}` + "\n" +
		`{"type":"system","subtype":"mystery"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false}` + "\n\n"
	d := NewDecoder(strings.NewReader(stream), 0)
	var got []string
	var numbers []int64
	for _, l := range agenttest.Drain(t, d) {
		got = append(got, lineSummary(l))
		numbers = append(numbers, l.Info.Number)
		if l.Info.Skip != agentkit.SkipNone && l.Info.Detail == "" {
			t.Errorf("skipped line %d has no detail", l.Info.Number)
		}
	}
	want := []string{"session_init abc", "skip:malformed", "skip:unknown", "skip:unknown", "turn_completed"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if !slices.Equal(numbers, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("line numbers %v: blank lines must not count", numbers)
	}
	if st := d.Stats(); st != (Counters{Lines: 5, Events: 2, Malformed: 1, Unknown: 2}) || st.Skipped() != 3 {
		t.Errorf("stats = %+v", st)
	}
	// The end is sticky.
	for range 2 {
		if _, err := d.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the end: %v", err)
		}
	}
}

func TestDecoderLastLineWithoutNewline(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"complete object", initLine + "\n" + `{"type":"result","subtype":"success","is_error":false}`, []string{"session_init abc", "turn_completed"}},
		{"cut mid-object", initLine + "\n" + `{"type":"result","subtype":"succ`, []string{"session_init abc", "skip:malformed"}},
		{"only a carriage return", initLine + "\r", []string{"session_init abc"}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader makes every line cross many reads.
			for _, r := range []io.Reader{strings.NewReader(tt.stream), iotest.OneByteReader(strings.NewReader(tt.stream))} {
				_, got, _ := decodeAll(t, r, 0)
				if !slices.Equal(got, tt.want) {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestDecoderLineLimit(t *testing.T) {
	const limit = 64
	pad := func(n int) string { // a valid keep_alive line of exactly n bytes
		base := `{"type":"keep_alive"}`
		return base[:len(base)-1] + strings.Repeat(" ", n-len(base)) + "}"
	}
	stream := pad(limit) + "\n" + // at the limit: kept
		pad(limit) + "\r\n" + // the '\r' does not count
		pad(limit+1) + "\n" + // one over: skipped
		strings.Repeat("x", 10*limit) + "\n" + // far over, spans reads
		initLine + "\n" +
		strings.Repeat("y", 3*limit) // oversize at EOF without newline
	for _, r := range []io.Reader{strings.NewReader(stream), iotest.HalfReader(strings.NewReader(stream))} {
		d := NewDecoder(r, limit)
		var got []string
		var sizes []int
		for _, l := range agenttest.Drain(t, d) {
			got = append(got, lineSummary(l))
			sizes = append(sizes, l.Info.Size)
		}
		want := []string{"none", "none", "skip:oversize", "skip:oversize", "session_init abc", "skip:oversize"}
		if !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if !slices.Equal(sizes, []int{limit, limit, limit + 1, 10 * limit, len(initLine), 3 * limit}) {
			t.Errorf("sizes = %v", sizes)
		}
		if st := d.Stats(); st.Oversize != 3 || st.Lines != 6 {
			t.Errorf("stats = %+v", st)
		}
	}
}

// repeatReader yields n copies of one byte without holding them in memory.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	return int(k), nil
}

// TestDecoderHugeLine streams a 50 MB tool_result line through a 1 MB limit:
// it is skipped, the lines after it still decode, and the decoder's
// allocations stay a small fraction of the line.
func TestDecoderHugeLine(t *testing.T) {
	const huge = 50 << 20
	stream := func() io.Reader {
		return io.MultiReader(
			strings.NewReader(initLine+"\n"),
			strings.NewReader(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"`),
			&repeatReader{b: 'a', n: huge},
			strings.NewReader(`"}]}}`+"\n"),
			strings.NewReader(`{"type":"result","subtype":"success","is_error":false}`+"\n"),
		)
	}
	r := stream()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := NewDecoder(r, 1<<20)
	var got []string
	for _, l := range agenttest.Drain(t, d) {
		got = append(got, lineSummary(l))
	}
	runtime.ReadMemStats(&after)
	if want := []string{"session_init abc", "skip:oversize", "turn_completed"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("decoding allocated %d MB for a %d MB line; the line must not be buffered", alloc>>20, huge>>20)
	} else {
		t.Logf("allocated %d KB while skipping a %d MB line", alloc>>10, huge>>20)
	}
	if st := d.Stats(); st.Oversize != 1 || st.Lines != 3 || st.Events != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	d := NewDecoder(io.MultiReader(strings.NewReader(initLine+"\n"+`{"type":"res`), iotest.ErrReader(boom)), 0)
	if l, err := d.Next(); err != nil || len(l.Events) != 1 {
		t.Fatalf("first line: %+v %v", l, err)
	}
	for range 2 { // sticky
		_, err := d.Next()
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read line 2") {
			t.Fatalf("err = %v, want boom wrapped with the line number", err)
		}
	}
}

// TestDecoderConcurrentAccess reads a stream while other goroutines poll
// Stats and PendingInput, as the supervisor and the UI do. Run with -race.
func TestDecoderConcurrentAccess(t *testing.T) {
	pr, pw := io.Pipe()
	d := NewDecoder(pr, 0)
	const n = 200
	go func() {
		for i := range n {
			fmt.Fprintf(pw, `{"type":"control_request","request_id":"req_%d","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"i":%d}}}`+"\n", i, i)
		}
		pw.Close()
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = d.Stats()
					_ = d.PendingInput("req_7")
					runtime.Gosched()
				}
			}
		})
	}
	lines := len(agenttest.Drain(t, d))
	close(stop)
	wg.Wait()
	if lines != n || d.Stats().Events != n {
		t.Errorf("lines %d stats %+v", lines, d.Stats())
	}
	if got := string(d.PendingInput("req_7")); got != `{"i":7}` {
		t.Errorf("PendingInput = %q", got)
	}
}

func TestDecoderBoundsTracking(t *testing.T) {
	var b strings.Builder
	for i := range 3 * maxTracked {
		fmt.Fprintf(&b, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t%d","name":"Bash"}]}}`+"\n", i)
		fmt.Fprintf(&b, `{"type":"control_request","request_id":"r%d","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{}}}`+"\n", i)
	}
	d := NewDecoder(strings.NewReader(b.String()), 0)
	for {
		if _, err := d.Next(); err != nil {
			break
		}
	}
	st := d.Lock()
	defer d.Unlock()
	if len(st.tools) > maxTracked || len(st.pending) > maxTracked {
		t.Errorf("tracking grew past its bound: %d tools, %d pending", len(st.tools), len(st.pending))
	}
}
