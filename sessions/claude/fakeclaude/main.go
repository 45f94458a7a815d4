// Command fakeclaude is a scripted stand-in for `claude -p --input-format
// stream-json --output-format stream-json` used by the tests: it reads the
// same stdin lines and replays the real stdout wire format from a script, so
// tests can drive any stream (garbage lines, a 50 MB line, a stall, a sudden
// exit) quickly and deterministically. It is not a model: the real CLI runs in
// the end-to-end tests.
//
// The script (JSON, path in FAKE_CLAUDE_SCRIPT) is {"turns": [[step…]…]}: the
// n-th user message plays turns[n] (the last turn repeats); the optional
// {"startup": [step…]} plays before any input is read (a CLI that dies at
// start). A step is one of
//
//	{"emit": {…}}             print the object as one line ($SESSION and $REQ are replaced)
//	{"raw": "text"}           print text as a line verbatim (garbage)
//	{"big_line_bytes": N}     print one N-byte line
//	{"sleep_ms": N}           stay silent; an interrupt ends the turn as aborted
//	{"wait_permission": {…}}  print a can_use_tool control_request and wait for the answer
//	{"stop_reading": true}    stop reading stdin for good (a wedged agent):
//	                          at most 4 KB more is read, the rest stays in the pipe
//	{"stderr": "text"}        print text as a line on stderr
//	{"close_stdin": true}     close stdin (writes to it then fail at once)
//	{"exit": N}               exit with code N at once
//	{"kill": true}            SIGKILL itself (a crash)
//	{"touch": "path"}         create a file (a side effect a test can see)
//	{"spawn_setsid": "path"}  start `sleep 600` in a session of its own (as the
//	                          real CLI runs Bash commands) and write its pid to path
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

type step struct {
	Emit           json.RawMessage `json:"emit"`
	Raw            *string         `json:"raw"`
	BigLineBytes   int             `json:"big_line_bytes"`
	SleepMS        int             `json:"sleep_ms"`
	WaitPermission json.RawMessage `json:"wait_permission"`
	Exit           *int            `json:"exit"`
	Kill           bool            `json:"kill"`
	Touch          string          `json:"touch"`
	SpawnSetsid    string          `json:"spawn_setsid"`
	StopReading    bool            `json:"stop_reading"`
	Stderr         *string         `json:"stderr"`
	CloseStdin     bool            `json:"close_stdin"`
}

// stopReading, once set, makes every later read of stdin block forever.
var stopReading atomic.Bool

// gatedStdin reads stdin in small pieces and stops for good once
// stopReading is set: a read already waiting may still take one piece.
type gatedStdin struct{}

func (gatedStdin) Read(p []byte) (int, error) {
	if stopReading.Load() {
		select {}
	}
	return os.Stdin.Read(p[:min(len(p), 4096)])
}

type script struct {
	Startup []step   `json:"startup"`
	Turns   [][]step `json:"turns"`
}

type input struct {
	kind      string // user, interrupt, permission
	requestID string
	allow     bool
}

var out = bufio.NewWriter(os.Stdout)

func main() {
	sc, err := load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude:", err)
		os.Exit(2)
	}
	session := "fa4e0000-0000-4000-8000-000000000001"
	for i, a := range os.Args {
		if a == "--resume" && i+1 < len(os.Args) {
			session = os.Args[i+1]
		}
	}
	if p := os.Getenv("FAKE_CLAUDE_ARGS_FILE"); p != "" {
		_ = os.WriteFile(p, []byte(strings.Join(os.Args[1:], "\n")), 0o600)
	}
	in := make(chan input, 16)
	go readStdin(in)
	play(sc.Startup, in, session)
	turn := 0
	for msg := range in {
		if msg.kind != "user" {
			continue
		}
		steps := sc.Turns[min(turn, len(sc.Turns)-1)]
		turn++
		emit(fmt.Sprintf(`{"type":"system","subtype":"init","cwd":%q,"session_id":"$SESSION","tools":["Bash"],"model":"fake"}`, cwd()), session, "")
		play(steps, in, session)
	}
}

func load() (script, error) {
	var sc script
	path := os.Getenv("FAKE_CLAUDE_SCRIPT")
	if path == "" {
		return sc, fmt.Errorf("FAKE_CLAUDE_SCRIPT is not set")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("parsing %s: %w", path, err)
	}
	if len(sc.Turns) == 0 {
		return sc, fmt.Errorf("%s has no turns", path)
	}
	return sc, nil
}

func cwd() string { d, _ := os.Getwd(); return d }

func readStdin(in chan<- input) {
	defer close(in)
	r := bufio.NewReaderSize(gatedStdin{}, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var m struct {
				Type      string `json:"type"`
				RequestID string `json:"request_id"`
				Request   struct {
					Subtype string `json:"subtype"`
				} `json:"request"`
				Response struct {
					RequestID string `json:"request_id"`
					Response  struct {
						Behavior string `json:"behavior"`
					} `json:"response"`
				} `json:"response"`
			}
			if json.Unmarshal(line, &m) == nil {
				switch {
				case m.Type == "user":
					in <- input{kind: "user"}
				case m.Type == "control_request" && m.Request.Subtype == "interrupt":
					in <- input{kind: "interrupt", requestID: m.RequestID}
				case m.Type == "control_response":
					in <- input{kind: "permission", requestID: m.Response.RequestID, allow: m.Response.Response.Behavior == "allow"}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func emit(line, session, req string) {
	line = strings.ReplaceAll(line, "$SESSION", session)
	line = strings.ReplaceAll(line, "$REQ", req)
	out.WriteString(line)
	out.WriteByte('\n')
	out.Flush()
}

// play runs one turn's steps. Stdin that closes mid-turn does not stop it:
// the real CLI finishes the turn first.
func play(steps []step, in <-chan input, session string) {
	for _, s := range steps {
		switch {
		case s.Emit != nil:
			emit(string(s.Emit), session, "")
		case s.Raw != nil:
			emit(*s.Raw, session, "")
		case s.BigLineBytes > 0:
			big := make([]byte, s.BigLineBytes)
			for i := range big {
				big[i] = 'x'
			}
			out.Write(big)
			out.WriteByte('\n')
			out.Flush()
		case s.StopReading:
			stopReading.Store(true)
		case s.Stderr != nil:
			fmt.Fprintln(os.Stderr, *s.Stderr)
		case s.CloseStdin:
			_ = os.Stdin.Close()
		case s.SleepMS > 0:
			if aborted := sleep(time.Duration(s.SleepMS)*time.Millisecond, in, session); aborted {
				return
			}
		case s.WaitPermission != nil:
			req := "req_perm_1"
			emit(fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"Bash","input":%s,"tool_use_id":"toolu_perm"}}`, req, s.WaitPermission), session, req)
			for msg := range in {
				if msg.kind == "permission" && msg.requestID == req {
					if !msg.allow {
						emit(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_perm","type":"tool_result","content":"denied","is_error":true}]},"session_id":"$SESSION"}`, session, "")
					}
					break
				}
				if msg.kind == "interrupt" {
					abort(session, msg.requestID)
					return
				}
			}
		case s.Exit != nil:
			out.Flush()
			os.Exit(*s.Exit)
		case s.Kill:
			out.Flush()
			killSelf()
			time.Sleep(time.Hour)
		case s.SpawnSetsid != "":
			cmd := exec.Command("sleep", "600")
			detach(cmd)
			if err := cmd.Start(); err == nil {
				_ = os.WriteFile(s.SpawnSetsid, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
			}
		case s.Touch != "":
			_ = os.WriteFile(s.Touch, nil, 0o600)
		}
	}
}

// sleep stays silent for d; an interrupt ends the turn as the real CLI does.
func sleep(d time.Duration, in <-chan input, session string) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return false
		case msg, ok := <-in:
			if !ok {
				in = nil // stdin closed: finish the turn anyway
				continue
			}
			if msg.kind == "interrupt" {
				abort(session, msg.requestID)
				return true
			}
		}
	}
}

func abort(session, req string) {
	emit(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q}}`, req), session, req)
	emit(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"session_id":"$SESSION"}`, session, req)
	emit(`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming","session_id":"$SESSION"}`, session, req)
}
