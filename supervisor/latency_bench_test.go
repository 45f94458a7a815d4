package supervisor

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// pipeProcess is an agent process whose stdout is a pipe the benchmark
// writes Claude stream-json lines into, decoded by the real Claude decoder.
type pipeProcess struct {
	w      *io.PipeWriter
	events chan sessions.Event
	done   chan struct{}
}

func newPipeProcess() *pipeProcess {
	r, w := io.Pipe()
	p := &pipeProcess{w: w, events: make(chan sessions.Event, 64), done: make(chan struct{})}
	go func() {
		defer close(p.events)
		dec := claude.NewDecoder(r, 0)
		for {
			line, err := dec.Next()
			if err != nil {
				return
			}
			for _, e := range line.Events {
				p.events <- e
			}
		}
	}()
	return p
}

func (p *pipeProcess) PID() int                                                 { return os.Getpid() }
func (p *pipeProcess) Events() <-chan sessions.Event                            { return p.events }
func (p *pipeProcess) SendPrompt(string) error                                  { return nil }
func (p *pipeProcess) Interrupt() error                                         { return nil }
func (p *pipeProcess) AnswerPermission(sessions.Permission, bool, string) error { return nil }
func (p *pipeProcess) Compact() error                                           { return nil }
func (p *pipeProcess) CloseInput() error                                        { return p.w.Close() }
func (p *pipeProcess) Signal(os.Signal) error                                   { return nil }
func (p *pipeProcess) Wait() (int, string, error)                               { return 0, "", nil }
func (p *pipeProcess) SkippedLines() int                                        { return 0 }
func (p *pipeProcess) StderrTail() string                                       { return "" }

type pipeAgent struct{ proc *pipeProcess }

func (a *pipeAgent) Start(context.Context, StartOptions) (Process, error) { return a.proc, nil }

// BenchmarkLineToSubscriber measures the latency from a line the agent
// writes on stdout to the resulting session change arriving at a client of
// the local API's event stream: decode, Apply, the SQLite write, the bus,
// the unix socket and the client's SSE parsing. One op is one round trip.
func BenchmarkLineToSubscriber(b *testing.B) {
	dir := testdir.Short(b, "ssbench")
	st, err := storage.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	proc := newPipeProcess()
	rt := New(Options{Store: st, Agents: map[string]Agent{"claude": &pipeAgent{proc}}, DefaultAgent: "claude"})
	ctx := context.Background()
	if err := rt.Boot(ctx); err != nil {
		b.Fatal(err)
	}
	api, err := localapi.Listen(rt, mustSettings(b, st), dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	go api.Serve()
	defer api.Close()
	s, err := rt.Launch(ctx, localapi.LaunchRequest{Agent: "claude", Cwd: dir, Prompt: "go"})
	if err != nil {
		b.Fatal(err)
	}

	// The client forwards each session's evidence as it arrives.
	got := make(chan string, 1024)
	ready := make(chan struct{})
	var live sync.Once
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go localapi.NewClient(dir).Watch(watchCtx, "", func(m localapi.Message) error {
		switch {
		case m.Type == localapi.MsgSnapshot:
			// The stream is live: changes from now on reach the client.
			live.Do(func() { close(ready) })
		case m.Type == localapi.MsgSession && m.Session.ID == s.ID:
			got <- m.Session.Evidence
		}
		return nil
	})
	<-ready
	line := func(i int) (string, string) {
		id := fmt.Sprintf("toolu_%d", i)
		if i%2 == 0 {
			return fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":%q,"name":"Tool%d","input":{}}]},"session_id":"s"}`+"\n", id, i), fmt.Sprintf("running Tool%d", i)
		}
		return fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":"ok"}]},"session_id":"s"}`+"\n", i-1), fmt.Sprintf("Tool%d finished", i-1)
	}
	roundTrip := func(i int) {
		text, want := line(i)
		if _, err := io.WriteString(proc.w, text); err != nil {
			b.Fatal(err)
		}
		for ev := range got {
			if strings.Contains(ev, want) {
				return
			}
		}
	}
	roundTrip(0)
	roundTrip(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 2; i < b.N+2; i++ {
		roundTrip(i)
	}
	b.StopTimer()
	proc.w.Close()
}
