package claudeterm

import (
	"bytes"
	"encoding/json"

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

// mayCarryUsage is the prefilter: an unescaped `"usage":{` can only be a
// key of an object (inside a JSON string every quote is escaped), and only
// an assistant line has the top-level type "assistant".
func mayCarryUsage(line []byte) bool {
	return bytes.Contains(line, usageKey) && bytes.Contains(line, assistantType)
}

// parseUsageLine reads an assistant line's message id, request id, model
// and usage; ok is false for any other line, and for a line that is not
// one well-formed JSON object up to the fields it needs.
func parseUsageLine(line []byte) (u lineUsage, ok bool) {
	var typ []byte
	hasUsage := false
	err := walkObject(line, skipSpace(line, 0), func(key []byte, v []byte) bool {
		switch string(key) {
		case "type":
			typ = stringValue(v)
		case "requestId":
			u.reqID = stringValue(v)
		case "message":
			walkObject(v, 0, func(key []byte, v []byte) bool {
				switch string(key) {
				case "id":
					u.msgID = stringValue(v)
				case "model":
					u.model = stringValue(v)
				case "usage":
					u.tokens, hasUsage = parseTokens(v)
				}
				return true
			})
		}
		return true
	})
	if err != nil || !hasUsage || string(typ) != "assistant" {
		return lineUsage{}, false
	}
	return u, true
}

// apiUsage is the usage object of an API message. Input excludes the
// cache's parts, as sessions.Tokens does.
type apiUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
}

// parseTokens decodes a usage object (small: a few hundred bytes).
func parseTokens(v []byte) (sessions.Tokens, bool) {
	var a apiUsage
	if err := json.Unmarshal(v, &a); err != nil {
		return sessions.Tokens{}, false
	}
	if a.Input < 0 || a.Output < 0 || a.CacheWrite < 0 || a.CacheRead < 0 {
		return sessions.Tokens{}, false
	}
	return sessions.Tokens{Input: a.Input, Output: a.Output, CacheWrite: a.CacheWrite, CacheRead: a.CacheRead}, true
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
	if i >= len(b) || b[i] != '{' {
		return errMalformed{}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errMalformed{}
		}
		end := skipString(b, i)
		if end < 0 {
			return errMalformed{}
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errMalformed{}
		}
		i = skipSpace(b, i+1)
		vend := skipValue(b, i)
		if vend < 0 {
			return errMalformed{}
		}
		if !fn(key, b[i:vend]) {
			return nil
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return errMalformed{}
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nil
		default:
			return errMalformed{}
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
