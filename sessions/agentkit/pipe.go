package agentkit

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Pipe is what a managed agent driven over its stdin and stdout shares
// whatever its protocol (Claude Code's stream-json, Codex's and Gemini's
// JSON-RPC): the process, the events its decoder produced, the decoder's
// counters, line writes to stdin and the ids of the requests written. The
// adapter's Process embeds it and keeps its decode loop and its requests.
type Pipe struct {
	// Child is the process itself: PID, Signal, Wait, Alive, StderrTail.
	*Child
	// Ready opens when the agent's conversation is open (its session-init
	// event), or could not be, or stdout ended.
	Ready *Gate
	stats func() Counters

	// events is written by the adapter's decode loop and, for some, by a
	// request answered without the agent (Gemini's Compact); emitMu and
	// closed keep a late Emit from sending on a closed channel.
	events chan sessions.Event
	emitMu sync.Mutex
	closed bool

	seq atomic.Int64
}

// NewPipe is the Pipe of child, whose decoder's counters stats returns.
func NewPipe(child *Child, stats func() Counters) *Pipe {
	return &Pipe{Child: child, Ready: NewGate(), stats: stats, events: make(chan sessions.Event, 64)}
}

// Options are what starting any managed agent takes, whatever its
// protocol; an adapter's ProcessOptions embeds them and adds its own.
type Options struct {
	// Command is the executable, from the agent's command setting
	// (agents.NAME.command; "": the agent's default command).
	Command string
	Cwd     string
	// Env is added to the inherited environment.
	Env []string
	// MaxLine bounds one stdout line (0: the adapter's DefaultMaxLine).
	MaxLine int
	// WriteTimeout bounds one write to stdin (0: none): an agent that
	// stops reading its input fails the write with os.ErrDeadlineExceeded
	// instead of blocking the caller forever.
	WriteTimeout time.Duration
}

// OptionsOf are the Options in the registry's start options.
func OptionsOf(o sessions.StartOptions) Options {
	return Options{Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout}
}

// StartPipe finds info's command (Info.LookPath) and starts it as o says,
// with args and stdin a pipe: how every agent driven over its stdin and
// stdout starts.
func (i Info) StartPipe(o Options, args []string) (*Child, error) {
	path, err := i.LookPath(o.Command)
	if err != nil {
		return nil, err
	}
	return Start(Spec{Agent: i.Name, Path: path, Args: args, Cwd: o.Cwd, Env: o.Env, Stdin: true, WriteTimeout: o.WriteTimeout})
}

// Pump is the decode loop of a Pipe: it reads decoded lines with next until
// stdout ends, writes the reply split finds in a line (the answer to a
// request the adapter does not serve; nil: none), emits the line's events,
// opening Ready at a session-init event, and then gives the line to after
// (nil: nothing more), the adapter's own follow-up. Events is closed and
// Ready opened when it returns.
func Pump[L any](p *Pipe, next func() (L, error), split func(L) ([]sessions.Event, []byte), after func(L)) {
	defer p.CloseEvents()
	defer p.Ready.Open()
	for {
		line, err := next()
		if err != nil {
			return
		}
		events, reply := split(line)
		if reply != nil {
			_ = p.Write(reply)
		}
		for _, ev := range events {
			if ev.Kind == sessions.EvSessionInit {
				p.Ready.Open()
			}
			p.Emit(ev)
		}
		if after != nil {
			after(line)
		}
	}
}

// Events yields the decoded stream; closed when stdout ends.
func (p *Pipe) Events() <-chan sessions.Event { return p.events }

// SkippedLines counts malformed, unknown and oversize lines.
func (p *Pipe) SkippedLines() int { return int(p.stats().Skipped()) }

// Stats are the decoder's counters.
func (p *Pipe) Stats() Counters { return p.stats() }

// Write writes one line to stdin (within the write timeout).
func (p *Pipe) Write(line []byte) error { return p.Input.WriteLine(line) }

// CloseInput closes stdin: the agent finishes what it has and exits at the
// end of its input.
func (p *Pipe) CloseInput() error { return p.Input.Close() }

// NextID is the id of the next request written (1, 2, …).
func (p *Pipe) NextID() int64 { return p.seq.Add(1) }

// Emit sends ev on Events, unless Events is closed already (an event
// emitted after the stream ended is dropped: nobody reads it).
func (p *Pipe) Emit(ev sessions.Event) {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	if !p.closed {
		p.events <- ev
	}
}

// CloseEvents closes Events, once the decode loop read the end of stdout.
func (p *Pipe) CloseEvents() {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	p.closed = true
	close(p.events)
}

// Gate is closed once an agent's conversation (a thread, a session) is open,
// or could not be, or the stream ended: a prompt needs its id and waits at
// the gate first.
type Gate struct {
	once sync.Once
	ch   chan struct{}
}

// NewGate returns a gate not opened yet.
func NewGate() *Gate { return &Gate{ch: make(chan struct{})} }

// Open lets every waiter through; later calls do nothing.
func (g *Gate) Open() { g.once.Do(func() { close(g.ch) }) }

// Wait waits at most bound for Open. Its error, if it times out, says that
// agent opened no what (a "thread", a "session") within bound and wraps
// os.ErrDeadlineExceeded.
func (g *Gate) Wait(bound time.Duration, agent, what string) error {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-g.ch:
		return nil
	case <-t.C:
		return fmt.Errorf("%s opened no %s within %s: %w", agent, what, bound, os.ErrDeadlineExceeded)
	}
}

// Opened waits at the gate (Wait) and answers the conversation's id as
// Opened does, from what open reads once the gate is passed: the id, or
// why the agent could not open it.
func (g *Gate) Opened(bound time.Duration, agent, what string, open func() (id, failed string)) (string, error) {
	if err := g.Wait(bound, agent, what); err != nil {
		return "", err
	}
	id, failed := open()
	return Opened(agent, what, id, failed)
}

// Opened is the conversation's id once the gate is passed: id, or when it is
// empty an error that agent could not open what, for the reason failed (the
// agent's own words) or, without one, because the process ended.
func Opened(agent, what, id, failed string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%s could not open the %s: %s", agent, what, OrDefault(failed, "the process ended"))
	}
	return id, nil
}
