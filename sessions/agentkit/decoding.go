package agentkit

import (
	"bytes"
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The small pieces every adapter's protocol decoder uses.

// MaxTracked bounds each per-stream map a decoder keeps (open tools,
// pending requests, ids it sent): a stream that never closes what it opens
// cannot grow it without bound.
const MaxTracked = 1024

// Remember records id → v in m (made when nil), clearing m first when it
// holds MaxTracked entries; an empty id is not recorded.
func Remember[V any](m map[string]V, id string, v V) map[string]V {
	if id == "" {
		return m
	}
	if m == nil {
		m = map[string]V{}
	}
	if len(m) >= MaxTracked {
		clear(m)
	}
	m[id] = v
	return m
}

// RPCID is a JSON-RPC id as a map key: a string id unquoted, a number as
// written.
func RPCID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var str string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
		return str
	}
	return string(raw)
}

// One is a single event of kind with its detail.
func One(kind sessions.EventKind, detail string) []sessions.Event {
	return []sessions.Event{{Kind: kind, Detail: detail}}
}

// OrDefault is s, or def when s is empty.
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Clip bounds a wire string quoted in a message or an error.
func Clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
