package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// CommandSetting is the setting that names the Codex executable; errors
// about a missing binary point the user at it.
const CommandSetting = "agents.codex.command"

// agentInfo names Codex to the registry (Agent) and says how its command is
// found.
var agentInfo = agentkit.Info{Name: "codex", Display: "Codex", Command: "codex",
	Install: "npm install -g @openai/codex", Setting: CommandSetting, TerminalResume: TerminalResume}

// TerminalResume: `codex resume --no-daemon ID` opens the TUI on thread ID
// (its rollout goes on under the same id). Without a daemon the TUI itself
// writes, and holds open, its rollout, which pairs it with its session
// exactly (codexterm) and ends with it; the 0.171.0 default instead copies
// an app-server daemon into CODEX_HOME on first use that writes the
// rollouts and outlives the TUI.
func TerminalResume(id string) []string { return []string{"resume", "--no-daemon", id} }

// readyWait bounds how long a prompt waits for the thread to be opened
// when no write timeout is set: thread/start answers in well under a second
// (measured 0.03 s after initialize), so a minute means it never will.
const readyWait = time.Minute

// Process is one running `codex app-server` that the app owns, driving one
// thread: its stdin takes JSON-RPC requests, its stdout is decoded into
// sessions.Events.
type Process struct {
	// Pipe is the process (PID, Signal, Wait, Alive, StderrTail), its
	// events, its counters, its stdin and the ids of its requests.
	*agentkit.Pipe
	dec *Decoder

	writeTimeout time.Duration
}

// ProcessOptions says how to start one `codex app-server`.
type ProcessOptions struct {
	agentkit.Options
	// ApprovalPolicy is Codex's approval policy for the thread ("" keeps
	// the user's config).
	ApprovalPolicy string
	// ResumeID continues an existing thread (thread/resume).
	ResumeID string
	// Version is reported to Codex in initialize.
	Version string
}

var (
	policyRE = regexp.MustCompile(`^[a-z-]{1,40}$`)
	threadRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
)

// ApprovalPolicy maps the session's permission mode onto Codex's approval
// policy: Codex's own words pass through; Claude's words for the same ideas
// are translated; anything else keeps the user's config.
func ApprovalPolicy(mode string) string {
	switch mode {
	case "never", "on-request":
		// "untrusted" is in the protocol's type but 0.171.0 refuses it
		// ("no longer supported"): it is left to the user's config.
		return mode
	case "bypassPermissions", "dontAsk":
		return "never"
	case "default":
		return "on-request"
	}
	return ""
}

// launch starts the Codex CLI (`codex app-server`) and opens (or resumes) the thread from the registry's options.
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{Options: agentkit.OptionsOf(o), ApprovalPolicy: ApprovalPolicy(o.PermissionMode), ResumeID: o.ResumeID})
}

// Start launches `codex app-server` in opts.Cwd, in its own process group,
// and opens the thread: initialize, initialized and thread/start (or
// thread/resume) are written at once, pipelined, so the first prompt only
// waits for their answers.
func Start(opts ProcessOptions) (*Process, error) {
	if opts.ApprovalPolicy != "" && !policyRE.MatchString(opts.ApprovalPolicy) {
		return nil, fmt.Errorf("codex launch options: invalid approval policy %q", agentkit.Clip(opts.ApprovalPolicy))
	}
	if opts.ResumeID != "" && !threadRE.MatchString(opts.ResumeID) {
		return nil, fmt.Errorf("codex launch options: invalid thread id %q", agentkit.Clip(opts.ResumeID))
	}
	child, err := agentInfo.StartPipe(opts.Options, Args())
	if err != nil {
		return nil, err
	}
	p := &Process{dec: NewDecoder(child.Stdout, opts.MaxLine), writeTimeout: opts.WriteTimeout}
	p.Pipe = agentkit.NewPipe(child, p.dec.Stats)
	go agentkit.Pump(p.Pipe, p.dec.Next, func(l Line) ([]sessions.Event, []byte) { return l.Events, l.Reply }, p.afterLine)
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	if err := p.call(methodInitialize, func(id int64) []byte { return InitializeRequest(id, version) }); err == nil {
		err = p.Write(InitializedNotification())
		if err == nil {
			err = p.call(methodThreadStart, func(id int64) []byte {
				if opts.ResumeID != "" {
					p.dec.expect(id, methodThreadResume)
					return ThreadResumeRequest(id, opts.ResumeID, opts.Cwd, opts.ApprovalPolicy)
				}
				return ThreadStartRequest(id, opts.Cwd, opts.ApprovalPolicy)
			})
		}
		if err != nil {
			// The process is running; its exit (or its silence) tells the
			// rest. Failing here would orphan it.
			_ = p.CloseInput()
		}
	}
	return p, nil
}

// Args is the command line (after the program name): the app server on
// stdio.
func Args() []string { return []string{"app-server"} }

// call registers a request's id with the decoder (so its answer can be
// read), then writes it.
func (p *Process) call(method string, line func(id int64) []byte) error {
	id := p.NextID()
	p.dec.expect(id, method)
	return p.Write(line(id))
}

// afterLine follows each line up: a thread that failed to open lets the
// prompts waiting for it fail, and a prompt whose steer Codex refused
// starts a turn of its own.
func (p *Process) afterLine(Line) {
	if _, failed := p.dec.threadID(); failed != "" {
		p.Ready.Open()
	}
	for _, text := range p.dec.takeRefused() {
		if thread, _ := p.dec.threadID(); thread != "" {
			_ = p.startTurn(thread, text)
		}
	}
}

// thread waits until the thread is open and returns its id.
func (p *Process) thread() (string, error) {
	return p.Ready.Opened(p.bound(), "codex", "thread", p.dec.threadID)
}

// SendPrompt starts a turn with text, or steers the turn in flight with it
// (turn/steer), as a prompt written mid-turn does for Claude Code. A prompt
// that arrives while a turn/start is unanswered waits for that answer, so it
// steers the new turn instead of starting a second one.
func (p *Process) SendPrompt(text string) error {
	thread, err := p.thread()
	if err != nil {
		return err
	}
	if wait := p.dec.startingTurn(); wait != nil {
		t := time.NewTimer(p.bound())
		select {
		case <-wait:
		case <-t.C:
		}
		t.Stop()
	}
	if turn := p.dec.activeTurn(); turn != "" {
		id := p.NextID()
		p.dec.expectSteer(id, text)
		return p.Write(TurnSteerRequest(id, thread, turn, text))
	}
	return p.startTurn(thread, text)
}

func (p *Process) startTurn(thread, text string) error {
	p.dec.expectTurn()
	return p.call(methodTurnStart, func(id int64) []byte { return TurnStartRequest(id, thread, text) })
}

// bound is how long the process waits on Codex for an answer it needs.
func (p *Process) bound() time.Duration {
	if p.writeTimeout > 0 {
		return p.writeTimeout
	}
	return readyWait
}

// Compact asks Codex to compact the thread's context.
func (p *Process) Compact() error {
	thread, err := p.thread()
	if err != nil {
		return err
	}
	return p.call(methodCompact, func(id int64) []byte { return CompactRequest(id, thread) })
}

// Interrupt aborts the turn in flight. With no turn known (the turn/start
// answer not read yet) there is nothing Codex could interrupt by id; the
// supervisor's escalation (signals) covers a turn that never reported.
func (p *Process) Interrupt() error {
	thread, err := p.thread()
	if err != nil {
		return err
	}
	turn := p.dec.activeTurn()
	if turn == "" {
		return errors.New("codex has no turn in flight to interrupt")
	}
	return p.call(methodTurnInterrupt, func(id int64) []byte { return TurnInterruptRequest(id, thread, turn) })
}

// AnswerPermission answers an approval request (accept or decline) or a
// question.
func (p *Process) AnswerPermission(perm sessions.Permission, allow bool, _ string) error {
	method, raw := p.dec.answer(perm.RequestID)
	if raw == nil {
		raw = agentkit.RawRPCID(perm.RequestID)
	}
	return p.Write(ApprovalResponse(raw, method, allow))
}

// expect records that request id of method was sent.
func (d *Decoder) expect(id int64, method string) {
	st := d.Lock()
	defer d.Unlock()
	st.calls = agentkit.Remember(st.calls, fmt.Sprint(id), method)
}

// expectTurn opens the wait for a turn/start's answer.
func (d *Decoder) expectTurn() {
	st := d.Lock()
	defer d.Unlock()
	if st.starting == nil {
		st.starting = make(chan struct{})
	}
}

// startingTurn is closed when the unanswered turn/start is answered; nil
// when none is.
func (d *Decoder) startingTurn() <-chan struct{} {
	st := d.Lock()
	defer d.Unlock()
	if st.starting == nil {
		return nil
	}
	return st.starting
}

// expectSteer records a turn/steer request and its text.
func (d *Decoder) expectSteer(id int64, text string) {
	st := d.Lock()
	defer d.Unlock()
	key := fmt.Sprint(id)
	if st.calls == nil {
		st.calls = map[string]string{}
	}
	st.calls[key] = methodTurnSteer
	st.steers = agentkit.Remember(st.steers, key, text)
}

// takeRefused returns the prompts whose steer Codex refused, once.
func (d *Decoder) takeRefused() []string {
	st := d.Lock()
	defer d.Unlock()
	out := st.refused
	st.refused = nil
	return out
}

// threadID is the open thread's id, or why it could not be opened.
func (d *Decoder) threadID() (id, failed string) {
	st := d.Lock()
	defer d.Unlock()
	return st.thread, st.threadErr
}

// activeTurn is the turn in flight, "" between turns.
func (d *Decoder) activeTurn() string {
	st := d.Lock()
	defer d.Unlock()
	return st.turn
}

// answer forgets the pending request id and returns its method and the id
// as Codex sent it.
func (d *Decoder) answer(id string) (string, json.RawMessage) {
	st := d.Lock()
	defer d.Unlock()
	r, ok := st.pending[id]
	if !ok {
		return "", nil
	}
	delete(st.pending, id)
	return r.method, r.raw
}
