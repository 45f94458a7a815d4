package copilot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/pipeio"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// CommandSetting is the setting that names the Copilot executable; errors
// about a missing binary point the user at it.
const CommandSetting = "agents.copilot.command"

// agentInfo names Copilot CLI to the registry (Agent) and says how its command is
// found.
var agentInfo = agentkit.Info{Name: "copilot", Display: "Copilot CLI", Command: "copilot",
	Install: "npm install -g @github/copilot", Setting: CommandSetting, TerminalResume: TerminalResume}

// TerminalResume: `copilot --resume=ID` opens the TUI on that session
// (the one form copilotterm pairs by the id its command line names).
func TerminalResume(id string) []string { return []string{"--resume=" + id} }

// compactPrompt is Copilot's own slash command: in prompt mode it makes the
// summarizing model call and rewrites the session's history (measured on
// 1.0.102: one request with tool_choice, then a bare `result`).
const compactPrompt = "/compact"

// Process is one Copilot session that the app owns, run one turn per
// `copilot -p` process: the first prompt starts the session with the id the
// app chose (--session-id), every later prompt resumes it in a new process.
// It presents those turns as one sessions.Process: Events stays open across
// turns, PID is the current (or last) turn's process, and a turn's process
// exiting after its `result` line is the turn ending, not the agent. Only a
// turn's process that dies without its result (a crash, a SIGKILL) ends
// Events, so the supervisor sees the exit and resumes the session.
type Process struct {
	opts      ProcessOptions
	path      string
	sessionID string
	events    chan sessions.Event
	stderr    *pipeio.Ring

	mu sync.Mutex // guards everything below
	// cur is the turn in flight (nil between turns).
	cur *turnProc
	// pid is the current or last turn's process id (0 before the first).
	pid int
	// queued are prompts sent while a turn ran: Copilot takes no input
	// mid-turn, so they start the next turn when this one ends.
	queued []string
	// compactNext: a compaction asked for while a turn's process was still
	// finishing (the supervisor decides on the turn's result line, which
	// comes before the process exits); it runs once that process is gone.
	compactNext bool
	// spoke: the session's first line was seen (the session id is then
	// announced once).
	spoke bool
	// closed: no more turns (CloseInput); finished: Events is closed.
	closed, finished bool
	// exitCode and exitSignal are what Wait reports.
	exitCode   int
	exitSignal string
	waited     chan struct{}
	skipped    int64
	// backfill is a resumed session's usage as its events.jsonl held it
	// at the start (spent before this session watched), sent once with
	// the first turn.
	backfill []sessions.UsageReport
}

// turnProc is one turn's `copilot -p` process.
type turnProc struct {
	cmd *exec.Cmd
	dec *Decoder
	// compact: this turn is a /compact.
	compact bool
	// queuedTurn: the turn was started by prompts queued during the
	// previous one (the supervisor saw them as added to that turn).
	queuedTurn bool
	// interrupted: the app sent SIGINT; an exit without a result line is
	// then the abort it asked for.
	interrupted bool
	// child is the process; its liveness calls it dead once it has been
	// gone for agentkit.ExitGrace before its pump finished (the pump reaps
	// it and reports the turn's end in milliseconds): only stdout held open
	// by a tool that outlived Copilot keeps the pump waiting longer.
	child *agentkit.Child
}

// ProcessOptions says how to run the session's turns.
type ProcessOptions struct {
	// Options: WriteTimeout bounds writing a prompt to a turn's stdin.
	agentkit.Options
	// PermissionMode is the session's permission mode (see PermissionArgs).
	PermissionMode string
	// ResumeID continues an existing Copilot session; empty starts a new
	// one with a fresh id.
	ResumeID string
}

// sessionRE is a Copilot session id: a UUID (ids it prints, and the ones
// --session-id accepts).
var sessionRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// PermissionArgs maps the session's permission mode onto Copilot's flags. In
// prompt mode Copilot cannot ask anyone: a tool that needs approval and is
// not allowed up front is denied (it tells the model so; measured on
// 1.0.102). So "default" and "plan" allow nothing beyond what needs no
// approval, "acceptEdits" allows file writes, and "bypassPermissions" (or
// Copilot's own word, "allow-all") allows every tool, path and URL.
func PermissionArgs(mode string) []string {
	switch mode {
	case "bypassPermissions", "dontAsk", "allow-all", "yolo":
		return []string{"--allow-all"}
	case "acceptEdits":
		return []string{"--allow-tool=write"}
	}
	return nil
}

// Args is one turn's command line (after the program name): the prompt is
// read from stdin (no argument-length limit), the JSONL events on stdout.
func Args(sessionID, permissionMode string) []string {
	args := []string{"--output-format", "json", "--session-id=" + sessionID,
		"--no-auto-update", "--no-ask-user", "--no-color"}
	return append(args, PermissionArgs(permissionMode)...)
}

// launch prepares a Copilot CLI session from the registry's options (its first
// process starts with the first prompt).
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{Options: agentkit.OptionsOf(o), PermissionMode: o.PermissionMode, ResumeID: o.ResumeID})
}

// Start prepares the session: it resolves the command and the session id;
// the first process starts with the first prompt.
func Start(opts ProcessOptions) (*Process, error) {
	id := opts.ResumeID
	if id != "" && !sessionRE.MatchString(id) {
		return nil, fmt.Errorf("copilot launch options: invalid session id %q", agentkit.Clip(id))
	}
	if id == "" {
		id = sessions.NewUUID()
	}
	path, err := agentInfo.LookPath(opts.Command)
	if err != nil {
		return nil, err
	}
	if opts.Cwd != "" {
		if st, err := os.Stat(opts.Cwd); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("copilot working directory %s: not a directory (%v)", opts.Cwd, err)
		}
	}
	p := &Process{opts: opts, path: path, sessionID: id, events: make(chan sessions.Event, 64),
		stderr: &pipeio.Ring{Max: agentkit.StderrKeep}, waited: make(chan struct{})}
	if opts.ResumeID != "" {
		p.backfill = usageReports(EventsPath(opts.Env, id), id)
		for i := range p.backfill {
			p.backfill[i].Backfill = true
		}
	}
	return p, nil
}

// SessionID is Copilot's id for the session.
func (p *Process) SessionID() string { return p.sessionID }

// PID is the current turn's process, or the last one's between turns (0
// before the first prompt).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Events yields the decoded stream of every turn; it is closed when the
// session's processes are done (CloseInput between turns, or a turn's
// process that died without finishing its turn).
func (p *Process) Events() <-chan sessions.Event { return p.events }

// SkippedLines counts malformed, unknown and oversize lines of all turns.
func (p *Process) SkippedLines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.skipped
	if p.cur != nil {
		n += p.cur.dec.Stats().Skipped()
	}
	return int(n)
}

// StderrTail is the last few KB of stderr (diagnostics only; never persisted).
func (p *Process) StderrTail() string { return p.stderr.String() }

// SendPrompt starts a turn with text, or queues it for the next turn when
// one is in flight (Copilot reads no input mid-turn).
func (p *Process) SendPrompt(text string) error {
	return p.turn(false, text, pipeio.ErrInputClosed, func() { p.queued = append(p.queued, text) })
}

// Compact runs Copilot's /compact as a turn of its own: at once between
// turns, or as soon as the turn's process in flight has exited.
func (p *Process) Compact() error {
	return p.turn(true, compactPrompt, errors.New("copilot can compact only in an open session"), func() { p.compactNext = true })
}

// turn starts a turn's process (compact: a /compact turn) and writes text
// to it, at once between turns. With a turn in flight it calls later
// (under the lock) to leave a note for when that turn's process has
// exited, since a process takes no input mid-turn; a closed session fails
// with closed.
func (p *Process) turn(compact bool, text string, closed error, later func()) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return closed
	}
	if p.cur != nil {
		later()
		p.mu.Unlock()
		return nil
	}
	stdin, err := p.startLocked(compact, false)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return p.writePrompt(stdin, text)
}

// startLocked starts one turn's process and returns its stdin, for the
// prompt to be written outside the lock.
func (p *Process) startLocked(compact, queued bool) (*pipeio.Input, error) {
	child, err := agentkit.Start(agentkit.Spec{Agent: "copilot", Path: p.path, Args: Args(p.sessionID, p.opts.PermissionMode),
		Cwd: p.opts.Cwd, Env: p.opts.Env, Stdin: true, WriteTimeout: p.opts.WriteTimeout, Stderr: p.stderr})
	if err != nil {
		return nil, err
	}
	cmd := child.Cmd
	t := &turnProc{cmd: cmd, dec: NewDecoder(child.Stdout, p.opts.MaxLine), compact: compact, queuedTurn: queued, child: child}
	p.cur, p.pid = t, cmd.Process.Pid
	go p.pump(t)
	return child.Input, nil
}

// writePrompt writes the prompt as the whole of a turn's stdin: Copilot
// reads it to its end (no argument-length limit, nothing on the command
// line for ps to show). A process that does not read it within the write
// timeout fails the write; the caller's escalation stops it and its pump
// reports the exit.
func (p *Process) writePrompt(stdin *pipeio.Input, text string) error {
	err := stdin.WriteLine([]byte(text))
	_ = stdin.Close()
	if err != nil {
		return fmt.Errorf("writing the prompt to copilot: %w", err)
	}
	return nil
}

// pump decodes one turn's stdout into Events, then decides what its exit
// means for the session.
func (p *Process) pump(t *turnProc) {
	// The turn's process is not waited for yet, so its pid is still its
	// own: its stamp is what the orphan reaper will check.
	stamp, _ := procscan.Probe(t.cmd.Process.Pid)
	p.send(sessions.Event{Kind: sessions.EvProcessStarted, PID: t.cmd.Process.Pid, PIDStart: stamp.Stamp, AgentSessionID: p.sessionID})
	if t.queuedTurn {
		// Prompts sent during the last turn start this one; Apply
		// supervises it as the turn those prompts started.
		p.send(sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: p.sessionID})
	}
	if t.compact {
		p.send(sessions.Event{Kind: sessions.EvCompactionStarted})
	}
	p.mu.Lock()
	backfill := p.backfill
	p.backfill = nil
	p.mu.Unlock()
	for _, u := range backfill {
		p.send(sessions.Event{Kind: sessions.EvMetrics, Detail: "session.usage_record", Usage: &u})
	}
	var ended, failed bool
	for {
		line, err := t.dec.Next()
		if err != nil {
			break
		}
		for _, ev := range line.Events {
			switch ev.Kind {
			case sessions.EvTurnCompleted, sessions.EvTurnFailed, sessions.EvTurnAborted:
				ended = true
				failed = ev.Kind != sessions.EvTurnCompleted
				if t.compact {
					p.send(sessions.Event{Kind: sessions.EvCompactionFinished, OK: !failed})
				}
			}
			p.send(ev)
		}
	}
	werr := t.cmd.Wait()
	// The turn's model calls are in the session's events.jsonl, written
	// by the process that just ended.
	for _, u := range usageReports(EventsPath(p.opts.Env, p.sessionID), p.sessionID) {
		p.send(sessions.Event{Kind: sessions.EvMetrics, Detail: "session.usage_record", Usage: &u})
	}
	code, sig := proctree.ExitStatus(t.cmd.ProcessState)
	if werr != nil && t.cmd.ProcessState == nil {
		code = -1
	}
	p.mu.Lock()
	interrupted := t.interrupted
	p.mu.Unlock()
	if !ended && interrupted {
		// SIGINT before Copilot printed its result: the abort the app
		// asked for. Sent while cur is still this turn, so Events cannot
		// be closed under it.
		ended = true
		if t.compact {
			p.send(sessions.Event{Kind: sessions.EvCompactionFinished, OK: false})
		}
		p.send(sessions.Event{Kind: sessions.EvTurnAborted, Detail: "interrupted"})
	}
	if !ended && t.compact && sig == "" {
		// Copilot refuses a compaction by exiting without a result
		// ("Nothing to compact." on stderr, exit 1; measured on
		// 1.0.102): the compaction failed, the agent did not. (Killed
		// by a signal, it is a crash like any turn's.)
		ended = true
		why := agentkit.OrDefault(sessions.StderrLine(p.stderr.String()), fmt.Sprintf("copilot exited with code %d", code))
		p.send(sessions.Event{Kind: sessions.EvCompactionFinished, OK: false, Detail: why})
		p.send(sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.ContextOverflow,
			Message: sessions.SanitizeMessage("compaction failed: " + why)}})
	}
	p.mu.Lock()
	p.skipped += t.dec.Stats().Skipped()
	p.cur = nil
	switch {
	case !ended:
		// The turn's process died mid-turn: that is the agent's exit.
		p.exitCode, p.exitSignal = code, sig
		p.finishLocked()
	case p.closed:
		p.finishLocked()
	case p.compactNext:
		// Before queued prompts: they go to the compacted context.
		p.compactNext = false
		p.nextLocked(true, false, compactPrompt, "the compaction")
		return
	case len(p.queued) > 0:
		text := strings.Join(p.queued, "\n\n")
		p.queued = nil
		p.nextLocked(false, true, text, "the queued turn")
		return
	}
	p.mu.Unlock()
}

// nextLocked starts the turn that waited for the one whose process exited
// (compact: the compaction; queued: the queued prompts) and writes its
// text, unlocking p.mu. A start that fails ends the session, said where a
// start failure is read (the stderr tail); a write that fails is its
// pump's to report, as a turn that never ran.
func (p *Process) nextLocked(compact, queued bool, text, what string) {
	stdin, err := p.startLocked(compact, queued)
	if err != nil {
		_, _ = fmt.Fprintf(p.stderr, "starting %s: %v\n", what, err)
		p.exitCode = -1
		p.finishLocked()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = p.writePrompt(stdin, text)
}

// send delivers one event. Only a turn's pump sends, and Events is closed
// only when no pump runs (or by the pump itself, after its last send).
func (p *Process) send(ev sessions.Event) {
	if ev.Kind != sessions.EvProcessStarted && ev.Kind != sessions.EvCompactionStarted {
		p.mu.Lock()
		first := !p.spoke
		p.spoke = true
		p.mu.Unlock()
		if first && ev.AgentSessionID == "" {
			ev.AgentSessionID = p.sessionID
		}
	}
	p.events <- ev
}

// finishLocked closes Events once: nothing more will come.
func (p *Process) finishLocked() {
	if p.finished {
		return
	}
	p.finished = true
	p.closed = true
	close(p.events)
}

// Interrupt aborts the turn in flight: SIGINT to its process group, which
// Copilot answers with an `abort` event and its result (measured on
// 1.0.102; the npm wrapper alone would leave the native binary running).
func (p *Process) Interrupt() error {
	p.mu.Lock()
	t := p.cur
	if t != nil {
		t.interrupted = true
	}
	p.mu.Unlock()
	if t == nil {
		return errors.New("copilot has no turn in flight to interrupt")
	}
	return interruptGroup(t.cmd.Process)
}

// AnswerPermission is refused: in prompt mode Copilot asks no one (its
// permissions are the flags the session started with, PermissionArgs).
func (p *Process) AnswerPermission(sessions.Permission, bool, string) error {
	return errors.New("copilot runs with the permission mode chosen at launch; it has no pending question to answer")
}

// CloseInput ends the session: no more turns; the one in flight finishes
// first.
func (p *Process) CloseInput() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.queued = nil
	if p.cur == nil {
		p.finishLocked()
	}
	return nil
}

// Signal signals the current turn's process group; with no turn running
// there is nothing to signal, and a terminating signal ends the session.
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	t := p.cur
	if t == nil {
		if terminating(sig) {
			p.closed = true
			p.finishLocked()
		}
		p.mu.Unlock()
		return nil
	}
	if terminating(sig) {
		p.closed = true
	}
	p.mu.Unlock()
	return signalGroup(t.cmd.Process, sig)
}

// Wait reports how the session's processes ended (call after Events is
// closed): the exit code, or the signal that killed the turn's process.
func (p *Process) Wait() (int, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.finished {
		return -1, "", errors.New("copilot: Wait called before Events was closed")
	}
	return p.exitCode, p.exitSignal, nil
}

// Alive reports whether the turn's process runs; between turns there is
// none to run and the session is ready for its next prompt.
func (p *Process) Alive() (alive, known bool) {
	p.mu.Lock()
	t, finished := p.cur, p.finished
	p.mu.Unlock()
	if finished {
		return false, true
	}
	if t == nil {
		return true, true
	}
	alive, known = t.child.Alive()
	if !known || alive {
		return alive, known
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != t {
		return true, true // the turn ended meanwhile
	}
	return false, true
}

// processAlive probes pid: running and not a zombie. Known is false where
// the process table cannot tell (not Linux).
func processAlive(pid int) (alive, known bool) {
	switch _, st := procscan.Probe(pid); st {
	case procscan.Running:
		return true, true
	case procscan.Gone:
		return false, true
	}
	return false, false
}
