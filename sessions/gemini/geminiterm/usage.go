package geminiterm

import (
	"bytes"
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// chatUsage counts a chat file's tokens: each gemini message's once by its
// id (the CLI appends a message again, whole, when it changes: the most
// each class reached counts), read from the file's first line (never from
// the tail window the summary starts at), then what is appended, at each
// look. The totals go out per model as running totals of a counter named
// by the session and the model, so reading the file again (the app
// restarted) adds nothing.
type chatUsage struct {
	tail  *observe.Tailer
	msgs  map[string]chatTokens
	total sessions.Usage
	// Skipped counts token lines that did not decode.
	Skipped int
}

type chatTokens struct {
	model  string
	tokens sessions.Tokens
}

var tokensKey = []byte(`"tokens":{`)

// tokenRecord is the part of a message line the usage reads. Gemini
// counts the cached part inside input and thoughts apart from output; a
// tool-use prompt is input too.
type tokenRecord struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Model  string `json:"model"`
	Tokens *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
		Tool     int64 `json:"tool"`
	} `json:"tokens"`
}

// reports reads what chat gained and returns its running totals, one per
// model (none before a message with tokens).
func (c *chatUsage) reports(chat Chat, sum *Summary) []sessions.UsageReport {
	if chat.Path == "" {
		return nil
	}
	if c.tail == nil || c.tail.Path() != chat.Path {
		*c = chatUsage{tail: observe.NewTailer(chat.Path)}
		c.tail.FromStart = true
	}
	lines, reset, _ := c.tail.Poll()
	if reset {
		c.msgs, c.total = nil, nil
	}
	for _, l := range lines {
		if bytes.Contains(l, tokensKey) {
			c.feed(l)
		}
	}
	sid := observe.OrDefault(sum.SessionID, chat.Meta.SessionID)
	if sid == "" {
		return nil
	}
	var out []sessions.UsageReport
	for _, m := range c.total.Models() {
		out = append(out, sessions.UsageReport{Model: m, Tokens: c.total[m], Mode: sessions.UsageCumulative, Counter: "chat " + sid + " " + m})
	}
	return out
}

func (c *chatUsage) feed(line []byte) {
	var r tokenRecord
	if err := json.Unmarshal(line, &r); err != nil {
		c.Skipped++
		return
	}
	if r.Type != "gemini" || r.ID == "" || r.Tokens == nil {
		return
	}
	t := r.Tokens
	tok := sessions.Tokens{Input: max(t.Input-t.Cached, 0) + t.Tool, Output: t.Output + t.Thoughts, CacheRead: t.Cached}
	if c.msgs == nil {
		c.msgs = map[string]chatTokens{}
	}
	prev, ok := c.msgs[r.ID]
	if !ok {
		prev.model = observe.OrDefault(r.Model, "unknown")
	}
	top := prev.tokens.Max(tok)
	c.total = c.total.Add(prev.model, top.Sub(prev.tokens))
	c.msgs[r.ID] = chatTokens{model: prev.model, tokens: top}
}
