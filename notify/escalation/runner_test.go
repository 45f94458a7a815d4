package escalation

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// channelsRig is the runner's world: channels that answer as scripted
// (a receipt per attempt, or a hang until the caller gives up), the rows
// recorded, the supervisor's messages.
type channelsRig struct {
	mu      sync.Mutex
	script  map[string][]Receipt // per channel, one per attempt; OK after
	hang    map[string]time.Duration
	sent    []string // "channel:title" in order
	rows    []sessions.TimelineDetail
	desktop bool
	in      chan localapi.Message
	configs chan Config
	runner  *Runner
}

func newChannelsRig() *channelsRig {
	g := &channelsRig{script: map[string][]Receipt{}, hang: map[string]time.Duration{}, desktop: true,
		in: make(chan localapi.Message, 16), configs: make(chan Config, 1)}
	g.runner = NewRunner(Deps{
		Send: func(ctx context.Context, channel string, n Note) Receipt {
			g.mu.Lock()
			hang := g.hang[channel]
			g.mu.Unlock()
			if hang > 0 {
				select {
				case <-time.After(hang):
				case <-ctx.Done():
				}
				return Receipt{Err: "timed out", Retry: true}
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			g.sent = append(g.sent, channel+":"+n.Title)
			if s := g.script[channel]; len(s) > 0 {
				g.script[channel] = s[1:]
				return s[0]
			}
			return Receipt{OK: true, Status: 200}
		},
		Record: func(id string, d sessions.TimelineDetail) error {
			g.mu.Lock()
			g.rows = append(g.rows, d)
			g.mu.Unlock()
			return nil
		},
		Desktop: func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.desktop },
		Machine: "devbox",
	})
	return g
}

func (g *channelsRig) sentSoFar() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.sent)
}

// An escalation is pushed once per channel after the delay; a channel
// that fails is retried on its own and its receipts are on the timeline;
// a channel that hangs holds neither the loop nor the other channel.
func TestRunnerPushesAfterTheDelayAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newChannelsRig()
		g.script["webhook"] = []Receipt{{Status: 500, Err: "HTTP 500", Retry: true}}
		g.configs <- Config{Policy: Policy{PushAfter: 5 * time.Minute}, Channels: []string{"ntfy", "webhook"}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { g.runner.Run(ctx, g.in, g.configs); close(done) }()
		g.in <- localapi.Message{Type: localapi.MsgSnapshot}
		g.in <- localapi.Message{Type: localapi.MsgEscalation, Session: &sessions.Session{ID: "a", Name: "api", State: sessions.Interrupted, NeedsAttention: true, TurnGeneration: 1}}
		synctest.Wait()
		time.Sleep(4*time.Minute + 59*time.Second)
		synctest.Wait()
		if got := g.sentSoFar(); len(got) != 0 {
			t.Fatalf("pushed before the delay: %q", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := g.sentSoFar(); !slices.Equal(got, []string{"ntfy:api needs you", "webhook:api needs you"}) && !slices.Equal(got, []string{"webhook:api needs you", "ntfy:api needs you"}) {
			t.Fatalf("after the delay: %q", got)
		}
		if f := g.runner.Failures(); len(f) != 1 || f[0].Channel != "webhook" || f[0].GaveUp {
			t.Fatalf("failures %+v, want the webhook's, retrying", f)
		}
		time.Sleep(Backoff(1))
		synctest.Wait()
		if got := g.sentSoFar(); len(got) != 3 || got[2] != "webhook:api needs you" {
			t.Fatalf("the retry: %q", got)
		}
		if f := g.runner.Failures(); len(f) != 0 {
			t.Fatalf("failures after the retry went through: %+v", f)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := g.sentSoFar(); len(got) != 3 {
			t.Fatalf("pushed again: %q", got)
		}
		g.mu.Lock()
		var outcomes []string
		for _, r := range g.rows {
			outcomes = append(outcomes, r.Channel+" "+r.Outcome)
		}
		g.mu.Unlock()
		slices.Sort(outcomes)
		if want := []string{"ntfy ok", "webhook failed: HTTP 500", "webhook ok"}; !slices.Equal(outcomes, want) {
			t.Fatalf("receipts %q, want %q", outcomes, want)
		}

		// A hanging channel: the other one goes through at once, and the
		// loop still takes messages.
		g.mu.Lock()
		g.hang["webhook"] = 10 * time.Second
		g.desktop = false
		g.mu.Unlock()
		g.in <- localapi.Message{Type: localapi.MsgSession, Session: &sessions.Session{ID: "b", Name: "web", State: sessions.Errored, NeedsAttention: true, TurnGeneration: 1}}
		synctest.Wait()
		if got := g.sentSoFar(); len(got) != 4 || got[3] != "ntfy:web needs you" {
			t.Fatalf("with the webhook hanging and no desktop: %q", got)
		}
		cancel()
		<-done
	})
}

// Test sends a sample through every channel named and reports each.
func TestRunnerTest(t *testing.T) {
	g := newChannelsRig()
	g.script["webhook"] = []Receipt{{Status: 401, Err: "HTTP 401: unauthorized"}}
	got := g.runner.Test(context.Background(), []string{"ntfy", "webhook"})
	if !got["ntfy"].OK || got["webhook"].OK || got["webhook"].Status != 401 {
		t.Fatalf("receipts %+v", got)
	}
	for _, s := range g.sentSoFar() {
		if !strings.HasSuffix(s, ":Session Supervisor test") {
			t.Errorf("sent %q", s)
		}
	}
}
