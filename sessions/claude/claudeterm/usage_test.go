package claudeterm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
)

// asst is an assistant line as 2.1.197 writes it, with one content block.
func asst(id, req, model string, t sessions.Tokens, block string) string {
	return fmt.Sprintf(`{"parentUuid":"p","isSidechain":false,"message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[%s],"stop_reason":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}},"requestId":%q,"type":"assistant","uuid":"u","timestamp":"2026-11-29T18:04:19.144Z"}`,
		id, model, block, t.Input, t.CacheWrite, t.CacheRead, t.Output, req)
}

const textBlock = `{"type":"text","text":"ok"}`

func tok(in, out, cw, cr int64) sessions.Tokens {
	return sessions.Tokens{Input: in, Output: out, CacheWrite: cw, CacheRead: cr}
}

// TestUsageTallyCountsEachMessageOnce: a streamed message's lines count
// once, with the most each class reached, whatever their order; another
// request or message counts apart; a line without an id counts as it is.
func TestUsageTallyCountsEachMessageOnce(t *testing.T) {
	const m = "claude-sonnet-4-5-20250929"
	for _, tc := range []struct {
		name     string
		lines    []string
		want     sessions.Usage
		messages int
	}{
		{"identical repeats", []string{asst("m1", "r1", m, tok(3, 50, 100, 900), textBlock), asst("m1", "r1", m, tok(3, 50, 100, 900), textBlock)},
			sessions.Usage{m: tok(3, 50, 100, 900)}, 1},
		{"output growing", []string{asst("m1", "r1", m, tok(3, 2, 100, 900), textBlock), asst("m1", "r1", m, tok(3, 9, 100, 900), textBlock), asst("m1", "r1", m, tok(3, 160, 100, 900), textBlock)},
			sessions.Usage{m: tok(3, 160, 100, 900)}, 1},
		{"final line first", []string{asst("m1", "r1", m, tok(3, 160, 100, 900), textBlock), asst("m1", "r1", m, tok(3, 2, 100, 900), textBlock)},
			sessions.Usage{m: tok(3, 160, 100, 900)}, 1},
		{"two messages", []string{asst("m1", "r1", m, tok(1, 2, 3, 4), textBlock), asst("m2", "r2", m, tok(10, 20, 30, 40), textBlock)},
			sessions.Usage{m: tok(11, 22, 33, 44)}, 2},
		{"same message id, another request", []string{asst("m1", "r1", m, tok(1, 2, 3, 4), textBlock), asst("m1", "r2", m, tok(1, 2, 3, 4), textBlock)},
			sessions.Usage{m: tok(2, 4, 6, 8)}, 2},
		{"no request id: by message id", []string{asst("m1", "", m, tok(1, 2, 3, 4), textBlock), asst("m1", "", m, tok(1, 5, 3, 4), textBlock)},
			sessions.Usage{m: tok(1, 5, 3, 4)}, 1},
		{"no message id: each line", []string{asst("", "", m, tok(1, 2, 3, 4), textBlock), asst("", "", m, tok(1, 2, 3, 4), textBlock)},
			sessions.Usage{m: tok(2, 4, 6, 8)}, 2},
		{"two models", []string{asst("m1", "r1", m, tok(1, 2, 3, 4), textBlock), asst("m2", "r2", "claude-opus-4-8", tok(5, 6, 7, 8), textBlock)},
			sessions.Usage{m: tok(1, 2, 3, 4), "claude-opus-4-8": tok(5, 6, 7, 8)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := readLines(t, tc.lines...)
			if !usageEqual(r.Tally.Usage, tc.want) || r.Tally.Messages != tc.messages {
				t.Errorf("usage %v in %d messages, want %v in %d", r.Tally.Usage, r.Tally.Messages, tc.want, tc.messages)
			}
		})
	}
}

func usageEqual(a, b sessions.Usage) bool {
	if len(a) != len(b) {
		return false
	}
	for m, t := range a {
		if b[m] != t {
			return false
		}
	}
	return true
}

func readLines(t *testing.T, lines ...string) *UsageReader {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewUsageReader(p)
	if _, err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestParseUsageLineReadsOnlyTheMessagesOwnUsage: the line is walked by
// its structure, so a usage, model or id key inside a tool's input or a
// tool result, escaped quotes and another key order change nothing; lines
// that are not an assistant message with usage are not counted.
func TestParseUsageLineReadsOnlyTheMessagesOwnUsage(t *testing.T) {
	const m = "claude-opus-4-8"
	want := tok(7, 8, 9, 10)
	for _, tc := range []struct {
		name string
		line string
		ok   bool
	}{
		{"plain", asst("m1", "r1", m, want, textBlock), true},
		{"keys inside a tool input", asst("m1", "r1", m, want, `{"type":"tool_use","id":"t1","name":"X","input":{"id":"x","model":"gpt","usage":{"input_tokens":999}}}`), true},
		{"escaped quotes", asst("m1", "r1", m, want, `{"type":"text","text":"say \"usage\":{\"input_tokens\":5} \\\\"}`), true},
		{"model before id", `{"message":{"model":"claude-opus-4-8","id":"m1","role":"assistant","content":[],"usage":{"input_tokens":7,"output_tokens":8,"cache_creation_input_tokens":9,"cache_read_input_tokens":10}},"requestId":"r1","type":"assistant"}`, true},
		{"a user line with a subagent's usage", `{"type":"user","message":{"role":"user","content":"x"},"toolUseResult":{"usage":{"input_tokens":5}},"x":{"type":"assistant"}}`, false},
		{"no usage", `{"type":"assistant","message":{"id":"m1","model":"m","content":[]},"requestId":"r1"}`, false},
		{"cut short", asst("m1", "r1", m, want, textBlock)[:200], false},
		{"negative count", strings.Replace(asst("m1", "r1", m, want, textBlock), `"input_tokens":7`, `"input_tokens":-7`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, _ := parseUsageLine([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && (string(u.msgID) != "m1" || string(u.reqID) != "r1" || string(u.model) != m || u.tokens != want) {
				t.Errorf("read %q %q %q %+v", u.msgID, u.reqID, u.model, u.tokens)
			}
		})
	}
}

// TestUsageReaderLinesAtTheEdges: a last line the CLI is still writing is
// counted once, when its newline arrives; a line over the buffer (a tool
// call that wrote a whole file) is read by its edges and counted; a huge
// tool result is skipped without being held.
func TestUsageReaderLinesAtTheEdges(t *testing.T) {
	const m = "claude-sonnet-4-5"
	p := filepath.Join(t.TempDir(), "t.jsonl")
	first := asst("m1", "r1", m, tok(1, 2, 3, 4), textBlock)
	second := asst("m2", "r2", m, tok(10, 20, 30, 40), textBlock)
	os.WriteFile(p, []byte(first+"\n"+second[:100]), 0o600)
	r := NewUsageReader(p)
	r.Poll()
	if got := r.Tally.Usage[m]; got != tok(1, 2, 3, 4) {
		t.Fatalf("with the second line cut: %+v", got)
	}
	appendFile(t, p, second[100:]+"\n")
	r.Poll()
	r.Poll()
	if got := r.Tally.Usage[m]; got != tok(11, 22, 33, 44) {
		t.Fatalf("once the second line ended: %+v", got)
	}

	// Read through the buffer (as appended lines are) and from the file
	// (a first read, mapped where the platform can): the same count.
	bigWrite := `{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/x","content":"` + strings.Repeat(`line of a file \"quoted\"\n`, (3<<20)/24) + `"}}`
	bigResult := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"` + strings.Repeat("x", 5<<20) + `"}]},"usage":{"a":1}}`
	big := asst("m3", "r3", m, tok(100, 200, 300, 400), bigWrite) + "\n" + bigResult + "\n" + asst("m4", "r4", m, tok(1000, 0, 0, 0), textBlock) + "\n"
	want := tok(1100, 200, 300, 400)
	buffered := &UsageReader{}
	if err := buffered.read(strings.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if got := buffered.Tally.Usage[m]; got != want || buffered.Huge != 2 || buffered.Malformed != 0 {
		t.Errorf("buffered: %+v (want %+v), %d read by their edges, %d malformed", got, want, buffered.Huge, buffered.Malformed)
	}
	if c := cap(buffered.carry); c > 2*usageLineMax {
		t.Errorf("held %d bytes for a line", c)
	}
	appendFile(t, p, big)
	r.Poll()
	if got := r.Tally.Usage[m]; got != want.Add(tok(11, 22, 33, 44)) || r.Malformed != 0 {
		t.Errorf("from the file: %+v (want %+v), %d malformed", got, want.Add(tok(11, 22, 33, 44)), r.Malformed)
	}
	fresh := NewUsageReader(p)
	fresh.Poll()
	if got := fresh.Tally.Usage[m]; got != want.Add(tok(11, 22, 33, 44)) {
		t.Errorf("the whole file at once: %+v", got)
	}
}

// TestUsageReaderStartsOverOnTruncation: a transcript replaced by a
// shorter one is counted afresh, not added to what the old one held.
func TestUsageReaderStartsOverOnTruncation(t *testing.T) {
	const m = "claude-sonnet-4-5"
	p := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(p, []byte(asst("m1", "r1", m, tok(1, 2, 3, 4), textBlock)+"\n"+asst("m2", "r2", m, tok(1, 2, 3, 4), textBlock)+"\n"), 0o600)
	r := NewUsageReader(p)
	r.Poll()
	os.WriteFile(p, []byte(asst("m9", "r9", m, tok(5, 5, 5, 5), textBlock)+"\n"), 0o600)
	reset, _ := r.Poll()
	if got := r.Tally.Usage[m]; !reset || got != tok(5, 5, 5, 5) {
		t.Errorf("reset %v, usage %+v", reset, got)
	}
}

// TestScanUsageMatchesTheGenerator: a generated directory scanned on two
// workers counts every message once with its final counts.
func TestScanUsageMatchesTheGenerator(t *testing.T) {
	dir := t.TempDir()
	truth, err := generateTranscripts(dir, 30, 6<<20, 7)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := TranscriptFiles(dir)
	if err != nil || len(paths) != 30 {
		t.Fatalf("%d transcripts, %v", len(paths), err)
	}
	tally, st := ScanUsage(paths, 2)
	if st.Failed != 0 || st.Malformed != 0 || st.Bytes != truth.Bytes {
		t.Errorf("scan %+v, generated %d bytes", st, truth.Bytes)
	}
	if !usageEqual(tally.Usage, truth.Final) || tally.Messages != truth.Messages {
		t.Errorf("counted %v in %d messages\nwant %v in %d", tally.Usage, tally.Messages, truth.Final, truth.Messages)
	}
	// The unknown model is counted, and priced at the fallback, flagged.
	cost := pricing.Cost(tally.Usage)
	known := map[string]bool{}
	for _, mc := range cost.Models {
		known[mc.Model] = mc.Known && mc.Cost.Total() > 0
	}
	if k, ok := known["claude-fake-model-20260101"]; !ok || k || !cost.Unknown || !known["claude-sonnet-4-5-20250929"] {
		t.Errorf("the unknown model not flagged or a known one not priced: %+v", cost)
	}
}

// TestObservedUsageIsNeverCountedTwice: a terminal session's transcript
// usage reaches the session (through Apply, as the runtime applies it),
// and following the same transcript again — the app restarted — adds
// nothing; what is appended after counts once.
func TestObservedUsageIsNeverCountedTwice(t *testing.T) {
	const m = "claude-fake-model-20260101"
	g := newSourceRig(t)
	f := sessionFileFor(os.Getpid(), "sid-u", g.cwd)
	g.src.Probe = func(SessionFile) (bool, bool) { return true, true }
	g.register(f)
	g.transcript("sid-u", recPrompt, asst("m1", "r1", m, tok(3, 1, 100, 900), textBlock), asst("m1", "r1", m, tok(3, 40, 100, 900), textBlock))
	var s sessions.Session
	// follow observes until the total is want, then (when watched is set)
	// appends it to the transcript and observes until the total has it.
	follow := func(want sessions.Tokens, watched ...string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := g.src.Observe(ctx, external(f))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		if len(watched) > 0 {
			// The observer's first read has reported (what it found).
			for reported := false; !reported; {
				select {
				case ev := <-ch:
					s = sessions.Apply(s, ev, time.Now())
					reported = ev.Usage != nil
				case <-deadline:
					t.Fatal("the first read reported nothing")
				}
			}
			g.transcript("sid-u", watched...)
		}
		for s.Usage.Total[m] != want {
			select {
			case ev := <-ch:
				s = sessions.Apply(s, ev, time.Now())
			case <-deadline:
				t.Fatalf("usage %+v, want %+v", s.Usage.Total[m], want)
			}
		}
		// Nothing more arrives for what was read.
		for {
			select {
			case ev := <-ch:
				s = sessions.Apply(s, ev, time.Now())
				continue
			case <-time.After(200 * time.Millisecond):
			}
			break
		}
		if s.Usage.Total[m] != want {
			t.Fatalf("usage %+v after the first read, want %+v", s.Usage.Total[m], want)
		}
	}
	follow(tok(3, 40, 100, 900))
	// Stored and restored as the database keeps it.
	b, _ := json.Marshal(s)
	s = sessions.Session{}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	follow(tok(3, 40, 100, 900))
	g.transcript("sid-u", asst("m2", "r2", m, tok(1, 1, 1, 1), textBlock))
	follow(tok(4, 41, 101, 901))
	// Everything so far was in the transcript when an observer found it:
	// the session's, but spent before it was watched (no day's).
	if s.Usage.Backfilled[m] != s.Usage.Total[m] || len(s.Usage.Observed()) != 0 {
		t.Fatalf("found usage %+v, backfilled %+v", s.Usage.Total, s.Usage.Backfilled)
	}
	// A message written while watched is observed spending.
	follow(tok(6, 43, 103, 903), asst("m3", "r3", m, tok(2, 2, 2, 2), textBlock))
	if got := s.Usage.Observed()[m]; got != tok(2, 2, 2, 2) {
		t.Fatalf("observed %+v, want the watched message's", got)
	}
}

// BenchmarkUsageScan: the cold scan of a generated directory (32 MB in
// 100 transcripts; make bench-usage runs the gigabyte), on every core.
func BenchmarkUsageScan(b *testing.B) {
	dir := b.TempDir()
	mb := 32
	if v, err := strconv.Atoi(os.Getenv("BENCH_USAGE_SCAN_MB")); err == nil && v > 0 {
		mb = v
	}
	truth, err := generateTranscripts(dir, 100, int64(mb)<<20, 3)
	if err != nil {
		b.Fatal(err)
	}
	paths, _ := TranscriptFiles(dir)
	b.SetBytes(truth.Bytes)
	cpu := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if tally, _ := ScanUsage(paths, runtime.NumCPU()); tally.Messages != truth.Messages {
			b.Fatalf("%d messages, want %d", tally.Messages, truth.Messages)
		}
	}
	// CPU as well as wall time: on a machine shared with other work the
	// wall time says as much about the others.
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkFollowTranscript: one look of a terminal session's observer
// after its transcript grew by a turn (a prompt, tool calls with their
// results, the answer: about 200 KB), with and without reading its usage,
// and the usage reading alone: what counting usage adds to following a
// transcript. The append itself is not timed.
func BenchmarkFollowTranscript(b *testing.B) {
	for _, mode := range []string{"tail", "tail+usage", "usage-only"} {
		withUsage := mode != "tail"
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			src := &Source{ConfigDir: dir, Probe: func(SessionFile) (bool, bool) { return true, true }}
			os.MkdirAll(src.SessionsDir(), 0o700)
			f := sessionFileFor(os.Getpid(), "sid-f", "/home/u/p")
			writeJSON(b, filepath.Join(src.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
			p := src.TranscriptPath(f.Cwd, f.SessionID)
			os.MkdirAll(filepath.Dir(p), 0o700)
			fh, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			defer fh.Close()
			g := &transcriptGen{rng: rand.New(rand.NewPCG(5, 5)), w: bufio.NewWriter(fh), sid: f.SessionID, cwd: f.Cwd,
				words: strings.Fields("ok PASS FAIL go test build line error warning func return nil")}
			for range 20 {
				g.turn(genModels[0], 1<<62)
			}
			g.w.Flush()
			// The turns appended are made beforehand (made while timed,
			// their garbage would be collected on the clock); past the
			// pool they come again, as copies the tally counts once.
			pool := make([][]byte, 200)
			for i := range pool {
				var buf bytes.Buffer
				g.w = bufio.NewWriter(&buf)
				g.turn(genModels[0], 1<<62)
				g.w.Flush()
				pool[i] = buf.Bytes()
			}
			o := &observer{src: src, es: external(f), file: f, hook: src.hookHub().subscribe(f.SessionID)}
			defer o.hook.close()
			o.follow(f)
			o.usage.begin()
			<-o.usage.ready
			if !withUsage {
				o.usage = nil
			}
			o.step()
			runtime.GC()
			var grown int64
			var cpu time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				turn := pool[i%len(pool)]
				if _, err := fh.Write(turn); err != nil {
					b.Fatal(err)
				}
				grown += int64(len(turn))
				c := cpuTime()
				b.StartTimer()
				if mode == "usage-only" {
					// What the usage reading alone costs in a step.
					if evs := o.usage.events(true); len(evs) == 0 && i < len(pool) {
						b.Fatal("no usage from a turn")
					}
				} else if evs, done := o.step(); done || len(evs) == 0 {
					b.Fatalf("step: %d events, done %v", len(evs), done)
				}
				cpu += cpuTime() - c
				i++
			}
			b.ReportMetric(float64(grown)/float64(b.N), "bytes/turn")
			// CPU as well: the wall time on a shared machine is noisy.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// TestParseUsageLineAgreesWithDecodingOnRealLines: every line the real
// CLI wrote (testdata) reads as encoding/json decodes it.
func TestParseUsageLineAgreesWithDecodingOnRealLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "transcript_sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	assistants := 0
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var d struct {
			Type      string `json:"type"`
			RequestID string `json:"requestId"`
			Message   struct {
				ID    string      `json:"id"`
				Model string      `json:"model"`
				Usage *apiUsageJS `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		u, ok, malformed := parseUsageLine([]byte(l))
		want := d.Type == "assistant" && d.Message.Usage != nil
		if ok != want || malformed {
			t.Fatalf("line %d: ok %v malformed %v, want ok %v", i+1, ok, malformed, want)
		}
		if !ok {
			continue
		}
		assistants++
		mu := d.Message.Usage
		if string(u.msgID) != d.Message.ID || string(u.reqID) != d.RequestID || string(u.model) != d.Message.Model ||
			u.tokens != tok(mu.Input, mu.Output, mu.CacheWrite, mu.CacheRead) {
			t.Errorf("line %d: read %q %q %q %+v, decoded %+v", i+1, u.msgID, u.reqID, u.model, u.tokens, d)
		}
	}
	if assistants == 0 {
		t.Fatal("no assistant line in the sample")
	}
}

type apiUsageJS struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
}

// FuzzUsageReader: no line, however broken, stops the reader or counts a
// message twice; a well-formed assistant line reads as decoded.
func FuzzUsageReader(f *testing.F) {
	f.Add([]byte(asst("m1", "r1", "claude-opus-4-8", tok(1, 2, 3, 4), textBlock)), 7)
	f.Add([]byte(asst("m1", "r1", "x", tok(1, 2, 3, 4), `{"type":"tool_use","input":{"usage":{"input_tokens":9}}}`)), 3)
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":"x"}}}`), 1)
	f.Add([]byte(`{"message":{"content":"\\\"}"},"type":"assistant"}`), 2)
	f.Fuzz(func(t *testing.T, line []byte, cut int) {
		parseUsageLine(line)
		if cut > 0 && cut < len(line) {
			parseEdges(line[:cut], line[cut:])
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			return // not one line
		}
		// The line twice: the same message counts once.
		r := &UsageReader{}
		data := append(append(append([]byte{}, line...), '\n'), append(line, '\n')...)
		if err := r.read(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if u, ok, _ := parseUsageLine(line); ok && len(u.msgID) > 0 && r.Tally.Usage[string(u.model)] != u.tokens {
			t.Errorf("counted %+v for a line of %+v", r.Tally.Usage, u.tokens)
		}
	})
}
