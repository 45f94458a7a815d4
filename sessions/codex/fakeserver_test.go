//go:build unix

package codex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// The test binary doubles as a scripted `codex app-server` when
// FAKE_CODEX_LOG is set: it logs every request line to that file and
// answers as the real one does, with two knobs: FAKE_CODEX_START_DELAY
// delays the turn/start answer, FAKE_CODEX_REFUSE_STEER answers turn/steer
// with an error (the turn ended meanwhile).
func TestMain(m *testing.M) { agenttest.Main(m, "FAKE_CODEX_LOG", fakeServer) }

func fakeServer(logPath string) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		os.Exit(3)
	}
	delay, _ := time.ParseDuration(os.Getenv("FAKE_CODEX_START_DELAY"))
	out := bufio.NewWriter(os.Stdout)
	send := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	turns := 0
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Input []struct {
					Text string `json:"text"`
				} `json:"input"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		text := ""
		if len(req.Params.Input) > 0 {
			text = req.Params.Input[0].Text
		}
		fmt.Fprintf(logf, "%s %s\n", req.Method, text)
		switch req.Method {
		case "initialize":
			send(`{"id":%s,"result":{}}`, req.ID)
		case "thread/start", "thread/resume":
			send(`{"id":%s,"result":{"thread":{"id":"T"}}}`, req.ID)
		case "turn/start":
			turns++
			time.Sleep(delay)
			send(`{"id":%s,"result":{"turn":{"id":"u%d","status":"inProgress"}}}`, req.ID, turns)
			send(`{"method":"turn/started","params":{"threadId":"T","turn":{"id":"u%d","status":"inProgress"}}}`, turns)
		case "turn/steer":
			if os.Getenv("FAKE_CODEX_REFUSE_STEER") != "" {
				send(`{"id":%s,"error":{"code":-32600,"message":"no active turn to steer"}}`, req.ID)
			} else {
				send(`{"id":%s,"result":{"turnId":"u%d"}}`, req.ID, turns)
			}
		}
	}
}

// startScripted starts the test binary as a scripted app server and
// returns the process and its request log.
func startScripted(t *testing.T, env ...string) (*Process, func() []string) {
	t.Helper()
	self := agenttest.Self(t)
	log := filepath.Join(t.TempDir(), "requests.log")
	p := agenttest.Started(t, Start, ProcessOptions{Options: agentkit.Options{Command: self, Cwd: t.TempDir(), WriteTimeout: 5 * time.Second,
		Env: append([]string{"FAKE_CODEX_LOG=" + log}, env...)}})
	read := func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	return p, read
}

// waitLog waits until the request log has want as its last lines.
func waitLog(t *testing.T, read func() []string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := read()
		if len(got) >= len(want) && strings.Join(got[len(got)-len(want):], "|") == strings.Join(want, "|") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests %q, want them to end with %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A prompt sent while the turn/start before it is unanswered steers the
// turn that answer opens; it does not start a second turn.
func TestPromptDuringTurnStartSteers(t *testing.T) {
	p, read := startScripted(t, "FAKE_CODEX_START_DELAY=300ms")
	if err := p.SendPrompt("first"); err != nil {
		t.Fatal(err)
	}
	if err := p.SendPrompt("second"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, read, "turn/start first", "turn/steer second")
}

// A prompt whose steer Codex refuses (the turn ended first) starts a turn
// of its own, as a mid-turn prompt to Claude Code does.
func TestRefusedSteerStartsATurn(t *testing.T) {
	p, read := startScripted(t, "FAKE_CODEX_REFUSE_STEER=1")
	if err := p.SendPrompt("first"); err != nil {
		t.Fatal(err)
	}
	for ev := range p.Events() {
		if ev.Kind == sessions.EvActivity && ev.Detail == "turn started" {
			break
		}
	}
	if err := p.SendPrompt("second"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, read, "turn/start first", "turn/steer second", "turn/start second")
}
