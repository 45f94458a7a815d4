package agentkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// SkipReason says why a line (or a server-sent event) produced no events.
// Every adapter's decoder reports it in its line or event info.
type SkipReason string

// The skip reasons. SkipNone is the zero value: the line was decoded.
const (
	SkipNone      SkipReason = ""
	SkipEmpty     SkipReason = "empty"
	SkipMalformed SkipReason = "malformed"
	SkipUnknown   SkipReason = "unknown"
	SkipOversize  SkipReason = "oversize"
)

// UnmarshalLine is how every decoder starts on a line: it trims the line and
// decodes the JSON object into v. A blank line is SkipEmpty (no error); a
// line that is not a JSON object, or not JSON, is SkipMalformed with detail
// saying why and err wrapping malformed. A field of an unexpected JSON type
// (a string where an array was expected, say) is not fatal: encoding/json
// fills every other field and reports only the first mismatch.
func UnmarshalLine(line []byte, v any, malformed error) (trimmed []byte, skip SkipReason, detail string, err error) {
	trimmed = bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return trimmed, SkipEmpty, "", nil
	}
	if trimmed[0] != '{' {
		return trimmed, SkipMalformed, "not a JSON object", fmt.Errorf("%w: not a JSON object", malformed)
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return trimmed, SkipMalformed, err.Error(), fmt.Errorf("%w: %w", malformed, err)
		}
	}
	return trimmed, SkipNone, "", nil
}

// Unmarshal is UnmarshalLine for a decoder whose line info embeds this
// Frame: the frame takes the line's size and, for a skipped line, the skip
// and its words. ok is false for a skipped line: the decoder returns its
// info as it stands, with err.
func (f *Frame) Unmarshal(line []byte, v any, malformed error) (trimmed []byte, ok bool, err error) {
	f.Size = len(line)
	trimmed, f.Skip, f.Detail, err = UnmarshalLine(line, v, malformed)
	return trimmed, f.Skip == SkipNone, err
}
