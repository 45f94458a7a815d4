package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// Store is what the runtime needs from storage.
type Store interface {
	SaveSessionWithEvents(ctx context.Context, s sessions.Session, events []storage.TimelineEvent) error
	AppendEvent(ctx context.Context, ev storage.TimelineEvent) (int64, error)
	// SetEventOutcome completes an action's intent row with its outcome.
	SetEventOutcome(ctx context.Context, id int64, outcome string) error
	// PendingIntents are intent rows whose outcome was never recorded.
	PendingIntents(ctx context.Context) ([]storage.TimelineEvent, error)
	ListSessions(ctx context.Context) ([]sessions.Session, error)
	Timeline(ctx context.Context, sessionID string, limit int) ([]storage.TimelineEvent, error)
}

// Runtime is the in-process supervisor: it owns the agent processes, applies
// their events to the sessions, persists every change with its timeline rows,
// and publishes it. Decisions are made by sessions.Apply and Reconcile; the
// runtime only executes them.
//
// Locking: mu guards the sessions map and every entry's session value and
// process pointer, and it is held only for decisions and in-memory changes.
// No SQLite access, no write to an agent's stdin, no spawn, no signal and no
// /proc read ever happens under it: changes go to the writer (ordered,
// batched, outside the lock) and side effects to the session's serial queue.
// A reader (the API, the tray, the window) therefore never waits on an agent
// or on the disk.
type Runtime struct {
	store  Store
	bus    *localapi.Bus
	agents map[string]Agent
	// defaultAgent launches a request that names none (Options.DefaultAgent).
	defaultAgent string
	log          *slog.Logger
	settings     func() settings.Settings
	w            *writer
	health       healthStats
	values       func() []settings.Value
	// locate is Options.LocateTerminal (nil: terminals are not located).
	locate locateFunc
	// connectivity is asked once per tick, outside the lock.
	connectivity func() Connectivity
	// writeTimeout bounds one write to an agent's stdin.
	writeTimeout time.Duration
	// external are the sources of sessions the app did not launch (external.go).
	external []ExternalSource
	// nudgeVerify bounds the wait for a terminal session to show that a
	// nudge delivered through its source arrived (external.go).
	nudgeVerify time.Duration
	// bootProbe is Boot's probe of a stored terminal session's process
	// (probeStored: /proc); the soak test replaces it with its own world.
	bootProbe func(sessions.Session) core.Probe
	// prices turn tokens into their equivalent API cost (Options.Prices).
	prices *pricing.Table

	mu sync.Mutex
	// ledger is today's spending (budget.go); today what the views were
	// last told of it.
	ledger ledger
	today  localapi.DayUsage
	sess   map[string]*entry
	// aliases map the id a terminal source's key would have
	// (externalID) to the session handed over to it (handover.go).
	aliases map[string]string
	// starting are the agent conversations a process is being started on
	// (claimConversationLocked): two starts on one conversation, decided on
	// two sessions' queues at once, must not both go ahead.
	starting map[string]bool
	// procs counts live process pumps, so a graceful quit can wait for them.
	procs sync.WaitGroup
	// jobs counts running serial queues.
	jobs sync.WaitGroup
	// loopWork counts what Run started besides its own loop (the terminal
	// sources' watchers and pumps, the pruner): Run returns once they have.
	loopWork sync.WaitGroup
}

// entry is one session and, when managed and running, its process.
type entry struct {
	s    sessions.Session
	proc Process
	// q runs this session's side effects in order, outside the lock.
	q *serial
	// exited is closed when the exit of the process started last is
	// observed (so a launch can report why its agent died at once).
	exited chan struct{}
	// changed is the session as a running job's own change left it, for
	// the job's answer (zero when no job changed it).
	changed sessions.Session
	// ext links an observed session to its source (nil when managed).
	ext *extHandle
	// locatedAt is when its terminal was last located (refreshTerminals).
	locatedAt time.Time
	// recorded is the session's observed usage (its whole-life usage but
	// for what was backfilled) as last written to the usage history
	// (budget.go): what it grows by is the next rows.
	recorded sessions.Usage
	// pricedUsage is the usage pricedCost is the equivalent API cost of,
	// so the tick prices a session's budget again only when it changed.
	pricedUsage sessions.Usage
	pricedCost  pricing.Micros
	// forgotten: the user forgot the session; it left the map, and
	// nothing that still holds the entry (a queued action, a late event)
	// may write it back.
	forgotten bool
}

// Options configures a Runtime.
type Options struct {
	Store  Store
	Agents map[string]Agent
	// DefaultAgent launches a request that names no agent: the registry's
	// default (the root's agents.go), as the runtime names no agent itself.
	// Empty: such a request is refused.
	DefaultAgent string
	Logger       *slog.Logger
	// Settings returns the current settings (in memory: the settings
	// service's Get). Nil means the defaults (settings.Defaults).
	Settings func() settings.Settings
	// SettingValues, when set, lists every setting's value in force: a new
	// subscriber gets it after its snapshot, so a desktop knows the
	// settings it obeys without asking.
	SettingValues func() []settings.Value
	// WriteTimeout bounds one write to an agent's stdin (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Connectivity tells, once per tick, whether the machine is offline
	// (nil: ProbeConnectivity). A session with a transient failure is held
	// without spending its window while offline.
	Connectivity func() Connectivity
	// External are the sources of sessions the app did not launch (an
	// agent in a terminal); Run starts their discovery.
	External []ExternalSource
	// NudgeVerify bounds how long a nudge into a terminal session may take
	// to show (0: DefaultNudgeVerify).
	NudgeVerify time.Duration
	// LocateTerminal, when set, says where a terminal session's process
	// lives (termsys.Locate); the tick refreshes Session.Terminal with it.
	LocateTerminal func(ctx context.Context, pid int) (*termloc.Location, error)
	// Prices price the budgets' and the day's equivalent API cost (nil:
	// the built-in table).
	Prices *pricing.Table
}

// DefaultWriteTimeout is how long an agent may leave a prompt unread before
// the delivery counts as failed: far longer than any live agent needs to
// drain a pipe, short enough that a wedged one is reported.
const DefaultWriteTimeout = 30 * time.Second

// New returns a runtime; call Boot before serving.
func New(opts Options) *Runtime {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{store: opts.Store, bus: localapi.NewBus(), agents: opts.Agents, defaultAgent: opts.DefaultAgent, log: log, sess: map[string]*entry{}, aliases: map[string]string{},
		writeTimeout: opts.WriteTimeout, external: opts.External, nudgeVerify: opts.NudgeVerify, bootProbe: probeStored}
	if r.nudgeVerify <= 0 {
		r.nudgeVerify = DefaultNudgeVerify
	}
	if r.writeTimeout <= 0 {
		r.writeTimeout = DefaultWriteTimeout
	}
	r.w = newWriter(opts.Store, log)
	r.values = opts.SettingValues
	r.locate = opts.LocateTerminal
	r.connectivity = opts.Connectivity
	if r.connectivity == nil {
		r.connectivity = defaultConnectivity()
	}
	r.settings = opts.Settings
	if r.settings == nil {
		r.settings = settings.Defaults
	}
	r.prices = opts.Prices
	if r.prices == nil {
		r.prices = pricing.Builtin()
	}
	r.ledger.roll(core.Day(time.Now()))
	return r
}

func (r *Runtime) newEntry(s sessions.Session) *entry {
	return &entry{s: s, q: newSerial(&r.jobs), recorded: s.Usage.Observed()}
}

// Bus is the runtime's event bus.
func (r *Runtime) Bus() *localapi.Bus { return r.bus }

// Boot loads every persisted session. A managed session whose persisted
// state shows a turn in flight was cut off when the app last stopped: it
// loads as Interrupted, never silently Idle. A terminal session's process
// is probed first (its pid and start stamp): only a turn whose process died
// while the app was down is Interrupted; a live one is followed again. It runs before anything else uses the
// runtime and waits for its writes.
func (r *Runtime) Boot(ctx context.Context) error {
	list, err := r.loadSessions(ctx)
	if err != nil {
		return fmt.Errorf("loading sessions: %w", err)
	}
	pending, err := r.store.PendingIntents(ctx)
	if err != nil {
		return fmt.Errorf("reading unfinished actions: %w", err)
	}
	now := time.Now()
	day, err := r.loadLedger(ctx, now)
	if err != nil {
		return fmt.Errorf("reading today's usage: %w", err)
	}
	type booted struct {
		e    *entry
		next sessions.Session
		rows []storage.TimelineEvent
	}
	var todo []booted
	for _, s := range list {
		// A signal, and /proc read: outside the lock.
		orphan := r.reapOrphan(s)
		next, obs, changed := core.BootReconcile(s, now, r.bootProbe(s))
		var rows []storage.TimelineEvent
		if changed {
			// Not nil even without an observation: the session is saved.
			rows = observationRows(next, now, obs)
		}
		switch {
		case orphan != "" && len(rows) > 0:
			rows[0].Detail = editDetail(rows[0].Detail, func(d *sessions.TimelineDetail) { d.Orphan = orphan })
		case orphan != "":
			// Nothing else changed (no turn was in flight): the orphan
			// still leaves its own row.
			rows = append(rows, newRow(next, now, core.TimelineOrphanReaped,
				sessions.TimelineDetail{Message: orphan, Orphan: orphan, PID: s.PID}))
		}
		todo = append(todo, booted{r.newEntry(s), next, rows})
	}
	r.mu.Lock()
	r.ledger = day
	for _, b := range todo {
		r.sess[b.e.s.ID] = b.e
		if b.e.s.TerminalKey != "" {
			r.aliases[externalID(b.e.s.Agent, b.e.s.TerminalKey)] = b.e.s.ID
		}
		if b.rows != nil {
			// boot_reconciled already records the state change.
			r.commitRowsLocked(b.e, b.next, b.rows, false, false)
		}
	}
	r.reportUncertainLocked(pending)
	r.mu.Unlock()
	r.w.settle()
	return nil
}

// Sessions returns every session but the archived ones, needing attention
// first, then newest: what the tray, the window and `ls` show.
func (r *Runtime) Sessions() []sessions.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessionsLocked(false)
}

// AllSessions is Sessions with the archived ones (`ls --all`).
func (r *Runtime) AllSessions() []sessions.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessionsLocked(true)
}

func (r *Runtime) sessionsLocked(archived bool) []sessions.Session {
	out := make([]sessions.Session, 0, len(r.sess))
	for _, e := range r.sess {
		if archived || e.s.ArchivedAt.IsZero() {
			out = append(out, e.s.Clone())
		}
	}
	localapi.SortSessions(out)
	return out
}

// Session returns one session by id or unique id prefix.
func (r *Runtime) Session(id string) (sessions.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.findLocked(id)
	if err != nil {
		return sessions.Session{}, err
	}
	return e.s.Clone(), nil
}

// Timeline returns a session's timeline, newest first.
func (r *Runtime) Timeline(ctx context.Context, id string, limit int) ([]localapi.TimelineRow, error) {
	s, err := r.Session(id)
	if err != nil {
		return nil, err
	}
	return r.store.Timeline(ctx, s.ID, limit)
}

func (r *Runtime) findLocked(id string) (*entry, error) {
	if e, ok := r.sess[id]; ok {
		return e, nil
	}
	var found *entry
	if id != "" {
		for sid, e := range r.sess {
			if strings.HasPrefix(sid, id) {
				if found != nil {
					return nil, invalidf("session id prefix %q is ambiguous", id)
				}
				found = e
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w %q", localapi.ErrNotFound, id)
	}
	return found, nil
}

// Launch starts a new managed session and sends its first prompt. The
// process is spawned and the prompt written on the session's own queue, not
// under the runtime's lock; Launch waits for both (and for the rows to be on
// disk) or for ctx.
func (r *Runtime) Launch(ctx context.Context, req localapi.LaunchRequest) (sessions.Session, error) {
	if req.Agent == "" {
		req.Agent = r.defaultAgent
	}
	if req.Agent == "" {
		return sessions.Session{}, invalidf("the request names no agent (known: %s)", strings.Join(r.agentNames(), ", "))
	}
	if _, ok := r.agents[req.Agent]; !ok {
		return sessions.Session{}, invalidf("unknown agent %q (known: %s)", req.Agent, strings.Join(r.agentNames(), ", "))
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return sessions.Session{}, invalidf("the first prompt is empty")
	}
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return sessions.Session{}, invalidf("working directory %q is not a directory", req.Cwd)
	}
	now := time.Now()
	e := r.newEntry(sessions.Session{
		// Without a name, the prompt names it as a terminal session's
		// does: an id prefix in the tray and a notification says nothing.
		ID: sessions.NewUUID(), Name: cmp.Or(req.Name, sessions.PromptTitle(req.Prompt)), Agent: req.Agent, Cwd: req.Cwd, Source: sessions.Managed,
		PermissionMode: req.PermissionMode, CreatedAt: now, UpdatedAt: now, StateChangedAt: now,
		Evidence: "launching",
	})
	return r.job(ctx, e, func() (<-chan writeResult, error) {
		proc, err := r.spawn(e, "")
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.sess[e.s.ID] = e
		r.attachLocked(e, proc, "")
		r.mu.Unlock()
		done, err := r.deliverPrompt(e, req.Prompt, sessions.ByUser, "prompt_sent")
		if err != nil {
			return done, r.launchError(e, proc, err)
		}
		return done, nil
	})
}

// launchError explains a first prompt that could not be delivered. When the
// agent died at once (a bad install, a bad flag), the useful answer is its
// exit and its last stderr line, not "broken pipe": wait briefly for the
// exit to be observed.
func (r *Runtime) launchError(e *entry, proc Process, err error) error {
	r.mu.Lock()
	exited := e.exited
	r.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(launchExitWait):
		}
	}
	r.mu.Lock()
	s := e.s.Clone()
	r.mu.Unlock()
	if s.ProcessAlive {
		return err
	}
	return conflictf("%s", launchFailurePhrase(s.Agent, s.LastExitCode, sessions.StderrLine(proc.StderrTail())))
}

// launchExitWait bounds how long a failed launch waits for its agent's exit.
const launchExitWait = 3 * time.Second

// launchFailurePhrase: "claude exited with code 1 before its first turn: fatal: cannot start".
func launchFailurePhrase(agent string, code *int, line string) string {
	how := "exited"
	if code != nil {
		how = fmt.Sprintf("exited with code %d", *code)
	}
	msg := fmt.Sprintf("%s %s before its first turn", agent, how)
	if line != "" {
		msg += ": " + line
	}
	return msg
}

func (r *Runtime) agentNames() []string {
	var names []string
	for n := range r.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// jobFor is job for the session named id (an error when there is none),
// what every command on one session starts with.
func (r *Runtime) jobFor(ctx context.Context, id string, fn func(e *entry) (<-chan writeResult, error)) (sessions.Session, error) {
	e, err := r.find(id)
	if err != nil {
		return sessions.Session{}, err
	}
	return r.job(ctx, e, func() (<-chan writeResult, error) { return fn(e) })
}

// job runs fn on e's serial queue and waits for it, then for its rows to be
// written (a change the API acknowledges was handed to the disk, and is on
// it unless the disk is failing: then it stays in memory, is retried, and
// the health endpoint counts it). A caller that gives up (ctx) leaves the
// job to finish on its own. The session returned is the one fn's change
// produced (later stream events are the bus's business), or the current one
// when fn changed nothing.
func (r *Runtime) job(ctx context.Context, e *entry, fn func() (<-chan writeResult, error)) (sessions.Session, error) {
	type result struct {
		s    sessions.Session
		done <-chan writeResult
		err  error
	}
	res := make(chan result, 1)
	e.q.do(func() {
		r.mu.Lock()
		e.changed = sessions.Session{}
		r.mu.Unlock()
		done, err := fn()
		r.mu.Lock()
		s := e.changed
		e.changed = sessions.Session{}
		if s.ID == "" {
			s = e.s.Clone()
		}
		r.mu.Unlock()
		res <- result{s, done, err}
	})
	var got result
	select {
	case got = <-res:
	case <-ctx.Done():
		return r.current(e), unavailablef("waiting for session %s: %v", e.s.ID, ctx.Err())
	}
	if got.done != nil {
		select {
		case <-got.done:
			// A failed write was logged by the writer and is retried.
		case <-ctx.Done():
			return got.s, unavailablef("waiting for the database: %v", ctx.Err())
		}
	}
	return got.s, got.err
}

// current is a copy of e's session.
func (r *Runtime) current(e *entry) sessions.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.s.Clone()
}

// spawn starts e's agent process (resuming the agent's session when
// resumeID is set). It runs on e's queue, outside the lock.
func (r *Runtime) spawn(e *entry, resumeID string) (Process, error) {
	r.mu.Lock()
	agentName, cwd, mode := e.s.Agent, e.s.Cwd, e.s.PermissionMode
	r.mu.Unlock()
	agent := r.agents[agentName]
	if agent == nil {
		return nil, conflictf("unknown agent %q", agentName)
	}
	set := r.settings()
	proc, err := agent.Start(context.Background(), StartOptions{
		Command: agentCommand(set, agentName), Cwd: cwd, PermissionMode: mode, ResumeID: resumeID,
		WriteTimeout: r.writeTimeout,
	})
	if err != nil {
		return nil, conflictf("launching %s: %v", agentName, err)
	}
	return proc, nil
}

// processStartedText is the process_started row's sentence. An agent that
// runs one process per turn (Copilot) has none until its first prompt: say
// that rather than "process 0".
func processStartedText(agent string, pid int, how, cwd string) string {
	if pid == 0 {
		return fmt.Sprintf("%s %s in %s (its process starts with each turn)", agent, how, cwd)
	}
	return fmt.Sprintf("%s process %d %s in %s", agent, pid, how, cwd)
}

// attachLocked makes proc e's process and starts its event pump.
func (r *Runtime) attachLocked(e *entry, proc Process, resumeID string) <-chan writeResult {
	e.proc = proc
	e.exited = make(chan struct{})
	how := "started"
	if resumeID != "" {
		how = "resumed session " + resumeID
	}
	done := r.applyLocked(e, sessions.Event{Kind: sessions.EvProcessStarted, PID: proc.PID(), PIDStart: startStamp(proc.PID())},
		newRow(e.s, time.Now(), "process_started", sessions.TimelineDetail{
			Message: processStartedText(e.s.Agent, proc.PID(), how, e.s.Cwd), PID: proc.PID(),
		}))
	r.procs.Add(1)
	go r.pump(e.s.ID, proc, e.exited)
	return done
}

// ensureProcess returns e's live process, resuming the agent's session
// when it is gone. It runs on e's queue.
func (r *Runtime) ensureProcess(e *entry) (Process, error) {
	r.mu.Lock()
	proc, src, resumeID, name := e.proc, e.s.Source, e.s.AgentSessionID, e.s.DisplayName()
	r.mu.Unlock()
	if proc != nil {
		return proc, nil
	}
	if src != sessions.Managed {
		return nil, conflictf("session %s is not managed by the app; answer it where it runs", name)
	}
	if resumeID == "" {
		return nil, conflictf("session %s has no agent session id to resume", name)
	}
	r.mu.Lock()
	release, err := r.claimConversationLocked(e)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("starting session %s's agent again: %w", name, err)
	}
	defer release()
	proc, err = r.spawn(e, resumeID)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	// The app runs it again: a hand-over that waited for its terminal
	// (one that failed to open) is off.
	e.s.HandoverAt = time.Time{}
	r.attachLocked(e, proc, resumeID)
	r.mu.Unlock()
	return proc, nil
}

// agentCommand is the agent's agents.NAME.command setting (registered from
// the agent registry), or the agent's name for one without a setting.
func agentCommand(s settings.Settings, agent string) string {
	if c := s.AgentCommand(agent); c != "" {
		return c
	}
	return agent
}

// pump feeds a process's events into the session until stdout ends, then
// records how the process exited.
func (r *Runtime) pump(id string, proc Process, exited chan struct{}) {
	defer r.procs.Done()
	for ev := range proc.Events() {
		r.observe(id, proc, ev)
	}
	code, sig, err := proc.Wait()
	if err != nil {
		r.log.Warn("waiting for agent process", "session", id, "err", err)
	}
	r.observe(id, proc, sessions.Event{Kind: sessions.EvProcessExited, ExitCode: code, Signal: sig,
		Stderr: sessions.StderrLine(proc.StderrTail())})
	close(exited)
}

// observe applies one event from proc, unless proc is no longer the
// session's current process (a stale process after a resume).
func (r *Runtime) observe(id string, proc Process, ev sessions.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.sess[id]
	if !ok || e.proc != proc {
		return
	}
	if ev.Kind == sessions.EvProcessExited {
		// Count lines skipped after the last event before the process is
		// dropped: applyLocked reads the counter from e.proc.
		e.s.SkippedLines = proc.SkippedLines()
		e.proc = nil
	}
	r.applyLocked(e, ev)
}

// Send sends a prompt: into the running turn, as a new turn on the live
// process, or by resuming the agent's session when its process is gone.
func (r *Runtime) Send(ctx context.Context, id, prompt string) (sessions.Session, error) {
	if strings.TrimSpace(prompt) == "" {
		return sessions.Session{}, invalidf("the prompt is empty")
	}
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		return r.deliverPrompt(e, prompt, sessions.ByUser, "prompt_sent")
	})
}

// deliverPrompt delivers text to e's agent, resuming the process when
// needed; it runs on e's queue. The turn it starts is applied before the
// write, under the lock, so the agent's first answer can never arrive before
// the turn it belongs to; the write itself happens outside the lock, with a
// deadline. kind is the timeline row recorded for it ("" when the caller
// already recorded it: a supervisor action's intent row).
func (r *Runtime) deliverPrompt(e *entry, text string, by sessions.Actor, kind string) (<-chan writeResult, error) {
	proc, err := r.ensureProcess(e)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if e.proc != proc {
		r.mu.Unlock()
		return nil, conflictf("session %s: the agent process changed while the prompt was being sent", e.s.DisplayName())
	}
	now := time.Now()
	var rows []storage.TimelineEvent
	var done <-chan writeResult
	if e.s.InTurn {
		// A prompt sent mid-turn joins the running turn; it does not start one.
		if kind != "" {
			rows = append(rows, newRow(e.s, now, kind, sessions.TimelineDetail{Message: "prompt added to the running turn", By: by.String()}))
		}
		done = r.applyLocked(e, sessions.Event{Kind: sessions.EvPromptAdded, By: by, Detail: "prompt added to the running turn"}, rows...)
	} else {
		if kind != "" {
			row := newRow(e.s, now, kind, sessions.TimelineDetail{Message: "prompt sent by the " + by.String(), By: by.String()})
			row.TurnGeneration++ // the row belongs to the turn it starts
			rows = append(rows, row)
		}
		done = r.applyLocked(e, sessions.Event{Kind: sessions.EvTurnStarted, By: by}, rows...)
	}
	e.changed = e.s.Clone()
	r.mu.Unlock()
	if err := proc.SendPrompt(text); err != nil {
		return r.deliveryFailed(e, proc, "the prompt", len(text), err)
	}
	return done, nil
}

// deliveryFailed records a write to an agent's stdin that did not happen.
// An agent that stopped reading its input (the write's deadline passed) is
// a fault of the session: its turn fails with that evidence, the partly
// written input is closed, and the process is stopped, so the user (or a
// resume) starts clean. The app itself never waits on it again.
func (r *Runtime) deliveryFailed(e *entry, proc Process, what string, size int, err error) (<-chan writeResult, error) {
	blocked := errors.Is(err, os.ErrDeadlineExceeded)
	r.mu.Lock()
	defer r.mu.Unlock()
	name := e.s.DisplayName()
	if !blocked {
		return nil, conflictf("sending %s to %s: %v", what, name, err)
	}
	msg := fmt.Sprintf("the agent stopped reading its input: %s (%s) was not delivered within %s", what, byteSize(size), core.HumanSpan(r.writeTimeout))
	r.log.Warn("agent stopped reading its input", "session", e.s.ID, "bytes", size)
	_ = proc.CloseInput()
	if sigErr := proc.Signal(syscall.SIGTERM); sigErr != nil {
		r.log.Warn("stopping an agent whose input is blocked", "session", e.s.ID, "err", sigErr)
	}
	var done <-chan writeResult
	if e.proc == proc {
		done = r.applyLocked(e, sessions.Event{Kind: sessions.EvTurnFailed,
			Failure: sessions.Failure{Kind: sessions.OtherFailure, Message: msg}},
			newRow(e.s, time.Now(), "input_blocked", sessions.TimelineDetail{Message: msg + "; the agent process was stopped", Bytes: size}))
		e.changed = e.s.Clone()
	}
	return done, conflictf("session %s: %s", name, msg)
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// find looks a session up by id or unique prefix.
func (r *Runtime) find(id string) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.findLocked(id)
}

// Interrupt asks the agent to abort the turn in flight at the user's request.
func (r *Runtime) Interrupt(ctx context.Context, id string) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		name, proc := e.s.DisplayName(), e.proc
		if !e.s.InTurn {
			r.mu.Unlock()
			return nil, conflictf("session %s has no turn in flight", name)
		}
		if proc == nil && e.ext != nil && e.ext.live {
			// A session started in a terminal is never signalled, and its
			// only way in (the inbox) would type the nudge into it: the stop
			// is recorded as the user's, so the turn's end reads as theirs,
			// and a turn still running after the interrupt grace is
			// escalated (core.Reconcile) for the user to stop it there.
			done := r.applyLocked(e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.ByUser},
				newRow(e.s, time.Now(), "interrupt_requested", sessions.TimelineDetail{By: sessions.ByUser.String(),
					Message: "interrupt requested by the user; the session runs in a terminal the app did not launch, which it never signals: stop the turn there (Esc)"}))
			e.changed = e.s.Clone()
			r.mu.Unlock()
			return done, nil
		}
		if proc == nil {
			r.mu.Unlock()
			return nil, conflictf("session %s has no running process", name)
		}
		// Who asked is recorded before the interrupt is written: the abort
		// that answers it must find it, or a stop the user asked for would
		// look like a dead turn and be nudged.
		done := r.applyLocked(e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.ByUser},
			newRow(e.s, time.Now(), "interrupt_requested", sessions.TimelineDetail{Message: "interrupt requested by the user", By: sessions.ByUser.String()}))
		e.changed = e.s.Clone()
		r.mu.Unlock()
		if err := proc.Interrupt(); err != nil {
			if _, ferr := r.deliveryFailed(e, proc, "the interrupt", 0, err); ferr != nil {
				return done, ferr
			}
		}
		return done, nil
	})
}

// Record appends a row to a session's timeline from outside the loop (a
// notification's receipt), written before it is published. A session
// forgotten meanwhile records nothing.
func (r *Runtime) Record(id, kind string, detail sessions.TimelineDetail) error {
	r.mu.Lock()
	e, err := r.findLocked(id)
	if err == nil && e.forgotten {
		err = fmt.Errorf("session %s was forgotten", id)
	}
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("recording %s: %w", kind, err)
	}
	row := newRow(e.s, time.Now(), kind, detail)
	r.mu.Unlock()
	res := <-r.w.submit(storage.BatchItem{Events: []storage.TimelineEvent{row}}, true)
	if res.err != nil {
		return fmt.Errorf("recording %s for session %s: %w", kind, id, res.err)
	}
	if len(res.ids) == 1 {
		row.ID = res.ids[0]
	}
	r.mu.Lock()
	r.bus.Publish(localapi.Message{Type: localapi.MsgTimeline, Event: &row})
	r.mu.Unlock()
	return nil
}

// Ack acknowledges a session: a reviewed turn becomes Idle and
// needs-attention is cleared.
func (r *Runtime) Ack(ctx context.Context, id string) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applyLocked(e, sessions.Event{Kind: sessions.EvAcknowledged},
			newRow(e.s, time.Now(), "acknowledged", sessions.TimelineDetail{Message: "acknowledged by the user"})), nil
	})
}

// Answer approves or denies the open permission request requestID, the one
// the user saw: with parallel tool calls or a double click, the oldest when
// the call runs may be another. "" names the only open request.
func (r *Runtime) Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		proc, name := e.proc, e.s.DisplayName()
		perm, err := openRequest(e.s, requestID)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		if proc == nil {
			r.mu.Unlock()
			return nil, conflictf("session %s has no running process to answer", name)
		}
		verdict := "denied"
		if allow {
			verdict = "approved"
		}
		msg := fmt.Sprintf("%s %s by the user", perm.Tool, verdict)
		done := r.applyLocked(e, sessions.Event{Kind: sessions.EvUserAnswered, Detail: msg, Permission: &perm},
			newRow(e.s, time.Now(), "permission_answered", sessions.TimelineDetail{Message: msg, Tool: perm.Tool, Allow: sessions.Flag(allow)}))
		e.changed = e.s.Clone()
		r.mu.Unlock()
		if err := proc.AnswerPermission(perm, allow, message); err != nil {
			if _, ferr := r.deliveryFailed(e, proc, "the permission answer", 0, err); ferr != nil {
				return done, ferr
			}
		}
		return done, nil
	})
}

// Forget removes an ended session from the app: from memory, the lists and
// the database, its timeline kept (with a last row saying so) or deleted as
// the user chose. A session whose process still runs, or whose turn is in
// flight, is refused: forgetting it would leave an agent unsupervised.
// The answer is the session as it was.
func (r *Runtime) Forget(ctx context.Context, id string, timeline storage.TimelineChoice) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		s := e.s
		if e.forgotten {
			return nil, fmt.Errorf("%w %q", localapi.ErrNotFound, id)
		}
		if e.proc != nil || s.ProcessAlive || s.InTurn || (e.ext != nil && e.ext.live) {
			return nil, conflictf("session %s still runs (process %d): stop it first; only an ended session can be forgotten", s.DisplayName(), s.PID)
		}
		var rows []storage.TimelineEvent
		if timeline == storage.KeepTimeline {
			rows = append(rows, newRow(s, time.Now(), "forgotten", sessions.TimelineDetail{
				Message: "forgotten by the user; its timeline is kept"}))
		}
		done := r.w.submit(storage.BatchItem{Events: rows, Forget: &storage.Forget{ID: s.ID, Timeline: timeline}}, true)
		e.forgotten = true
		e.changed = s.Clone()
		delete(r.sess, s.ID)
		// The views drop what a snapshot lacks.
		r.bus.Publish(r.snapshotLocked())
		return done, nil
	})
}

// openRequest picks the open permission request an answer is for: the one
// named, or the only one open when none is named. A named request no
// longer open is ErrRequestClosed; naming none while several are open is
// refused with the list, so the user picks.
func openRequest(s sessions.Session, requestID string) (sessions.Permission, error) {
	name := s.DisplayName()
	open := s.Permissions
	if len(open) == 0 && s.Permission != nil {
		// Stored by a build that kept a single request (as Apply reads it).
		open = []sessions.Permission{*s.Permission}
	}
	if s.State != sessions.WaitingOnUser {
		open = nil
	}
	if requestID != "" {
		for _, p := range open {
			if p.RequestID == requestID {
				return p, nil
			}
		}
		return sessions.Permission{}, localapi.Errorf(localapi.ErrRequestClosed,
			"permission request %s of session %s is no longer open (already answered, or withdrawn by the agent)", requestID, name)
	}
	switch len(open) {
	case 0:
		return sessions.Permission{}, conflictf("session %s has no pending permission request", name)
	case 1:
		return open[0], nil
	}
	list := make([]string, len(open))
	for i, p := range open {
		list[i] = fmt.Sprintf("%s (%s)", p.RequestID, cmp.Or(p.Tool, "a tool"))
	}
	return sessions.Permission{}, conflictf("session %s has %d permission requests open: %s; name the one to answer (--request)",
		name, len(open), strings.Join(list, ", "))
}

// applyLocked runs sessions.Apply for ev, then commits the result with the
// given rows plus a state_changed row when the state changed.
func (r *Runtime) applyLocked(e *entry, ev sessions.Event, rows ...storage.TimelineEvent) <-chan writeResult {
	now := time.Now()
	next := sessions.Apply(e.s, ev, now)
	if cause := sessions.InterruptCauseOf(e.s, next, ev); cause != sessions.NoInterruptCause {
		// Every change into Interrupted is marked, with its cause.
		rows = append(rows, newRow(next, now, core.TimelineMarkedInterrupted,
			sessions.TimelineDetail{Message: next.Evidence, Cause: cause.String()}))
	}
	if e.proc != nil {
		next.SkippedLines = e.proc.SkippedLines()
	}
	if ev.Kind == sessions.EvMetrics && len(rows) == 0 {
		// Usage counters change nothing worth a write or a message.
		e.s = next
		return nil
	}
	return r.commitRowsLocked(e, next, rows, true, true)
}

// commitRowsLocked records a new session value: a state_changed row when
// the state (or what it waits for) changed and stateRow is set (Reconcile's
// observations already record theirs), the write (queued, never waited for
// here), then the publication. wait asks for a channel that reports when
// the write is done.
func (r *Runtime) commitRowsLocked(e *entry, next sessions.Session, rows []storage.TimelineEvent, stateRow, wait bool) <-chan writeResult {
	if e.forgotten {
		return nil
	}
	prev := e.s
	if stateRow && (prev.State != next.State || prev.WaitReason != next.WaitReason) {
		detail := sessions.TimelineDetail{Message: next.Evidence, From: prev.State.String(), To: next.State.String()}
		if next.WaitReason != sessions.NoWait {
			detail.Reason = next.WaitReason.String()
		}
		if next.Failure.Kind != sessions.NoFailure {
			detail.Failure = next.Failure.Kind.String()
		}
		rows = append(rows, newRow(next, next.UpdatedAt, "state_changed", detail))
	}
	usage := r.usageRowsLocked(e, next, time.Now())
	e.s = next
	saved := next.Clone()
	done := r.w.submit(storage.BatchItem{Session: &saved, Events: rows, Usage: usage}, wait)
	s := next.Clone()
	r.bus.Publish(localapi.Message{Type: localapi.MsgSession, Session: &s})
	for i := range rows {
		row := rows[i]
		r.bus.Publish(localapi.Message{Type: localapi.MsgTimeline, Event: &row})
	}
	return done
}

// PublishSnapshot re-emits the full authoritative state, so a subscriber that
// missed events can never stay wrong for long.
// It holds the runtime's lock, under which every change is published, so a
// snapshot can never be older than a change published before it.
func (r *Runtime) PublishSnapshot() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bus.Publish(r.snapshotLocked())
}

// Subscribe registers a bus subscriber whose queue starts with a full
// snapshot, preceded by a resync notice when resync is set. Both are queued
// under the runtime's lock, so no change can be queued before the snapshot
// or be missing from it: the subscriber never sees an older state after a
// newer one.
func (r *Runtime) Subscribe(buf int, resync bool) *localapi.Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := r.bus.Subscribe(buf)
	if resync {
		r.bus.SendTo(sub, localapi.Message{Type: localapi.MsgResync})
	}
	r.bus.SendTo(sub, r.snapshotLocked())
	return sub
}

// snapshotLocked is the full state as one message: every session, and the
// settings in force when a settings source is set.
func (r *Runtime) snapshotLocked() localapi.Message {
	day := r.todayLocked(time.Now())
	m := localapi.Message{Type: localapi.MsgSnapshot, Sessions: r.sessionsLocked(false), Usage: &day}
	if r.values != nil {
		m.Settings = r.values()
	}
	return m
}

// PublishSettings tells every subscriber the settings in force after a change.
func (r *Runtime) PublishSettings(values []settings.Value) {
	r.bus.Publish(localapi.Message{Type: localapi.MsgSettings, Settings: values})
}

// Settle waits until every queued side effect ran and every queued change
// was written (or failed to be). Tests and a graceful quit use it.
func (r *Runtime) Settle() {
	for {
		r.mu.Lock()
		var busy []*serial
		for _, e := range r.sess {
			if e.q.busy() {
				busy = append(busy, e.q)
			}
		}
		r.mu.Unlock()
		for _, q := range busy {
			q.settle()
		}
		r.w.settle()
		if len(busy) == 0 {
			return
		}
	}
}

// Shutdown is the graceful quit: every agent's stdin is closed so a turn in
// flight finishes and the process exits on its own (its work stays in the
// agent's transcript). It waits for them until ctx is done.
func (r *Runtime) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	var procs []Process
	for _, e := range r.sess {
		if e.proc != nil {
			procs = append(procs, e.proc)
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		if err := p.CloseInput(); err != nil {
			r.log.Warn("closing agent input", "pid", p.PID(), "err", err)
		}
	}
	if n := len(procs); n > 0 {
		r.log.Info("waiting for agent processes to finish their turns", "count", n)
	}
	done := make(chan struct{})
	go func() { r.procs.Wait(); r.Settle(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		r.w.kick()
		return fmt.Errorf("stopped before %d agent process(es) finished: %w", len(procs), ctx.Err())
	}
}

func newRow(s sessions.Session, now time.Time, kind string, detail sessions.TimelineDetail) storage.TimelineEvent {
	return storage.TimelineEvent{SessionID: s.ID, Time: now, Kind: kind, TurnGeneration: s.TurnGeneration, Detail: detail.JSON()}
}

// quarantiningStore is the optional Store capability to load the readable
// sessions and name the others, instead of failing on the first bad row.
type quarantiningStore interface {
	LoadSessions(ctx context.Context) ([]sessions.Session, []storage.Quarantined, error)
}

// loadSessions loads what can be loaded. A session this build cannot read
// (written by a newer build, or damaged) is left untouched in the database
// and not supervised; it is logged once, by name, with the reason, so one
// bad row never keeps the app from starting for every other session.
func (r *Runtime) loadSessions(ctx context.Context) ([]sessions.Session, error) {
	qs, ok := r.store.(quarantiningStore)
	if !ok {
		return r.store.ListSessions(ctx)
	}
	list, bad, err := qs.LoadSessions(ctx)
	for _, q := range bad {
		r.log.Warn(q.Message(), "session", q.ID, "reason", q.Reason.String())
	}
	return list, err
}
