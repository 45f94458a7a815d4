//go:build unix

// Command toycli is the toy agent's CLI, built by the tests only: it speaks
// the toyagent protocol on stdio (`toy --stream [--resume ID]`) and asks an
// OpenAI-compatible chat completions API for each step of a turn (streamed,
// SSE), at $TOY_API_URL (a base URL ending in /v1, on loopback only: the
// fake API of the tests). A bash tool call the model asks for runs as
// `sh -c` in the working directory, its output sent back as the next
// request. The session (the messages so far) is kept in
// $HOME/.toy/sessions/<id>.json after every change, so a killed CLI loses
// nothing --resume needs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest/toyagent"
)

// message is one chat completions message.
type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// client asks the API, never through a proxy whatever the environment
// says: the API is on loopback.
var client = &http.Client{Transport: &http.Transport{}}

// bashTool is the one tool the model is offered.
var bashTool = json.RawMessage(`{"type":"function","function":{"name":"bash","description":"Run a shell command",` +
	`"parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}`)

// cli is one run: the session, its file, the API and the turn in flight.
type cli struct {
	api, id, file string
	msgs          []message
	out           *json.Encoder

	mu     sync.Mutex // guards cancel
	cancel context.CancelFunc
}

func main() {
	stream := flag.Bool(strings.TrimPrefix(toyagent.FlagStream, "--"), false, "speak the toyagent protocol on stdio")
	resume := flag.String(strings.TrimPrefix(toyagent.FlagResume, "--"), "", "the session to continue")
	flag.Parse()
	if err := run(*stream, *resume); err != nil {
		fmt.Fprintln(os.Stderr, "toy:", err)
		os.Exit(1)
	}
}

func run(stream bool, resume string) error {
	if !stream {
		return errors.New("only " + toyagent.FlagStream + " is supported")
	}
	api := os.Getenv("TOY_API_URL")
	if u, err := url.Parse(api); err != nil || !loopback(u.Hostname()) {
		return fmt.Errorf("TOY_API_URL %q is not a loopback URL", api)
	}
	c := &cli{api: api, out: json.NewEncoder(os.Stdout)}
	if err := c.open(resume); err != nil {
		return err
	}
	c.emit(toyagent.Message{Type: toyagent.TypeSession, SessionID: c.id})
	prompts := make(chan string, 64)
	go c.read(prompts)
	for text := range prompts {
		c.turn(joinQueued(text, prompts))
	}
	return nil
}

// joinQueued adds the prompts sent while the last turn ran to text: they
// are one turn.
func joinQueued(text string, prompts <-chan string) string {
	for {
		select {
		case next, ok := <-prompts:
			if !ok {
				return text
			}
			text += "\n\n" + next
		default:
			return text
		}
	}
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// open starts a new session, or loads resume's.
func (c *cli) open(resume string) error {
	dir := filepath.Join(os.Getenv("HOME"), ".toy", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if resume == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		c.id = "toy_" + hex.EncodeToString(b)
		c.file = filepath.Join(dir, c.id+".json")
		return c.save()
	}
	c.id, c.file = resume, filepath.Join(dir, filepath.Base(resume)+".json")
	b, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", resume, err)
	}
	if err := json.Unmarshal(b, &c.msgs); err != nil {
		return fmt.Errorf("resuming %s: %w", resume, err)
	}
	// A call the killed CLI never answered is answered now: the history
	// the API sees stays well-formed.
	if n := len(c.msgs); n > 0 {
		for _, call := range c.msgs[n-1].ToolCalls {
			c.msgs = append(c.msgs, message{Role: "tool", ToolCallID: call.ID, Content: "(interrupted: the CLI stopped)"})
		}
	}
	return c.save()
}

// save writes the session whole, replacing the file atomically.
func (c *cli) save() error {
	b, err := json.Marshal(c.msgs)
	if err != nil {
		return err
	}
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

func (c *cli) add(m message) {
	c.msgs = append(c.msgs, m)
	if err := c.save(); err != nil {
		fmt.Fprintln(os.Stderr, "toy: saving the session:", err)
	}
}

func (c *cli) emit(m toyagent.Message) { _ = c.out.Encode(m) }

// read takes stdin's lines: prompts to the queue, an interrupt to the turn
// in flight. At the end of the input the queue closes: the turn in flight
// finishes, then the CLI exits.
func (c *cli) read(prompts chan<- string) {
	defer close(prompts)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m toyagent.Message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			fmt.Fprintf(os.Stderr, "toy: malformed input line %q\n", sc.Text())
			continue
		}
		switch m.Type {
		case toyagent.TypePrompt:
			prompts <- m.Text
		case toyagent.TypeInterrupt:
			c.mu.Lock()
			if c.cancel != nil {
				c.cancel()
			}
			c.mu.Unlock()
		}
	}
}

// turn runs one turn: model requests and the tools they ask for, until the
// model answers with text alone (or the turn is interrupted: like the real
// CLIs, the toy sets no bound of its own on a turn's steps).
func (c *cli) turn(text string) {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
	}()
	c.emit(toyagent.Message{Type: toyagent.TypeTurnStart, SessionID: c.id})
	c.add(message{Role: "user", Content: text})
	for {
		reply, status, err := c.complete(ctx)
		if ctx.Err() != nil {
			c.emit(toyagent.Message{Type: toyagent.TypeTurnEnd, Cancelled: true})
			return
		}
		if err != nil {
			c.emit(toyagent.Message{Type: toyagent.TypeError, Status: status, Text: err.Error()})
			return
		}
		if reply.Content != "" {
			c.emit(toyagent.Message{Type: toyagent.TypeText, Text: reply.Content})
		}
		c.add(reply)
		if len(reply.ToolCalls) == 0 {
			c.emit(toyagent.Message{Type: toyagent.TypeTurnEnd})
			return
		}
		for _, call := range reply.ToolCalls {
			var args struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal([]byte(call.Function.Arguments), &args)
			c.emit(toyagent.Message{Type: toyagent.TypeToolStart, ID: call.ID, Name: call.Function.Name, Text: args.Command})
			out := bash(ctx, args.Command)
			if ctx.Err() != nil {
				c.emit(toyagent.Message{Type: toyagent.TypeTurnEnd, Cancelled: true})
				return
			}
			c.add(message{Role: "tool", ToolCallID: call.ID, Content: out})
			c.emit(toyagent.Message{Type: toyagent.TypeToolEnd, ID: call.ID, Name: call.Function.Name})
		}
	}
}

// bash runs command with sh in a process group of its own, which an
// interrupt kills whole; its output and any failure are the result.
func bash(ctx context.Context, command string) string {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		out = append(out, "\n"+err.Error()...)
	}
	return string(out)
}

// complete asks the API for the next assistant message, streamed. status
// is the API's HTTP status when it refused (0: no answer).
func (c *cli) complete(ctx context.Context) (message, int, error) {
	body, _ := json.Marshal(map[string]any{"model": "toy", "stream": true, "messages": c.msgs, "tools": []json.RawMessage{bashTool}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.api, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return message{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return message{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return message{}, resp.StatusCode, fmt.Errorf("API error %d: %s", resp.StatusCode, e.Error.Message)
	}
	return readStream(resp.Body)
}

// readStream assembles the assistant message from the SSE chunks.
func readStream(r io.Reader) (message, int, error) {
	reply := message{Role: "assistant"}
	var calls []toolCall
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			reply.ToolCalls = calls
			return reply, 0, nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index int `json:"index"`
						toolCall
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil || len(chunk.Choices) == 0 {
			continue
		}
		d := chunk.Choices[0].Delta
		reply.Content += d.Content
		for _, tc := range d.ToolCalls {
			for len(calls) <= tc.Index {
				calls = append(calls, toolCall{Type: "function"})
			}
			call := &calls[tc.Index]
			call.ID += tc.ID
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
	}
	if err := sc.Err(); err != nil {
		return message{}, 0, fmt.Errorf("reading the API's stream: %w", err)
	}
	return message{}, 0, errors.New("the API's stream ended without [DONE]")
}
