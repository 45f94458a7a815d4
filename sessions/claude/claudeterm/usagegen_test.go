package claudeterm

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The transcript generator behind the usage benchmarks: deterministic for a
// seed, lines in the shape Claude Code 2.1.197 writes them
// (testdata/transcript_sample.jsonl: the envelope of every line, the
// assistant message with its usage object), in the mix a working session
// has: prompts, assistant text and tool calls, tool results with large
// outputs (build logs, file reads; a few over a megabyte), the CLI's own
// records. A streamed message is written a line per content block with the
// same message and request id; in half of them the earlier lines carry the
// output counted so far, as the CLI writes them since 2.1. Models: dated
// and undated ids the pricing table knows, and one it does not.

// genModels are the models a generated session uses, weighted by their
// place: mostly one model, now and then another.
var genModels = []string{
	"claude-sonnet-4-5-20250929",
	"claude-opus-4-8",
	"claude-haiku-4-5-20251001",
	"claude-fake-model-20260101",
}

// genTruth is what a generated directory holds: the usage of each message
// once with its final counts, and what keeping each message's first line
// counts instead (ccusage 17.2.1's rule).
type genTruth struct {
	Final, FirstLine sessions.Usage
	Messages, Lines  int
	Files            int
	Bytes            int64
}

type transcriptGen struct {
	rng   *rand.Rand
	words []string
	truth genTruth
	at    time.Time
	sid   string
	cwd   string
	seq   int
	w     *bufio.Writer
	n     int64
}

// generateTranscripts writes files transcripts totalling about total bytes
// under dir/projects, as a configuration directory holds them.
func generateTranscripts(dir string, files int, total int64, seed uint64) (genTruth, error) {
	g := &transcriptGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.words = strings.Fields("the build failed at step three because the linker could not find symbol main.init " +
		"ok PASS FAIL go test ./... --- warning: unused variable \\\"x\\\" in function handler \\n " +
		"error[E0308]: mismatched types expected struct found enum src/lib.rs:42:17 at line col " +
		"func return nil err if := range for package import const var type struct interface")
	g.at = time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)
	per := total / int64(files)
	for i := range files {
		// Sizes spread over two orders of magnitude around the mean, as
		// real sessions do: many short ones, a few very long.
		size := int64(float64(per) * g.rng.ExpFloat64())
		size = min(max(size, 8<<10), 40*per)
		if i == files-1 {
			size = max(total-g.truth.Bytes, 8<<10)
		}
		proj := filepath.Join(dir, "projects", fmt.Sprintf("-home-u-work-proj%02d", i%40))
		if err := os.MkdirAll(proj, 0o700); err != nil {
			return g.truth, err
		}
		g.sid = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.rng.Uint32(), g.rng.Uint32()&0xffff, g.rng.Uint32()&0xfff, g.rng.Uint32()&0xfff, g.rng.Uint64()&0xffffffffffff)
		g.cwd = fmt.Sprintf("/home/u/work/proj%02d", i%40)
		if err := g.file(filepath.Join(proj, g.sid+".jsonl"), size); err != nil {
			return g.truth, err
		}
		g.truth.Files++
	}
	return g.truth, nil
}

func (g *transcriptGen) file(path string, size int64) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	g.w, g.n = bufio.NewWriterSize(fh, 256<<10), 0
	model := genModels[g.rng.IntN(len(genModels))]
	for g.n < size {
		m := model
		if g.rng.IntN(10) == 0 {
			m = genModels[g.rng.IntN(len(genModels))]
		}
		g.turn(m, size)
	}
	g.truth.Bytes += g.n
	if err := g.w.Flush(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func (g *transcriptGen) line(s string) {
	g.w.WriteString(s)
	g.w.WriteByte('\n')
	g.n += int64(len(s)) + 1
	g.truth.Lines++
}

func (g *transcriptGen) uuid() string {
	g.seq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", g.rng.Uint32(), g.seq)
}

func (g *transcriptGen) stamp() string {
	g.at = g.at.Add(time.Duration(200+g.rng.IntN(4000)) * time.Millisecond)
	return g.at.Format("2006-01-02T15:04:05.000Z")
}

// text is n bytes or so of JSON-escaped prose and program output.
func (g *transcriptGen) text(n int) string {
	var b strings.Builder
	b.Grow(n + 32)
	for b.Len() < n {
		b.WriteString(g.words[g.rng.IntN(len(g.words))])
		b.WriteByte(' ')
	}
	return b.String()
}

func (g *transcriptGen) envelope(parent string) string {
	return `"parentUuid":"` + parent + `","isSidechain":false,"userType":"external","cwd":"` + g.cwd +
		`","sessionId":"` + g.sid + `","version":"2.1.197","gitBranch":"main"`
}

// turn writes a prompt and its answer: tool calls and their results, then
// the final text.
func (g *transcriptGen) turn(model string, size int64) {
	g.line(`{"type":"queue-operation","operation":"enqueue","timestamp":"` + g.stamp() + `","sessionId":"` + g.sid + `"}`)
	parent := g.uuid()
	g.line(`{` + g.envelope("") + `,"type":"user","message":{"role":"user","content":[{"type":"text","text":"` + g.text(40+g.rng.IntN(400)) +
		`"}]},"uuid":"` + parent + `","timestamp":"` + g.stamp() + `","permissionMode":"default"}`)
	calls := g.rng.IntN(8)
	for c := 0; c < calls && g.n < size; c++ {
		tool := "toolu_" + strconv.FormatUint(g.rng.Uint64(), 36)
		input := `{"command":"` + g.text(20+g.rng.IntN(120)) + `","description":"run a step"}`
		if g.rng.IntN(200) == 0 && size-g.n > 3<<20 {
			// A Write of a whole file: an assistant line over a megabyte.
			input = `{"file_path":"/home/u/work/big.txt","content":"` + g.text(1<<20+g.rng.IntN(1<<20)) + `"}`
		}
		parent = g.message(parent, model, "tool_use", []string{
			`{"type":"text","text":"` + g.text(30+g.rng.IntN(300)) + `"}`,
			`{"type":"tool_use","id":"` + tool + `","name":"Bash","input":` + input + `}`,
		})
		out := 200 + int(g.rng.ExpFloat64()*12000)
		if g.rng.IntN(150) == 0 && size-g.n > 6<<20 {
			out = 1<<20 + g.rng.IntN(2<<20) // a huge tool output
		}
		body := g.text(out)
		u := g.uuid()
		g.line(`{` + g.envelope(parent) + `,"type":"user","message":{"role":"user","content":[{"tool_use_id":"` + tool +
			`","type":"tool_result","content":"` + body + `","is_error":false}]},"uuid":"` + u + `","timestamp":"` + g.stamp() +
			`","toolUseResult":{"stdout":"` + body + `","stderr":"","interrupted":false,"isImage":false},"sourceToolAssistantUUID":"` + parent + `"}`)
		parent = u
	}
	parent = g.message(parent, model, "end_turn", []string{`{"type":"text","text":"` + g.text(50+g.rng.IntN(1500)) + `"}`})
	g.line(`{"parentUuid":"` + parent + `","isSidechain":false,"type":"system","subtype":"turn_duration","durationMs":` +
		strconv.Itoa(1000+g.rng.IntN(90000)) + `,"timestamp":"` + g.stamp() + `","uuid":"` + g.uuid() + `","isMeta":false}`)
}

// message writes one API message, a line per content block (the CLI's
// streamed writes), and returns the last line's uuid.
func (g *transcriptGen) message(parent, model, stop string, blocks []string) string {
	id := "msg_" + strconv.FormatUint(g.rng.Uint64(), 36)
	req := "req_" + strconv.FormatUint(g.rng.Uint64(), 36)
	final := sessions.Tokens{Input: int64(1 + g.rng.IntN(20)), Output: int64(20 + g.rng.IntN(2000)),
		CacheWrite: int64(g.rng.IntN(8000)), CacheRead: int64(10000 + g.rng.IntN(150000))}
	partial := g.rng.IntN(2) == 0
	for i, b := range blocks {
		u := final
		if partial && i < len(blocks)-1 {
			u.Output = int64(1 + g.rng.IntN(10))
		}
		if i == 0 {
			g.truth.FirstLine = g.truth.FirstLine.Add(model, u)
		}
		sr := "null"
		if i == len(blocks)-1 {
			sr = `"` + stop + `"`
		}
		uuid := g.uuid()
		g.line(`{` + g.envelope(parent) + `,"message":{"id":"` + id + `","type":"message","role":"assistant","model":"` + model +
			`","content":[` + b + `],"stop_reason":` + sr + `,"stop_sequence":null,"usage":{"input_tokens":` + strconv.FormatInt(u.Input, 10) +
			`,"cache_creation_input_tokens":` + strconv.FormatInt(u.CacheWrite, 10) + `,"cache_read_input_tokens":` + strconv.FormatInt(u.CacheRead, 10) +
			`,"output_tokens":` + strconv.FormatInt(u.Output, 10) + `,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard",` +
			`"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":` + strconv.FormatInt(u.CacheWrite, 10) + `},"inference_geo":"","iterations":[],"speed":"standard"}},` +
			`"requestId":"` + req + `","type":"assistant","uuid":"` + uuid + `","timestamp":"` + g.stamp() + `"}`)
		parent = uuid
	}
	g.truth.Final = g.truth.Final.Add(model, final)
	g.truth.Messages++
	return parent
}
