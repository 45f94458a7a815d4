package claudeterm

import (
	"bytes"
	"strconv"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// A transcript's usage is read without decoding its lines: a cold read of
// every transcript of a machine (a gigabyte is common) has to finish in a
// second or two, and encoding/json decoding every line costs ten times that.
// Most bytes are tool results and prompts (user lines), which the prefilter
// drops by one byte search; an assistant line is walked key by key, every
// value but the few read skipped as raw JSON (a string by its closing
// quote, found with IndexByte).

// lineUsage is what one assistant line says about an API message.
type lineUsage struct {
	msgID, reqID, model []byte
	tokens              sessions.Tokens
}

var (
	assistantType = []byte(`"type":"assistant"`)
	usageKey      = []byte(`"usage":{`)
)

// parseUsageLine reads an assistant line's message id, request id, model
// and usage; ok is false for any other line. It stops at the top-level
// type when that is not "assistant": the CLI writes a user line's type
// before its message, so a tool's output is never read past its first
// bytes. malformed: the line is not one JSON object.
func parseUsageLine(line []byte) (u lineUsage, ok, malformed bool) {
	var typ []byte
	hasUsage, other := false, false
	message := func(key, v []byte) bool {
		switch string(key) {
		case "id":
			u.msgID = stringValue(v)
		case "model":
			u.model = stringValue(v)
		case "usage":
			u.tokens, hasUsage = parseTokens(v)
		}
		return true
	}
	_, err := walkFields(line, skipSpace(line, 0), func(key []byte, at int) (int, bool) {
		if string(key) == "message" && at < len(line) && line[at] == '{' {
			// Walked in place: its content is the bulk of the line and is
			// skipped once.
			end, err := walkFields(line, at, valuesOf(line, message))
			if err != nil {
				return -1, false
			}
			return end, true
		}
		end := skipValue(line, at)
		if end < 0 {
			return -1, false
		}
		switch string(key) {
		case "type":
			typ = stringValue(line[at:end])
			if string(typ) != "assistant" {
				other = true
				return end, false
			}
		case "requestId":
			u.reqID = stringValue(line[at:end])
		}
		return end, true
	})
	if other {
		return lineUsage{}, false, false
	}
	if err != nil {
		return lineUsage{}, false, true
	}
	if !hasUsage || string(typ) != "assistant" {
		return lineUsage{}, false, false
	}
	return u, true, false
}

// parseTokens reads a usage object's four counts. Input excludes the
// cache's parts, as sessions.Tokens does.
func parseTokens(v []byte) (t sessions.Tokens, ok bool) {
	ok = true
	err := walkObject(v, 0, func(key, v []byte) bool {
		var dst *int64
		switch string(key) {
		case "input_tokens":
			dst = &t.Input
		case "output_tokens":
			dst = &t.Output
		case "cache_creation_input_tokens":
			dst = &t.CacheWrite
		case "cache_read_input_tokens":
			dst = &t.CacheRead
		default:
			return true
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			ok = false
			return false
		}
		*dst = n
		return true
	})
	if err != nil || !ok {
		return sessions.Tokens{}, false
	}
	return t, true
}

// stringValue is a JSON string's raw contents (ids and model names carry
// no escapes; one that does is kept as written), nil for any other value.
func stringValue(v []byte) []byte {
	if len(v) < 2 || v[0] != '"' {
		return nil
	}
	return v[1 : len(v)-1]
}

// errMalformed: the line is not the JSON object it should be.
type errMalformed struct{}

func (errMalformed) Error() string { return "malformed JSON" }

// walkObject calls fn with each key of the object starting at b[i] and its
// raw value, until fn returns false or the object ends. A truncated or
// malformed object is an error after the keys read so far.
func walkObject(b []byte, i int, fn func(key, value []byte) bool) error {
	_, err := walkFields(b, i, valuesOf(b, fn))
	return err
}

// valuesOf adapts fn to walkFields: each value skipped and handed over.
func valuesOf(b []byte, fn func(key, value []byte) bool) func(key []byte, at int) (int, bool) {
	return func(key []byte, at int) (int, bool) {
		end := skipValue(b, at)
		if end < 0 {
			return -1, false
		}
		return end, fn(key, b[at:end])
	}
}

// walkFields calls fn with each key of the object starting at b[i] and the
// index of its value, which fn reads (or skips) and returns the end of (-1:
// malformed), until fn returns false or the object ends; end is the index
// after the object.
func walkFields(b []byte, i int, fn func(key []byte, at int) (end int, more bool)) (end int, err error) {
	if i >= len(b) || b[i] != '{' {
		return -1, errMalformed{}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1, errMalformed{}
		}
		kend := skipString(b, i)
		if kend < 0 {
			return -1, errMalformed{}
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return -1, errMalformed{}
		}
		i = skipSpace(b, i+1)
		vend, more := fn(key, i)
		if vend < 0 {
			return -1, errMalformed{}
		}
		if !more {
			return vend, nil
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return -1, errMalformed{}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return -1, errMalformed{}
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (its
// opening quote), -1 when it does not end.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the index after the value starting at b[i], -1 when it
// does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				if j < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return -1
	default:
		// A number, true, false or null: up to the next delimiter.
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
