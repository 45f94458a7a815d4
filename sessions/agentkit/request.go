package agentkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The small pieces an adapter's request side uses: the lines it writes to
// its agent's stdin.

// JSONLine renders v as one JSON line for an agent's stdin. HTML escaping
// is off so prompts reach the model byte for byte; JSON never emits a raw
// newline inside a value, so the line cannot be split. v is a request the
// adapter built (strings, numbers, maps, validated raw JSON): encoding it
// cannot fail, so a failure is a bug of the adapter's, not bad input, and
// panics.
func JSONLine(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("agentkit: encoding a stdin line: %v", err))
	}
	return buf.Bytes()
}

// RawRPCID is a JSON-RPC id kept as a map key (RPCID) rendered back into
// JSON for a reply: a number when it is one, else a string.
func RawRPCID(id string) json.RawMessage {
	if _, err := strconv.ParseInt(id, 10, 64); err == nil {
		return json.RawMessage(id)
	}
	b, _ := json.Marshal(id)
	return b
}
