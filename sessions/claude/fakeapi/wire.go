package fakeapi

import (
	"encoding/json"
	"strings"
)

// MessagesRequest is the part of a POST /v1/messages body the fake needs.
// Fields the CLI sends but no scenario looks at (tools, metadata, thinking…)
// are left out on purpose: decoding them would only make the fake brittle
// against CLI upgrades.
type MessagesRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	Stream    bool      `json:"stream"`
	Messages  []Message `json:"messages"`
	// System is a string or a list of text blocks; SystemText flattens it.
	System json.RawMessage `json:"system,omitempty"`
	// Tools is kept raw so tests can count or inspect what the CLI offered.
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// Message is one conversation turn. Content is either a JSON string or a
// list of content blocks; Blocks normalises both.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentBlock is one block of a message. Only the fields of text, tool_use
// and tool_result blocks are decoded; other block types keep just Type.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Blocks returns the message content as blocks; string content becomes one
// text block, so callers never have to care which form the CLI used.
func (m Message) Blocks() []ContentBlock {
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return []ContentBlock{{Type: "text", Text: s}}
	}
	var bs []ContentBlock
	_ = json.Unmarshal(m.Content, &bs) // malformed content reads as empty
	return bs
}

// Texts returns the text of every text block in the message, in order.
func (m Message) Texts() []string {
	var out []string
	for _, b := range m.Blocks() {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// HasToolResult reports whether the message carries a tool_result block.
func (m Message) HasToolResult() bool {
	for _, b := range m.Blocks() {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// SystemText flattens the system prompt (string or text blocks) into one
// string joined by newlines.
func (r *MessagesRequest) SystemText() string {
	return strings.Join(r.systemBlocks(), "\n")
}

// systemBlocks returns the text of each system block; a string system
// prompt is one block.
func (r *MessagesRequest) systemBlocks() []string {
	if len(r.System) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(r.System, &s); err == nil {
		return []string{s}
	}
	var bs []ContentBlock
	_ = json.Unmarshal(r.System, &bs) // malformed reads as empty
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Text)
	}
	return out
}

// LastUserMessage returns the final message with role "user", or a zero
// Message if there is none. It skips other roles on purpose: the CLI
// appends role "system" messages (agent and skill listings) after the
// user's turn, so the literal last message is often not the user's.
func (r *MessagesRequest) LastUserMessage() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// LastUserText joins the text blocks of the last user message. The CLI
// puts <system-reminder> blocks next to the prompt in the same message, so
// matching on the joined text is more robust than picking one block.
func (r *MessagesRequest) LastUserText() string {
	return strings.Join(r.LastUserMessage().Texts(), "\n")
}

// Block is one content block of a fake reply.
type Block struct {
	// Type is "text" or "tool_use".
	Type string
	// Text is the text of a text block.
	Text string
	// Chunks, if set, is the text of a text block split into the deltas to
	// stream (Text is then ignored); without it Text goes in one delta.
	Chunks []string
	// ID, Name and Input describe a tool_use block. ID defaults to a fresh
	// "toolu_fake_…" id; Input is marshalled to JSON.
	ID    string
	Name  string
	Input any
}

// TextBlock is a text reply block.
func TextBlock(text string) Block { return Block{Type: "text", Text: text} }

// ToolUseBlock is a tool_use reply block with a generated id.
func ToolUseBlock(name string, input any) Block {
	return Block{Type: "tool_use", Name: name, Input: input}
}

func (b Block) text() string {
	if b.Chunks != nil {
		return strings.Join(b.Chunks, "")
	}
	return b.Text
}

// apiError is Anthropic's error body: {"type":"error","error":{…}}.
type apiError struct {
	Type  string       `json:"type"`
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// usage mirrors the API's usage object. The cache fields are always sent
// because the real API sends them and the CLI sums them into its result.
type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// wireBlock is a content block as the API returns it.
type wireBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// wireMessage is the Messages API response object (non-streaming body, and
// the "message" of message_start with empty content and null stop_reason).
type wireMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []wireBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        usage       `json:"usage"`
}
