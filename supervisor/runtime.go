package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
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
	LoadSettings(ctx context.Context) (storage.Settings, error)
}

// TimelineRow is a timeline row as published on the bus and the API.
type TimelineRow = storage.TimelineEvent

// ErrNotFound is returned for an unknown session id.
var ErrNotFound = errors.New("no such session")

// Runtime is the in-process supervisor: it owns the agent processes, applies
// their events to the sessions, persists every change with its timeline rows,
// and publishes it. Decisions are made by sessions.Apply and Reconcile; the
// runtime only executes them.
type Runtime struct {
	store  Store
	bus    *Bus
	agents map[string]Agent
	log    *slog.Logger

	mu   sync.Mutex
	sess map[string]*entry
	// procs counts live process pumps, so a graceful quit can wait for them.
	procs sync.WaitGroup
}

// entry is one session and, when managed and running, its process.
type entry struct {
	s    sessions.Session
	proc Process
	// unsaved holds timeline rows a failed write could not store yet; they
	// are retried with the next write so nothing recorded is lost.
	unsaved []storage.TimelineEvent
	dirty   bool
}

// Options configures a Runtime.
type Options struct {
	Store  Store
	Agents map[string]Agent
	Logger *slog.Logger
}

// New returns a runtime; call Boot before serving.
func New(opts Options) *Runtime {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{store: opts.Store, bus: NewBus(), agents: opts.Agents, log: log, sess: map[string]*entry{}}
}

// Bus is the runtime's event bus.
func (r *Runtime) Bus() *Bus { return r.bus }

// Boot loads every persisted session. A session whose persisted state shows a
// turn in flight was cut off when the app last stopped: it loads as
// Interrupted, never silently Idle.
func (r *Runtime) Boot(ctx context.Context) error {
	list, err := r.store.ListSessions(ctx)
	if err != nil {
		return fmt.Errorf("loading sessions: %w", err)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range list {
		e := &entry{s: s}
		r.sess[s.ID] = e
		orphan := r.reapOrphanLocked(s)
		next, rows := BootReconcile(s, now)
		if orphan != "" && len(rows) > 0 {
			rows[0].Detail = mergeDetail(rows[0].Detail, "orphan", orphan)
		}
		if rows != nil {
			// boot_reconciled already records the state change.
			r.commitRowsLocked(ctx, e, next, rows, false)
		}
	}
	return r.reportUncertainLocked(ctx)
}

// BootReconcile is the pure boot rule: a turn that was in flight when the app
// stopped is Interrupted, and no process is assumed alive.
func BootReconcile(s sessions.Session, now time.Time) (sessions.Session, []storage.TimelineEvent) {
	if !s.InTurn && !s.ProcessAlive {
		return s, nil
	}
	n := s.Clone()
	n.ProcessAlive = false
	n.UpdatedAt = now
	if !s.InTurn {
		return n, []storage.TimelineEvent{}
	}
	n.InTurn = false
	n.OpenTools, n.OpenTasks = nil, nil
	n.CompactionStarted = time.Time{}
	n.Permission = nil
	n.WaitReason = sessions.NoWait
	n.State = sessions.Interrupted
	n.StateChangedAt = now
	n.Evidence = fmt.Sprintf("turn %d was in flight when the app last stopped", s.TurnGeneration)
	return n, []storage.TimelineEvent{newRow(n, now, "boot_reconciled", map[string]any{
		"message": n.Evidence, "from": s.State.String(), "to": n.State.String(),
	})}
}

// Sessions returns every session, needing attention first, then newest.
func (r *Runtime) Sessions() []sessions.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessionsLocked()
}

func (r *Runtime) sessionsLocked() []sessions.Session {
	out := make([]sessions.Session, 0, len(r.sess))
	for _, e := range r.sess {
		out = append(out, e.s.Clone())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NeedsAttention != out[j].NeedsAttention {
			return out[i].NeedsAttention
		}
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
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
func (r *Runtime) Timeline(ctx context.Context, id string, limit int) ([]TimelineRow, error) {
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
					return nil, fmt.Errorf("session id prefix %q is ambiguous", id)
				}
				found = e
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w %q", ErrNotFound, id)
	}
	return found, nil
}

// LaunchRequest asks for a new managed session.
type LaunchRequest struct {
	Agent          string `json:"agent"`
	Cwd            string `json:"cwd"`
	Name           string `json:"name"`
	PermissionMode string `json:"permission_mode"`
	Prompt         string `json:"prompt"`
}

// Launch starts a new managed session and sends its first prompt.
func (r *Runtime) Launch(ctx context.Context, req LaunchRequest) (sessions.Session, error) {
	if req.Agent == "" {
		req.Agent = "claude"
	}
	if _, ok := r.agents[req.Agent]; !ok {
		return sessions.Session{}, fmt.Errorf("unknown agent %q (known: %s)", req.Agent, strings.Join(r.agentNames(), ", "))
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return sessions.Session{}, errors.New("the first prompt is empty")
	}
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return sessions.Session{}, fmt.Errorf("working directory %q is not a directory", req.Cwd)
	}
	now := time.Now()
	s := sessions.Session{
		ID: newID(), Name: req.Name, Agent: req.Agent, Cwd: req.Cwd, Source: sessions.Managed,
		PermissionMode: req.PermissionMode, CreatedAt: now, UpdatedAt: now, StateChangedAt: now,
		Evidence: "launching",
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &entry{s: s}
	if err := r.startLocked(ctx, e, ""); err != nil {
		return sessions.Session{}, err
	}
	r.sess[s.ID] = e
	if err := r.promptLocked(ctx, e, req.Prompt, sessions.ByUser, "prompt_sent"); err != nil {
		return e.s.Clone(), err
	}
	return e.s.Clone(), nil
}

func (r *Runtime) agentNames() []string {
	var names []string
	for n := range r.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// startLocked starts e's agent process (resuming the agent's session when
// resumeID is set) and its event pump.
func (r *Runtime) startLocked(ctx context.Context, e *entry, resumeID string) error {
	settings, err := r.store.LoadSettings(ctx)
	if err != nil {
		return fmt.Errorf("loading settings: %w", err)
	}
	agent := r.agents[e.s.Agent]
	if agent == nil {
		return fmt.Errorf("unknown agent %q", e.s.Agent)
	}
	proc, err := agent.Start(ctx, StartOptions{
		Command: agentCommand(settings, e.s.Agent), Cwd: e.s.Cwd,
		PermissionMode: e.s.PermissionMode, ResumeID: resumeID,
	})
	if err != nil {
		return fmt.Errorf("launching %s: %w", e.s.Agent, err)
	}
	e.proc = proc
	how := "started"
	if resumeID != "" {
		how = "resumed session " + resumeID
	}
	r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvProcessStarted, PID: proc.PID()},
		newRow(e.s, time.Now(), "process_started", map[string]any{
			"message": fmt.Sprintf("%s process %d %s in %s", e.s.Agent, proc.PID(), how, e.s.Cwd), "pid": proc.PID(),
		}))
	r.procs.Add(1)
	go r.pump(e.s.ID, proc)
	return nil
}

// agentCommand is the agent's agents.NAME.command setting (registered from
// the agent registry), or the agent's name for one without a setting.
func agentCommand(s storage.Settings, agent string) string {
	if c := s.AgentCommand(agent); c != "" {
		return c
	}
	return agent
}

// pump feeds a process's events into the session until stdout ends, then
// records how the process exited.
func (r *Runtime) pump(id string, proc Process) {
	defer r.procs.Done()
	ctx := context.Background()
	for ev := range proc.Events() {
		r.observe(ctx, id, proc, ev)
	}
	code, sig, err := proc.Wait()
	if err != nil {
		r.log.Warn("waiting for agent process", "session", id, "err", err)
	}
	r.observe(ctx, id, proc, sessions.Event{Kind: sessions.EvProcessExited, ExitCode: code, Signal: sig})
}

// observe applies one event from proc, unless proc is no longer the
// session's current process (a stale process after a resume).
func (r *Runtime) observe(ctx context.Context, id string, proc Process, ev sessions.Event) {
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
		if tail := proc.StderrTail(); tail != "" && ev.ExitCode != 0 {
			// Raw stderr stays in the log for diagnostics; it is never persisted.
			r.log.Info("agent stderr tail", "session", id, "stderr", tail)
		}
	}
	r.applyLocked(ctx, e, ev)
}

// Send sends a prompt: into the running turn, as a new turn on the live
// process, or by resuming the agent's session when its process is gone.
func (r *Runtime) Send(ctx context.Context, id, prompt string) (sessions.Session, error) {
	if strings.TrimSpace(prompt) == "" {
		return sessions.Session{}, errors.New("the prompt is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.findLocked(id)
	if err != nil {
		return sessions.Session{}, err
	}
	err = r.promptLocked(ctx, e, prompt, sessions.ByUser, "prompt_sent")
	return e.s.Clone(), err
}

// promptLocked delivers text to e's agent, starting (resuming) the process
// when needed. kind is the timeline row recorded for it.
func (r *Runtime) promptLocked(ctx context.Context, e *entry, text string, by sessions.Actor, kind string) error {
	if e.proc == nil {
		if e.s.Source != sessions.Managed {
			return fmt.Errorf("session %s is not managed by the app; answer it where it runs", e.s.DisplayName())
		}
		if e.s.AgentSessionID == "" {
			return fmt.Errorf("session %s has no agent session id to resume", e.s.DisplayName())
		}
		if err := r.startLocked(ctx, e, e.s.AgentSessionID); err != nil {
			return err
		}
	}
	if err := e.proc.SendPrompt(text); err != nil {
		return fmt.Errorf("sending the prompt to %s: %w", e.s.Agent, err)
	}
	now := time.Now()
	// kind is empty when the caller already recorded the prompt (a
	// supervisor action's intent row).
	var rows []storage.TimelineEvent
	if e.s.InTurn {
		// A prompt sent mid-turn joins the running turn; it does not start one.
		if kind != "" {
			rows = append(rows, newRow(e.s, now, kind, map[string]any{"message": "prompt added to the running turn", "by": by.String()}))
		}
		r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvActivity, Detail: "prompt added to the running turn"}, rows...)
		return nil
	}
	if kind != "" {
		row := newRow(e.s, now, kind, map[string]any{"message": "prompt sent by the " + by.String(), "by": by.String()})
		row.TurnGeneration++ // the row belongs to the turn it starts
		rows = append(rows, row)
	}
	r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvTurnStarted, By: by}, rows...)
	return nil
}

// Interrupt asks the agent to abort the turn in flight at the user's request.
func (r *Runtime) Interrupt(ctx context.Context, id string) (sessions.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.findLocked(id)
	if err != nil {
		return sessions.Session{}, err
	}
	if !e.s.InTurn {
		return e.s.Clone(), fmt.Errorf("session %s has no turn in flight", e.s.DisplayName())
	}
	if e.proc == nil {
		return e.s.Clone(), fmt.Errorf("session %s has no running process", e.s.DisplayName())
	}
	if err := e.proc.Interrupt(); err != nil {
		return e.s.Clone(), fmt.Errorf("interrupting %s: %w", e.s.DisplayName(), err)
	}
	r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.ByUser},
		newRow(e.s, time.Now(), "interrupt_requested", map[string]any{"message": "interrupt requested by the user", "by": "user"}))
	return e.s.Clone(), nil
}

// Ack acknowledges a session: a reviewed turn becomes Idle and
// needs-attention is cleared.
func (r *Runtime) Ack(ctx context.Context, id string) (sessions.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.findLocked(id)
	if err != nil {
		return sessions.Session{}, err
	}
	r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvAcknowledged},
		newRow(e.s, time.Now(), "acknowledged", map[string]any{"message": "acknowledged by the user"}))
	return e.s.Clone(), nil
}

// Answer approves or denies the pending permission request.
func (r *Runtime) Answer(ctx context.Context, id string, allow bool, message string) (sessions.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.findLocked(id)
	if err != nil {
		return sessions.Session{}, err
	}
	p := e.s.Permission
	if p == nil || e.s.State != sessions.WaitingOnUser {
		return e.s.Clone(), fmt.Errorf("session %s has no pending permission request", e.s.DisplayName())
	}
	if e.proc == nil {
		return e.s.Clone(), fmt.Errorf("session %s has no running process to answer", e.s.DisplayName())
	}
	if err := e.proc.AnswerPermission(*p, allow, message); err != nil {
		return e.s.Clone(), fmt.Errorf("answering the permission request: %w", err)
	}
	verdict := "denied"
	if allow {
		verdict = "approved"
	}
	msg := fmt.Sprintf("%s %s by the user", p.Tool, verdict)
	r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvUserAnswered, Detail: msg},
		newRow(e.s, time.Now(), "permission_answered", map[string]any{"message": msg, "tool": p.Tool, "allow": allow}))
	return e.s.Clone(), nil
}

// applyLocked runs sessions.Apply for ev, then commits the result with the
// given rows plus a state_changed row when the state changed.
func (r *Runtime) applyLocked(ctx context.Context, e *entry, ev sessions.Event, rows ...storage.TimelineEvent) {
	now := time.Now()
	next := sessions.Apply(e.s, ev, now)
	if e.proc != nil {
		next.SkippedLines = e.proc.SkippedLines()
	}
	if ev.Kind == sessions.EvMetrics && len(rows) == 0 {
		// Usage counters change nothing worth a write or a message.
		e.s = next
		return
	}
	r.commitLocked(ctx, e, next, rows)
}

// commitLocked records a new session value: a state_changed row when the
// state (or what it waits for) changed, the write, then the publication.
func (r *Runtime) commitLocked(ctx context.Context, e *entry, next sessions.Session, rows []storage.TimelineEvent) {
	r.commitRowsLocked(ctx, e, next, rows, true)
}

// commitRowsLocked is commitLocked; stateRow false means the caller's rows
// already record the state change (Reconcile's observations do, one per
// change), so no state_changed row is added.
func (r *Runtime) commitRowsLocked(ctx context.Context, e *entry, next sessions.Session, rows []storage.TimelineEvent, stateRow bool) {
	prev := e.s
	if stateRow && (prev.State != next.State || prev.WaitReason != next.WaitReason) {
		detail := map[string]any{"message": next.Evidence, "from": prev.State.String(), "to": next.State.String()}
		if next.WaitReason != sessions.NoWait {
			detail["reason"] = next.WaitReason.String()
		}
		if next.Failure.Kind != sessions.NoFailure {
			detail["failure"] = next.Failure.Kind.String()
		}
		rows = append(rows, newRow(next, next.UpdatedAt, "state_changed", detail))
	}
	e.s = next
	pending := append(e.unsaved, rows...)
	if err := r.store.SaveSessionWithEvents(ctx, next, pending); err != nil {
		// Keep everything in memory and retry with the next write or tick:
		// a full disk must not lose recorded data or stop the app.
		r.log.Error("saving session; will retry", "session", next.ID, "err", err)
		e.unsaved, e.dirty = pending, true
	} else {
		e.unsaved, e.dirty = nil, false
	}
	s := next.Clone()
	r.bus.Publish(Message{Type: MsgSession, Session: &s})
	for i := range rows {
		row := rows[i]
		r.bus.Publish(Message{Type: MsgTimeline, Event: &row})
	}
}

// flushLocked retries writes that failed earlier.
func (r *Runtime) flushLocked(ctx context.Context) {
	for _, e := range r.sess {
		if !e.dirty {
			continue
		}
		if err := r.store.SaveSessionWithEvents(ctx, e.s, e.unsaved); err != nil {
			r.log.Error("saving session; will retry", "session", e.s.ID, "err", err)
			continue
		}
		e.unsaved, e.dirty = nil, false
	}
}

// PublishSnapshot re-emits the full authoritative state, so a subscriber that
// missed events can never stay wrong for long.
// It holds the runtime's lock, under which every change is published, so a
// snapshot can never be older than a change published before it.
func (r *Runtime) PublishSnapshot() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bus.Publish(Message{Type: MsgSnapshot, Sessions: r.sessionsLocked()})
}

// Subscribe registers a bus subscriber whose queue starts with a full
// snapshot, preceded by a resync notice when resync is set. Both are queued
// under the runtime's lock, so no change can be queued before the snapshot
// or be missing from it: the subscriber never sees an older state after a
// newer one.
func (r *Runtime) Subscribe(buf int, resync bool) *Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := r.bus.Subscribe(buf)
	if resync {
		r.bus.SendTo(sub, Message{Type: MsgResync})
	}
	r.bus.SendTo(sub, Message{Type: MsgSnapshot, Sessions: r.sessionsLocked()})
	return sub
}

// Shutdown is the graceful quit: every agent's stdin is closed so a turn in
// flight finishes and the process exits on its own (its work stays in the
// agent's transcript). It waits for them until ctx is done.
func (r *Runtime) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	n := 0
	for _, e := range r.sess {
		if e.proc != nil {
			if err := e.proc.CloseInput(); err != nil {
				r.log.Warn("closing agent input", "session", e.s.ID, "err", err)
			}
			n++
		}
	}
	r.flushLocked(ctx)
	r.mu.Unlock()
	if n > 0 {
		r.log.Info("waiting for agent processes to finish their turns", "count", n)
	}
	done := make(chan struct{})
	go func() { r.procs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopped before %d agent process(es) finished: %w", n, ctx.Err())
	}
}

func newRow(s sessions.Session, now time.Time, kind string, detail map[string]any) storage.TimelineEvent {
	b, err := json.Marshal(detail)
	if err != nil {
		b = []byte(`{}`)
	}
	return storage.TimelineEvent{SessionID: s.ID, Time: now, Kind: kind, TurnGeneration: s.TurnGeneration, Detail: b}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
