package gemini

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// CommandSetting is the setting that names the Gemini CLI executable;
// errors about a missing binary point the user at it.
const CommandSetting = "agents.gemini.command"

// agentInfo names Gemini CLI to the registry (Agent) and says how its command is
// found.
var agentInfo = agentkit.Info{Name: "gemini", Display: "Gemini CLI", Command: "gemini",
	Install: "npm install -g @google/gemini-cli", Setting: CommandSetting, TerminalResume: TerminalResume}

// TerminalResume: `gemini --resume ID` opens the TUI on that session (the
// ACP session id is the id --resume takes).
func TerminalResume(id string) []string { return []string{"--resume", id} }

// readyWait bounds how long a prompt waits for the session to open: the
// CLI answers initialize about 5 s after it starts (measured on 0.61.0, two
// shared cores), and a session/load may first wait up to a minute (see
// loadDelay), so two minutes means never.
const readyWait = 2 * time.Minute

// noCompaction is why Compact cannot do what it is asked: ACP has no
// compaction request and 0.61.0's ACP commands have no /compress (measured);
// the CLI compresses its history by itself before a request once it passes
// model.compressionThreshold, so an overflow that still happens is one the
// CLI's own compression could not prevent.
const noCompaction = "context overflow: Gemini CLI takes no compaction request over ACP " +
	"(it compresses its history itself before each request); the overflowed turn needs a person"

// Process is one running `gemini --acp` that the app owns, driving one
// session: its stdin takes JSON-RPC requests, its stdout is decoded into
// sessions.Events.
type Process struct {
	// Pipe is the process (PID, Signal, Wait, Alive, StderrTail), its
	// events (written by the decode loop and by Compact), its counters,
	// its stdin and the ids of its requests.
	*agentkit.Pipe
	dec *Decoder

	writeTimeout time.Duration

	mu sync.Mutex // guards queued
	// queued holds prompts sent while a turn runs: a second session/prompt
	// would abort the first (0.61.0 aborts the pending prompt), so they are
	// sent as the next turn when this one ends.
	queued []string
}

// ProcessOptions says how to start one `gemini --acp`.
type ProcessOptions struct {
	agentkit.Options
	// ApprovalMode is the CLI's --approval-mode ("" keeps the user's
	// settings).
	ApprovalMode string
	// ResumeID reopens an existing session (session/load).
	ResumeID string
}

var sessionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ApprovalMode maps the session's permission mode onto the CLI's
// --approval-mode: Gemini's own words pass through; Claude's and Codex's
// words for the same ideas are translated; anything else keeps the user's
// settings. Under "default" every tool that changes something is asked
// about over ACP and answered from the app.
func ApprovalMode(mode string) string {
	switch mode {
	case "default", "auto_edit", "yolo", "plan":
		return mode
	case "acceptEdits":
		return "auto_edit"
	case "bypassPermissions", "dontAsk", "never":
		return "yolo"
	case "on-request":
		return "default"
	}
	return ""
}

// Args is the command line (after the program name).
func Args(approvalMode string) []string {
	args := []string{"--acp"}
	if approvalMode != "" {
		args = append(args, "--approval-mode", approvalMode)
	}
	return args
}

// launch starts the Gemini CLI (`gemini --acp`) and opens (or loads) the session from the registry's options.
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{Options: agentkit.OptionsOf(o), ApprovalMode: ApprovalMode(o.PermissionMode), ResumeID: o.ResumeID})
}

// Start launches `gemini --acp` in opts.Cwd, in its own process group, and
// opens the session: initialize and session/new (or session/load) are
// written at once, pipelined, so the first prompt only waits for their
// answers.
func Start(opts ProcessOptions) (*Process, error) {
	if opts.ApprovalMode != "" && ApprovalMode(opts.ApprovalMode) != opts.ApprovalMode {
		return nil, fmt.Errorf("gemini launch options: invalid approval mode %q", agentkit.Clip(opts.ApprovalMode))
	}
	if opts.ResumeID != "" && !sessionRE.MatchString(opts.ResumeID) {
		return nil, fmt.Errorf("gemini launch options: invalid session id %q", agentkit.Clip(opts.ResumeID))
	}
	child, err := agentInfo.StartPipe(opts.Options, Args(opts.ApprovalMode))
	if err != nil {
		return nil, err
	}
	p := &Process{dec: NewDecoder(child.Stdout, opts.MaxLine), writeTimeout: opts.WriteTimeout}
	p.Pipe = agentkit.NewPipe(child, p.dec.Stats)
	go agentkit.Pump(p.Pipe, p.dec.Next, func(l Line) ([]sessions.Event, []byte) { return l.Events, l.Reply }, p.afterLine)
	err = p.call(methodInitialize, InitializeRequest)
	if err == nil {
		if opts.ResumeID != "" {
			id := p.NextID()
			p.dec.expectLoad(id, opts.ResumeID)
			if wait := loadDelay(chatsHome(opts.Env), opts.ResumeID, time.Now()); wait > 0 {
				go func() {
					time.Sleep(wait)
					if p.Write(SessionLoadRequest(id, opts.ResumeID, opts.Cwd)) != nil {
						_ = p.CloseInput()
					}
				}()
			} else {
				err = p.Write(SessionLoadRequest(id, opts.ResumeID, opts.Cwd))
			}
		} else {
			err = p.call(methodSessionNew, func(id int64) []byte { return SessionNewRequest(id, opts.Cwd) })
		}
	}
	if err != nil {
		// The process is running; its exit (or its silence) tells the
		// rest. Failing here would orphan it.
		_ = p.CloseInput()
	}
	return p, nil
}

// call registers a request's id with the decoder (so its answer can be
// read), then writes it.
func (p *Process) call(method string, line func(id int64) []byte) error {
	id := p.NextID()
	p.dec.expect(id, method)
	return p.Write(line(id))
}

// afterLine follows each line up: a session that failed to open lets the
// prompts waiting for it fail, and the prompts queued behind a turn are
// sent once it ends.
func (p *Process) afterLine(line Line) {
	if _, failed := p.dec.session(); failed != "" {
		p.Ready.Open()
	}
	if line.TurnDone {
		p.sendQueued()
	}
}

// sendQueued starts the turn of the prompts sent while the last one ran.
// Several are joined, in order, into one turn, as Claude Code takes the
// lines written during a turn.
func (p *Process) sendQueued() {
	p.mu.Lock()
	texts := p.queued
	p.queued = nil
	p.mu.Unlock()
	sid, _ := p.dec.session()
	if len(texts) == 0 || sid == "" {
		return
	}
	if err := p.startTurn(sid, strings.Join(texts, "\n\n")); err != nil {
		p.Emit(sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.OtherFailure,
			Message: sessions.SanitizeMessage("the queued prompt could not be sent: " + err.Error())}})
		return
	}
	// The app recorded the prompt as added to the turn that just ended;
	// this is the turn it starts (Apply's rule for a queued prompt).
	p.Emit(sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: sid, Detail: "queued prompt sent as a new turn"})
}

// session waits until the session is open and returns its id.
func (p *Process) session() (string, error) {
	return p.Ready.Opened(p.bound(), "gemini", "session", p.dec.session)
}

func (p *Process) bound() time.Duration {
	if p.writeTimeout > 0 {
		return max(p.writeTimeout, readyWait)
	}
	return readyWait
}

// SendPrompt starts a turn with text; a prompt sent while a turn runs is
// queued and starts the next turn when this one ends.
func (p *Process) SendPrompt(text string) error {
	sid, err := p.session()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.dec.inTurn() {
		p.queued = append(p.queued, text)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	return p.startTurn(sid, text)
}

func (p *Process) startTurn(sid, text string) error {
	return p.call(methodPrompt, func(id int64) []byte { return PromptRequest(id, sid, text) })
}

// Interrupt aborts the turn in flight (session/cancel; the CLI answers the
// prompt with stopReason cancelled, measured in 40 ms). Prompts queued
// behind the turn are dropped with it.
func (p *Process) Interrupt() error {
	sid, err := p.session()
	if err != nil {
		return err
	}
	if !p.dec.inTurn() {
		return errors.New("gemini has no turn in flight to interrupt")
	}
	p.mu.Lock()
	p.queued = nil
	p.mu.Unlock()
	return p.Write(CancelNotification(sid))
}

// AnswerPermission answers session/request_permission: allow picks the
// CLI's "Allow" (once), deny its "Reject".
func (p *Process) AnswerPermission(perm sessions.Permission, allow bool, _ string) error {
	req, _ := p.dec.answer(perm.RequestID)
	option := req.reject
	if allow {
		option = agentkit.OrDefault(req.allow, req.allowAll)
	}
	return p.Write(PermissionResponse(rawOf(req, perm.RequestID), option))
}

// Compact cannot compact (see noCompaction): the turn the supervisor
// started for it fails at once with the reason, so the overflow is
// escalated to a person instead of being retried unchanged.
func (p *Process) Compact() error {
	p.Emit(sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.OtherFailure, Message: noCompaction}})
	return nil
}

// chatsHome is the home directory the CLI keeps its chats under: HOME as the
// process will see it (the last value in env wins, as for exec).
func chatsHome(env []string) string {
	home := os.Getenv("HOME")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

// chatNameRE reads the minute out of a chat file's name
// (session-2026-11-30T22-31-49b83a5c.jsonl, UTC).
var chatNameRE = regexp.MustCompile(`^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-[0-9a-f]{8}\.jsonl?$`)

// loadDelay works around a defect of Gemini CLI 0.61.0 (measured): its
// session/load starts recording the session before it reads it, into
// ~/.gemini/tmp/<project>/chats/session-<minute>-<id8>.jsonl named after
// the current minute. When that is the minute the session's newest chat
// file was created in (a resume within the same minute: a crash and the
// supervisor's quick resume), the new recording lands in that very file,
// resets its message list, and the load then finds no conversation
// ("No previous sessions found for this project") and the history is lost
// to the CLI. A load in a later minute writes a new file and works. So the
// load waits for the next minute when the newest file is from this one.
func loadDelay(home, sessionID string, now time.Time) time.Duration {
	if home == "" || len(sessionID) < 8 {
		return 0
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+sessionID[:8]+".json*"))
	now = now.UTC()
	minute := now.Truncate(time.Minute)
	for _, f := range files {
		m := chatNameRE.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		t, err := time.Parse("2006-01-02T15-04", m[1])
		if err == nil && t.Equal(minute) {
			return minute.Add(time.Minute).Sub(now) + time.Second
		}
	}
	return 0
}
