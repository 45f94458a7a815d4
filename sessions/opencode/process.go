package opencode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/pipeio"
)

// CommandSetting is the setting that names the OpenCode executable; errors
// about a missing binary point the user at it.
const CommandSetting = "agents.opencode.command"

// agentInfo names OpenCode to the registry (Agent) and says how its command is
// found.
var agentInfo = agentkit.Info{Name: "opencode", Display: "OpenCode", Command: "opencode",
	Install: "npm install -g opencode-ai", Setting: CommandSetting, TerminalResume: TerminalResume}

// TerminalResume: `opencode --session ID` opens the TUI on that session.
func TerminalResume(id string) []string { return []string{"--session", id} }

// startWait bounds how long a prompt waits for the server to listen and the
// session to be opened: measured 2–6 s for `opencode serve` 1.18.33 on a
// loaded two-core machine, so two minutes means it never will.
const startWait = 2 * time.Minute

// stopGrace is how long a server whose event stream ended is given to exit
// after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// serverUser is the basic-auth user `opencode serve` expects (its default
// OPENCODE_SERVER_USERNAME).
const serverUser = "opencode"

// Process is one running `opencode serve` that the app owns, driving one
// OpenCode session: prompts, interrupts and answers are HTTP requests to
// it, and its event stream (GET /event) is decoded into sessions.Events.
type Process struct {
	// Child is the process itself: PID, Signal, Alive, StderrTail.
	*agentkit.Child
	events   chan sessions.Event
	password string
	client   *http.Client
	bound    time.Duration

	// ctx ends when the process has exited; it cancels every request.
	ctx    context.Context
	cancel context.CancelFunc
	// exited is closed when cmd.Wait returned.
	exited chan struct{}
	// How it ended (proctree.Wait), set before exited is closed.
	code    int
	signal  string
	waitErr error

	// ready opens when the session is open (or could not be).
	ready *agentkit.Gate

	mu       sync.Mutex // guards the fields below
	base     string
	session  string
	startErr error
	dec      *Decoder
	closed   bool
	stopping bool
}

// ProcessOptions says how to start one `opencode serve`.
type ProcessOptions struct {
	// Command is the executable, from the setting agents.opencode.command.
	Command string
	Cwd     string
	// Env is added to the inherited environment.
	Env []string
	// MaxEvent bounds one event's data (0: DefaultMaxEvent).
	MaxEvent int
	// WriteTimeout bounds one request to the server (0: startWait).
	WriteTimeout time.Duration
	// PermissionMode is the session's permission mode (see Permission).
	PermissionMode string
	// ResumeID continues an existing OpenCode session.
	ResumeID string
}

var (
	sessionRE   = regexp.MustCompile(`^ses_[A-Za-z0-9]{1,64}$`)
	listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]{1,5})\b`)
)

// Permission maps the session's permission mode onto OpenCode's permission
// rules (the OPENCODE_PERMISSION variable, merged over the user's config):
// "" keeps the user's config; Claude's words for the same ideas are
// translated. OpenCode's own default runs commands and edits without asking.
func Permission(mode string) string {
	switch mode {
	case "bypassPermissions", "dontAsk":
		return `{"bash":"allow","edit":"allow","webfetch":"allow","external_directory":"allow"}`
	case "acceptEdits":
		return `{"bash":"ask","edit":"allow"}`
	case "default":
		return `{"bash":"ask","edit":"ask","webfetch":"ask"}`
	case "plan":
		return `{"bash":"ask","edit":"deny"}`
	}
	return ""
}

// tap, when set (by the capturing tool), sees the raw event stream.
var tap func(io.Reader) io.Reader

// Args is the command line (after the program name): the server on a free
// port of the loopback interface only. (`opencode serve` has no unix
// socket; its default hostname is 127.0.0.1 already, and it is named so a
// user's config cannot widen it.)
func Args() []string { return []string{"serve", "--hostname", "127.0.0.1", "--port", "0"} }

// launch starts OpenCode (`opencode serve`) and opens (or resumes) the session from the registry's options.
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		PermissionMode: o.PermissionMode, ResumeID: o.ResumeID,
	})
}

// Start launches `opencode serve` in opts.Cwd, in its own process group,
// with a random password for its HTTP API, and then, in the background,
// subscribes to its events and opens (or resumes) the session.
func Start(opts ProcessOptions) (*Process, error) {
	if opts.ResumeID != "" && !sessionRE.MatchString(opts.ResumeID) {
		return nil, fmt.Errorf("opencode launch options: invalid session id %q", agentkit.Clip(opts.ResumeID))
	}
	path, err := agentInfo.LookPath(opts.Command)
	if err != nil {
		return nil, err
	}
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("opencode: making the server password: %w", err)
	}
	password := hex.EncodeToString(secret[:])
	// The server's API runs commands: only the app, which knows the
	// password, may use it. The variable is not in the user's env, so it
	// cannot leak into what the agent runs beyond this process's tree.
	env := append(slices.Clip(opts.Env), "OPENCODE_SERVER_USERNAME="+serverUser, "OPENCODE_SERVER_PASSWORD="+password)
	if perm := Permission(opts.PermissionMode); perm != "" {
		env = append(env, "OPENCODE_PERMISSION="+perm)
	}
	bound := opts.WriteTimeout
	if bound <= 0 {
		bound = startWait
	}
	child, err := agentkit.Start(agentkit.Spec{Agent: "opencode", Path: path, Args: Args(), Cwd: opts.Cwd, Env: env})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{
		Child: child, events: make(chan sessions.Event, 64),
		password: password, bound: bound, ctx: ctx, cancel: cancel,
		exited: make(chan struct{}), ready: agentkit.NewGate(),
		// Loopback only: never through a proxy from the environment.
		client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}},
	}
	go func() {
		p.code, p.signal, p.waitErr = child.Wait()
		cancel()
		p.client.CloseIdleConnections()
		close(p.exited)
	}()
	listening := make(chan string, 1)
	go p.readStdout(child.Stdout, listening)
	go p.run(listening, opts)
	return p, nil
}

// readStdout finds the line that says where the server listens; the rest of
// stdout goes to the diagnostics ring.
func (p *Process) readStdout(r io.Reader, listening chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	found := false
	for sc.Scan() {
		if !found {
			if m := listeningRE.FindSubmatch(sc.Bytes()); m != nil {
				found = true
				listening <- string(m[1])
				continue
			}
		}
		_, _ = p.Stderr.Write(append(sc.Bytes(), '\n'))
	}
	_, _ = io.Copy(io.Discard, r)
}

// run opens the event stream and the session, then pumps events until the
// stream ends.
func (p *Process) run(listening <-chan string, opts ProcessOptions) {
	defer close(p.events)
	body, err := p.open(listening, opts)
	if err != nil {
		p.fail(err)
		p.stop()
		return
	}
	defer body.Close()
	dec := p.decoder()
	for {
		f, err := dec.Next()
		if err != nil {
			break
		}
		for _, ev := range f.Events {
			p.events <- ev // the runtime reads until the channel closes
		}
		p.mu.Lock()
		idleClosed := p.closed && !dec.Busy()
		p.mu.Unlock()
		if idleClosed {
			p.stop()
		}
	}
	// The stream ended: the server exited, or it dropped the stream. A
	// server we can no longer hear is stopped, so its exit is what the
	// supervisor sees (and a resume starts clean).
	p.stop()
}

// open waits for the server, subscribes to its events and opens the session.
func (p *Process) open(listening <-chan string, opts ProcessOptions) (io.ReadCloser, error) {
	// A boot is slower than a request (3–11 s measured on a loaded
	// machine): it gets the longer of the two bounds.
	wait := max(p.bound, startWait)
	t := time.NewTimer(wait)
	defer t.Stop()
	var base string
	select {
	case base = <-listening:
	case <-p.exited:
		return nil, errors.New("opencode exited before its server listened")
	case <-t.C:
		return nil, fmt.Errorf("opencode's server did not listen within %s: %w", wait, os.ErrDeadlineExceeded)
	}
	p.mu.Lock()
	p.base = base
	p.mu.Unlock()
	req, err := p.request(p.ctx, http.MethodGet, "/event", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opencode event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("opencode event stream: HTTP %d", resp.StatusCode)
	}
	var stream io.Reader = resp.Body
	if tap != nil {
		stream = tap(stream)
	}
	dec := NewDecoder(stream, opts.MaxEvent, "")
	p.mu.Lock()
	p.dec = dec
	p.mu.Unlock()
	// The stream is open before the session is, so none of its events is
	// missed; they wait in the connection until they are read.
	id, how, err := p.openSession(opts.ResumeID)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	dec.SetSession(id)
	p.mu.Lock()
	p.session = id
	p.mu.Unlock()
	p.ready.Open()
	p.events <- sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: id, Detail: "session " + how}
	return resp.Body, nil
}

func (p *Process) openSession(resume string) (id, how string, err error) {
	var info struct {
		ID string `json:"id"`
	}
	if resume != "" {
		if err := p.call(http.MethodGet, "/session/"+url.PathEscape(resume), nil, &info); err != nil {
			return "", "", fmt.Errorf("opencode could not resume session %s: %w", resume, err)
		}
		return resume, "resumed", nil
	}
	if err := p.call(http.MethodPost, "/session", map[string]any{}, &info); err != nil {
		return "", "", fmt.Errorf("opencode could not open a session: %w", err)
	}
	if !sessionRE.MatchString(info.ID) {
		return "", "", fmt.Errorf("opencode opened a session with an unexpected id %q", agentkit.Clip(info.ID))
	}
	return info.ID, "started", nil
}

func (p *Process) fail(err error) {
	p.mu.Lock()
	p.startErr = err
	p.mu.Unlock()
	p.ready.Open()
}

// stop ends the server: SIGTERM, then SIGKILL after stopGrace. It returns at
// once.
func (p *Process) stop() {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Signal(syscall.SIGTERM) // a kill on Windows (proctree.Signal)
	go func() {
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			_ = p.Signal(os.Kill)
		}
	}()
}

// sessionID waits until the session is open and returns its id.
func (p *Process) sessionID() (string, error) {
	if err := p.ready.Wait(max(p.bound, startWait), "opencode", "session"); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == "" && p.startErr != nil {
		return "", p.startErr
	}
	return agentkit.Opened("opencode", "session", p.session, "")
}

func (p *Process) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	p.mu.Lock()
	base := p.base
	p.mu.Unlock()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("opencode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("opencode %s %s: %w", method, path, err)
	}
	req.SetBasicAuth(serverUser, p.password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// call sends one request to the server within the bound and decodes a JSON
// answer into out (nil: the answer is dropped). A request that takes longer
// fails with an error wrapping os.ErrDeadlineExceeded, as a blocked stdin
// write does for the other agents.
func (p *Process) call(method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.bound)
	defer cancel()
	req, err := p.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("opencode %s %s: no answer within %s: %w", method, path, p.bound, os.ErrDeadlineExceeded)
		}
		return fmt.Errorf("opencode %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("opencode %s %s: HTTP %d: %s", method, path, resp.StatusCode, sessions.SanitizeMessage(string(data)))
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("opencode %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}

// decoder is the decoder of the current event stream (nil before it
// opened).
func (p *Process) decoder() *Decoder {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dec
}

// Events yields the decoded stream; closed when the event stream ends.
func (p *Process) Events() <-chan sessions.Event { return p.events }

// Stats are the decoder's counters (zero before the stream opened).
func (p *Process) Stats() Counters {
	dec := p.decoder()
	if dec == nil {
		return Counters{}
	}
	return dec.Stats()
}

// SkippedLines counts malformed, unknown and oversize events.
func (p *Process) SkippedLines() int { return int(p.Stats().Skipped()) }

// SendPrompt sends text to the session (POST prompt_async, answered at
// once). A prompt sent while a turn runs is queued by OpenCode for the
// session's loop, which takes it up in the same run.
func (p *Process) SendPrompt(text string) error {
	id, err := p.sessionID()
	if err != nil {
		return err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return pipeio.ErrInputClosed
	}
	body := map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}}
	return p.call(http.MethodPost, "/session/"+url.PathEscape(id)+"/prompt_async", body, nil)
}

// Interrupt aborts the turn in flight (POST abort); OpenCode ends it with
// MessageAbortedError.
func (p *Process) Interrupt() error {
	id, err := p.sessionID()
	if err != nil {
		return err
	}
	return p.call(http.MethodPost, "/session/"+url.PathEscape(id)+"/abort", nil, nil)
}

// AnswerPermission answers a permission request (once or reject, with the
// message as the reason) or a question (rejected, or answered with the
// message).
func (p *Process) AnswerPermission(perm sessions.Permission, allow bool, message string) error {
	if perm.RequestID == "" {
		return errors.New("opencode: the permission request has no id")
	}
	dec := p.decoder()
	if dec != nil {
		dec.Answered(perm.RequestID)
	}
	rid := url.PathEscape(perm.RequestID)
	if perm.Tool == "question" {
		if !allow || message == "" {
			return p.call(http.MethodPost, "/question/"+rid+"/reject", nil, nil)
		}
		return p.call(http.MethodPost, "/question/"+rid+"/reply", map[string]any{"answers": [][]string{{message}}}, nil)
	}
	body := map[string]any{"reply": "once"}
	if !allow {
		body["reply"] = "reject"
		if message != "" {
			body["message"] = message
		}
	}
	return p.call(http.MethodPost, "/permission/"+rid+"/reply", body, nil)
}

// Compact asks OpenCode to summarize the session (POST summarize with the
// model the session last used). The summary runs a model request, so the
// call is not waited for: its progress and outcome come as the compaction
// part and the summary message on the event stream.
func (p *Process) Compact() error {
	id, err := p.sessionID()
	if err != nil {
		return err
	}
	dec := p.decoder()
	m := dec.Model()
	if m.ProviderID == "" {
		// No answer seen yet on this server (a session resumed in a new
		// one): the configured model is the one OpenCode would use.
		var cfg struct {
			Model string `json:"model"`
		}
		if err := p.call(http.MethodGet, "/config", nil, &cfg); err != nil {
			return err
		}
		provider, model, ok := strings.Cut(cfg.Model, "/")
		if !ok || provider == "" || model == "" {
			return errors.New("opencode: no model known for the session; nothing to compact with")
		}
		m = Model{ProviderID: provider, ModelID: model}
	}
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Minute)
		defer cancel()
		req, err := p.request(ctx, http.MethodPost, "/session/"+url.PathEscape(id)+"/summarize",
			map[string]any{"providerID": m.ProviderID, "modelID": m.ModelID})
		if err != nil {
			return
		}
		if resp, err := p.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
	}()
	return nil
}

// CloseInput stops taking prompts: the turn in flight finishes, then the
// server is stopped (at once when no turn runs).
func (p *Process) CloseInput() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	dec := p.dec
	p.mu.Unlock()
	if already {
		return nil
	}
	if dec == nil || !dec.Busy() {
		p.stop()
	}
	return nil
}

// Wait waits for the process (call after Events is closed) and reports its
// exit code, or the signal that killed it.
func (p *Process) Wait() (int, string, error) {
	<-p.exited
	return p.code, p.signal, p.waitErr
}
