package toyagent

import (
	"errors"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// maxLine bounds one stdout line: the protocol's lines are short.
const maxLine = 1 << 20

// Process is one running `toy --stream` the app owns.
type Process struct {
	// Child is the process itself: PID, Signal, Wait, Alive, StderrTail.
	*agentkit.Child
	lines  *agentkit.LineReader
	events chan sessions.Event

	mu    sync.Mutex // guards stats
	stats agentkit.Counters
}

var _ sessions.Process = (*Process)(nil)

// Start launches the CLI in o.Cwd, in a process group of its own, and
// starts decoding its stdout.
func Start(o sessions.StartOptions) (*Process, error) {
	args, err := Args(o.ResumeID)
	if err != nil {
		return nil, err
	}
	path, err := agentInfo.LookPath(o.Command)
	if err != nil {
		return nil, err
	}
	child, err := agentkit.Start(agentkit.Spec{Agent: "toy", Path: path, Args: args,
		Cwd: o.Cwd, Env: o.Env, Stdin: true, WriteTimeout: o.WriteTimeout})
	if err != nil {
		return nil, err
	}
	p := &Process{Child: child, lines: agentkit.NewLineReader(child.Stdout, maxLine, "toy"),
		events: make(chan sessions.Event, 64)}
	go p.decode()
	return p, nil
}

// decode feeds the decoded events to Events until stdout ends.
func (p *Process) decode() {
	defer close(p.events)
	oversize := func(agentkit.RawLine) []sessions.Event { return nil }
	decode := func(raw agentkit.RawLine) ([]sessions.Event, agentkit.Tally) {
		evs, skip, _ := DecodeLine(raw.Bytes) // a skip is counted, not an error
		return evs, agentkit.TallyOf(evs, skip)
	}
	for {
		evs, err := agentkit.NextLine(p.lines, &p.mu, &p.stats, oversize, decode)
		if err != nil {
			return
		}
		for _, ev := range evs {
			p.events <- ev
		}
	}
}

// Events yields the decoded stream; closed when stdout ends.
func (p *Process) Events() <-chan sessions.Event { return p.events }

// SkippedLines counts malformed, unknown and oversize lines.
func (p *Process) SkippedLines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.stats.Skipped())
}

// SendPrompt starts a turn with text, or joins the next one while a turn
// runs.
func (p *Process) SendPrompt(text string) error {
	return p.Input.WriteLine(Line(Message{Type: TypePrompt, Text: text}))
}

// Interrupt aborts the turn in flight: the CLI answers turn_end cancelled.
func (p *Process) Interrupt() error { return p.Input.WriteLine(Line(Message{Type: TypeInterrupt})) }

// AnswerPermission fails: the toy CLI runs its tools without asking.
func (p *Process) AnswerPermission(sessions.Permission, bool, string) error {
	return errors.New("the toy agent asks no permission")
}

// Compact fails: the toy CLI has no compaction.
func (p *Process) Compact() error { return errors.New("the toy agent cannot compact its context") }

// CloseInput closes stdin: the turn in flight finishes, then the CLI exits.
func (p *Process) CloseInput() error { return p.Input.Close() }
