package claudeterm

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Usage reading limits. The buffer is fixed: a line longer than usageLineMax
// (an assistant message that wrote a whole file through a tool) is not held
// whole but by its first and last usageEdge bytes, which is where an API
// message keeps its id and model (before its content) and its usage and
// request id (after it).
const (
	usageChunk   = 256 << 10
	usageLineMax = 256 << 10
	usageEdge    = 64 << 10
)

// UsageTally counts API messages' usage by model, each message once. Claude
// Code writes a streamed message as several lines with the same message id
// and request id, the later ones with the output counted so far: the key
// counts the most each class reached, so a message contributes its final
// usage once whatever order its lines come in (ccusage 17.2.1 keeps the
// first line of a key, which undercounts the output of a streamed message;
// a line without a request id is keyed by its message id alone, which
// ccusage does not dedupe). A line with no message id counts as it is.
type UsageTally struct {
	// Usage is the tokens counted, by model as written ("" when the line
	// names none).
	Usage sessions.Usage
	// Messages counts the distinct messages, Lines the usage lines read.
	Messages, Lines int
	// seen holds every message counted, by its key's hash: no pointer in
	// it, so the collector never walks it (a long session's tally holds
	// tens of thousands).
	seen map[msgKey]seenMessage
	// models are the model ids seen, which seenMessage names by index.
	models   []string
	modelIdx map[string]uint32
	// loose is what lines without a message id counted (no key to merge by).
	loose  sessions.Usage
	looseN int
}

// msgKey is a message id and request id hashed to 128 bits (the two
// seeds are the process's: a tally is never stored).
type msgKey [2]uint64

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(id, req []byte) msgKey {
	var k msgKey
	for i, seed := range keySeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		h.Write(id)
		h.WriteByte(0)
		h.Write(req)
		k[i] = h.Sum64()
	}
	return k
}

// seenMessage is the most each class of a message's usage reached, and
// its model (an index into the tally's models).
type seenMessage struct {
	model  uint32
	tokens sessions.Tokens
}

// model is the index of model id m, added when new.
func (t *UsageTally) model(m []byte) uint32 {
	if i, ok := t.modelIdx[string(m)]; ok {
		return i
	}
	if t.modelIdx == nil {
		t.modelIdx = map[string]uint32{}
	}
	i := uint32(len(t.models))
	t.models = append(t.models, string(m))
	t.modelIdx[string(m)] = i
	return i
}

// Add counts one line's usage.
func (t *UsageTally) Add(u lineUsage) {
	t.Lines++
	if len(u.msgID) == 0 {
		m := t.models[t.model(u.model)]
		t.Messages++
		t.looseN++
		t.loose = add(t.loose, m, u.tokens)
		t.Usage = add(t.Usage, m, u.tokens)
		return
	}
	t.count(keyOf(u.msgID, u.reqID), seenMessage{model: t.model(u.model), tokens: u.tokens})
}

// count folds one keyed report in: what it adds over the most its key
// reached before.
func (t *UsageTally) count(key msgKey, m seenMessage) {
	if t.seen == nil {
		t.seen = map[msgKey]seenMessage{}
	}
	prev, ok := t.seen[key]
	if !ok {
		t.Messages++
		prev.model = m.model
	}
	top := prev.tokens.Max(m.tokens)
	t.Usage = add(t.Usage, t.models[prev.model], top.Sub(prev.tokens))
	t.seen[key] = seenMessage{model: prev.model, tokens: top}
}

// Merge folds another transcript's tally in, its messages deduplicated
// against this one's (a resumed conversation's file repeats messages of
// the file it continues).
func (t *UsageTally) Merge(o *UsageTally) {
	t.Lines += o.Lines
	t.Messages += o.looseN
	t.looseN += o.looseN
	for m, tok := range o.loose {
		t.loose = add(t.loose, m, tok)
		t.Usage = add(t.Usage, m, tok)
	}
	for k, m := range o.seen {
		t.count(k, seenMessage{model: t.model([]byte(o.models[m.model])), tokens: m.tokens})
	}
}

// add adds t to u's model in place (Usage.Add copies the map; a tally
// owns its map and adds a line at a time).
func add(u sessions.Usage, model string, t sessions.Tokens) sessions.Usage {
	if t.IsZero() {
		return u
	}
	if u == nil {
		u = sessions.Usage{}
	}
	u[model] = u[model].Add(t)
	return u
}

// UsageReader reads a transcript's usage from its first byte, then what is
// appended, with a buffer of fixed size whatever the file's. Unlike the
// summary's tail it never starts at a window from the end: every message
// of the session is counted.
type UsageReader struct {
	path   string
	fi     os.FileInfo
	offset int64
	buf    []byte
	// carry is the start of a line the last read ended inside.
	carry []byte
	// huge: inside a line longer than usageLineMax; head and tail are its
	// edges.
	huge       bool
	head, tail []byte
	Tally      UsageTally
	// Huge counts lines read by their edges; Malformed the usage lines
	// (by the prefilter) that did not parse, skipped.
	Huge, Malformed int
	// BytesRead counts every byte read.
	BytesRead int64
	// stopped ends a read under way (its observer is gone).
	stopped atomic.Bool
}

// NewUsageReader reads path's usage; nothing is read until Poll.
func NewUsageReader(path string) *UsageReader { return &UsageReader{path: path} }

// Poll reads what the file gained since the last call, up to its end.
// reset is true when the file was truncated or replaced since: the tally
// started over from its first byte. A missing file is no error. A last
// line without its newline yet is kept until it has one (the CLI is
// writing it).
func (r *UsageReader) Poll() (reset bool, err error) {
	fh, err := os.Open(r.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("opening transcript for usage: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false, fmt.Errorf("reading the transcript's size: %w", err)
	}
	if r.fi != nil && (!os.SameFile(r.fi, fi) || fi.Size() < r.offset) {
		r.restart()
		reset = true
	}
	r.fi = fi
	if fi.Size() == r.offset {
		return reset, nil
	}
	if fi.Size()-r.offset >= mapMin {
		// A large unread part (a first read): mapped a window at a time,
		// where the platform can, which spares copying every byte out of
		// the page cache.
		if done, err := r.mapped(fh, fi.Size()); done || err != nil {
			return reset, err
		}
	}
	if _, err := fh.Seek(r.offset, io.SeekStart); err != nil {
		return reset, fmt.Errorf("seeking the transcript: %w", err)
	}
	return reset, r.read(fh)
}

// restart forgets everything read (the buffer stays).
func (r *UsageReader) restart() {
	r.fi, r.offset, r.carry, r.huge, r.head, r.tail = nil, 0, r.carry[:0], false, r.head[:0], r.tail[:0]
	r.Tally, r.Huge, r.Malformed, r.BytesRead = UsageTally{}, 0, 0, 0
}

// read consumes rd to its end (or until the reader is stopped).
func (r *UsageReader) read(rd io.Reader) error {
	if r.buf == nil {
		r.buf = make([]byte, usageChunk)
	}
	for !r.stopped.Load() {
		n, err := rd.Read(r.buf)
		if n > 0 {
			r.offset += int64(n)
			r.BytesRead += int64(n)
			r.feed(r.buf[:n])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the transcript: %w", err)
		}
	}
	return nil
}

// feed splits chunk into lines, with what the previous chunk left.
func (r *UsageReader) feed(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			r.keep(chunk)
			return
		}
		line := chunk[:i]
		chunk = chunk[i+1:]
		switch {
		case r.huge:
			r.keep(line)
			r.hugeLine()
		case len(r.carry) > 0:
			r.keep(line)
			if r.huge {
				r.hugeLine()
			} else {
				r.line(r.carry)
				r.carry = r.carry[:0]
			}
		default:
			r.line(line)
		}
	}
}

// keep holds part of a line whose end is not read yet: whole while it is
// short, by its edges once it is not (copying only what the edges keep:
// a long line is mostly a tool's output, read past at the speed of the
// newline search).
func (r *UsageReader) keep(part []byte) {
	if !r.huge {
		if len(r.carry)+len(part) <= usageLineMax {
			r.carry = append(r.carry, part...)
			return
		}
		r.huge = true
		r.head = append(r.head[:0], r.carry[:min(len(r.carry), usageEdge)]...)
		if len(r.head) < usageEdge {
			r.head = append(r.head, part[:min(len(part), usageEdge-len(r.head))]...)
		}
		r.tail = append(r.tail[:0], r.carry[max(0, len(r.carry)-usageEdge):]...)
		r.carry = r.carry[:0]
	}
	if len(part) >= usageEdge {
		r.tail = append(r.tail[:0], part[len(part)-usageEdge:]...)
		return
	}
	if drop := len(r.tail) + len(part) - usageEdge; drop > 0 {
		r.tail = r.tail[:copy(r.tail, r.tail[drop:])]
	}
	r.tail = append(r.tail, part...)
}

func (r *UsageReader) line(l []byte) {
	u, ok, malformed := parseUsageLine(l)
	if malformed {
		r.Malformed++
	}
	if ok {
		r.Tally.Add(u)
	}
}

// hugeLine reads a line too long to hold by its edges.
func (r *UsageReader) hugeLine() {
	r.Huge++
	head, tail := r.head, r.tail
	r.huge, r.head, r.tail = false, r.head[:0], r.tail[:0]
	if !bytes.Contains(tail, usageKey) || !(bytes.Contains(head, assistantType) || bytes.Contains(tail, assistantType)) {
		return
	}
	u, ok := parseEdges(head, tail)
	if !ok {
		r.Malformed++
		return
	}
	r.Tally.Add(u)
}

var (
	messageKey   = []byte(`"message":`)
	requestIDKey = []byte(`"requestId":`)
)

// parseEdges reads an assistant line from its first and last bytes: the
// message's id and model are written before its content, its usage and
// the request id after it.
func parseEdges(head, tail []byte) (lineUsage, bool) {
	var u lineUsage
	i := bytes.Index(head, messageKey)
	if i < 0 {
		return u, false
	}
	_ = walkObject(head, skipSpace(head, i+len(messageKey)), func(key, v []byte) bool {
		switch string(key) {
		case "id":
			u.msgID = stringValue(v)
		case "model":
			u.model = stringValue(v)
		}
		return true
	}) // the object is cut inside its content: an error after id and model
	j := bytes.LastIndex(tail, usageKey)
	if j < 0 {
		return u, false
	}
	start := j + len(usageKey) - 1
	end := skipValue(tail, start)
	if end < 0 {
		return u, false
	}
	var ok bool
	if u.tokens, ok = parseTokens(tail[start:end]); !ok {
		return u, false
	}
	if k := bytes.LastIndex(tail, requestIDKey); k >= 0 {
		v := skipSpace(tail, k+len(requestIDKey))
		if e := skipValue(tail, v); e > 0 {
			u.reqID = stringValue(tail[v:e])
		}
	}
	return u, true
}

// ScanStats is what a scan of many transcripts read.
type ScanStats struct {
	Files, Failed   int
	Bytes           int64
	Huge, Malformed int
	// Err is the first failure (a file that could not be read is skipped
	// and counted in Failed).
	Err error
}

// ScanUsage reads the usage of every transcript in paths on workers
// goroutines (one reader each, its buffer reused file after file), into
// one tally, messages counted once across files as within one.
func ScanUsage(paths []string, workers int) (UsageTally, ScanStats) {
	workers = max(1, min(workers, len(paths)))
	var (
		mu    sync.Mutex
		tally UsageTally
		st    ScanStats
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, usageChunk)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				r := &UsageReader{path: paths[i], buf: buf}
				_, err := r.Poll()
				mu.Lock()
				st.Files++
				st.Bytes += r.BytesRead
				st.Huge += r.Huge
				st.Malformed += r.Malformed
				if err != nil {
					st.Failed++
					if st.Err == nil {
						st.Err = err
					}
				}
				tally.Merge(&r.Tally)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return tally, st
}

// TranscriptFiles lists every transcript under the configuration
// directory's projects (subagents' included), as ccusage reads them.
func TranscriptFiles(configDir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(configDir, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("listing transcripts: %w", err)
	}
	return out, nil
}
