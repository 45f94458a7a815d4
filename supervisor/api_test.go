package supervisor

// Local API tests: a Runtime on a real store, served on a unix socket in a
// temporary data directory, driven through the Client (and raw connections
// where a client must misbehave).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// apiRig is a rig whose runtime is served on its data directory's socket.
type apiRig struct {
	*rig
	api    *localapi.API
	client *localapi.Client
}

func newAPIRig(t *testing.T, cfg rigConfig) *apiRig {
	t.Helper()
	g := newRig(t, cfg)
	api, err := localapi.Listen(g.rt, g.settings(t), g.dir, "test-version")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- api.Serve() }()
	t.Cleanup(func() {
		api.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &apiRig{rig: g, api: api, client: localapi.NewClient(g.dir)}
}

// watcher is one client streaming /v1/events.
type watcher struct {
	msgs   chan localapi.Message
	cancel context.CancelFunc
	done   chan error
}

func startWatch(t *testing.T, c *localapi.Client, cursor string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{msgs: make(chan localapi.Message, 1<<16), cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- c.Watch(ctx, cursor, func(m localapi.Message) error {
			w.msgs <- m
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// next returns the next message, failing the test at waitLimit.
func (w *watcher) next(t *testing.T) localapi.Message {
	t.Helper()
	select {
	case m := <-w.msgs:
		return m
	case err := <-w.done:
		t.Fatalf("the event stream ended: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for an event")
	}
	return localapi.Message{}
}

// until reads messages up to and including the first that satisfies ok.
func (w *watcher) until(t *testing.T, what string, ok func(localapi.Message) bool) []localapi.Message {
	t.Helper()
	var got []localapi.Message
	deadline := time.After(waitLimit)
	for {
		select {
		case m := <-w.msgs:
			got = append(got, m)
			if ok(m) {
				return got
			}
		case err := <-w.done:
			t.Fatalf("the event stream ended before %s: %v", what, err)
		case <-deadline:
			t.Fatalf("timed out waiting for %s after %d messages", what, len(got))
		}
	}
}

func types(msgs []localapi.Message) []localapi.MessageType {
	out := make([]localapi.MessageType, len(msgs))
	for i, m := range msgs {
		out[i] = m.Type
	}
	return out
}

// subscribers returns the bus's current subscriptions.
func subscribers(b *localapi.Bus) map[*localapi.Subscription]bool {
	out := map[*localapi.Subscription]bool{}
	for _, s := range b.Subscribers() {
		out[s] = true
	}
	return out
}

// waitSubscribers waits until the bus has n subscriptions.
func waitSubscribers(t *testing.T, b *localapi.Bus, n int) map[*localapi.Subscription]bool {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		subs := subscribers(b)
		if len(subs) == n {
			return subs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bus has %d subscribers, want %d", len(subs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func seedSession(id string, created time.Time) sessions.Session {
	return sessions.Session{ID: id, Agent: "claude", Source: sessions.Managed, State: sessions.WaitingOnUser,
		WaitReason: sessions.WaitReview, TurnGeneration: 1, Evidence: "turn 1 completed; waiting for review",
		CreatedAt: created, UpdatedAt: created, StateChangedAt: created}
}

func TestAPISocketIsOwnerOnly(t *testing.T) {
	for _, mode := range []os.FileMode{0o700, 0o755, 0o777} {
		t.Run(fmt.Sprintf("data dir %o", mode), func(t *testing.T) {
			g := newRig(t, rigConfig{noAgent: true})
			if err := os.Chmod(g.dir, mode); err != nil {
				t.Fatal(err)
			}
			api, err := localapi.Listen(g.rt, g.settings(t), g.dir, "v")
			if mode&0o022 != 0 {
				// Others may have placed files in it: refused, with the fix.
				if err == nil || !strings.Contains(err.Error(), "chmod 700") {
					t.Fatalf("Listen on a %o data directory = %v, want a refusal naming the fix", mode, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			fi, err := os.Stat(filepath.Join(g.dir, localapi.SocketName))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
				t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
			}
			di, err := os.Stat(g.dir)
			if err != nil {
				t.Fatal(err)
			}
			if di.Mode().Perm() != 0o700 {
				t.Errorf("data directory mode = %o, want 0700", di.Mode().Perm())
			}
		})
	}
}

func TestAPIHealth(t *testing.T) {
	g := newAPIRig(t, rigConfig{noAgent: true})
	h, err := g.client.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.PID != os.Getpid() || h.Version != "test-version" || h.Generation != g.rt.Bus().Generation() || h.DataDir != g.dir {
		t.Errorf("health = %+v, want pid %d, test-version, generation %s, data dir %s", h, os.Getpid(), g.rt.Bus().Generation(), g.dir)
	}
	// No loop runs in this rig: the health says so but is not an error.
	if h.Status != "ok" || h.Loop.Status != "not_running" || h.Loop.Subscribers != 1 {
		t.Errorf("health status %q, loop %+v; want ok, not_running, 1 subscriber (the recorder)", h.Status, h.Loop)
	}

	// A loop that started an hour ago and ticked once, 46 s after its
	// start, with a 15 s interval: stalled, and the API says so with 503.
	t0 := time.Now().Add(-time.Hour)
	g.rt.health.start(t0, 15*time.Second)
	g.rt.health.ticked(t0.Add(46*time.Second), 2*time.Second, 3*time.Millisecond, 15*time.Second)
	h, err = g.client.Health(context.Background())
	if !errors.Is(err, localapi.ErrUnavailable) {
		t.Fatalf("health of a stalled loop: %v, want ErrUnavailable", err)
	}
	if h.Status != "stalled" || h.Loop.Status != "stalled" || h.Loop.Ticks != 1 || h.Loop.TickLagSeconds != 2 || h.PID != os.Getpid() {
		t.Errorf("health of a stalled loop = %+v, want status stalled with the loop's numbers", h)
	}
	if !strings.Contains(err.Error(), "has not ticked") {
		t.Errorf("stalled health error %q does not say the loop has not ticked", err)
	}
}

// TestLoopHealthStallsAfterThreeIntervals: the boundary of "stalled".
func TestLoopHealthStallsAfterThreeIntervals(t *testing.T) {
	rt := New(Options{Store: newMemStore(nil)})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := rt.LoopHealth(t0).Status; got != "not_running" {
		t.Errorf("before Run: %q, want not_running", got)
	}
	rt.health.start(t0, 10*time.Second)
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{{0, "ok"}, {30 * time.Second, "ok"}, {30*time.Second + 1, "stalled"}} {
		if got := rt.LoopHealth(t0.Add(tc.after)).Status; got != tc.want {
			t.Errorf("%v after the start with no tick: %q, want %q", tc.after, got, tc.want)
		}
	}
	rt.health.ticked(t0.Add(40*time.Second), 0, time.Millisecond, 10*time.Second)
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{{40 * time.Second, "ok"}, {70 * time.Second, "ok"}, {70*time.Second + 1, "stalled"}} {
		if got := rt.LoopHealth(t0.Add(tc.after)).Status; got != tc.want {
			t.Errorf("%v after the start, last tick at 40 s: %q, want %q", tc.after, got, tc.want)
		}
	}
}

func TestAPIListShowTimeline(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	a1 := seedSession("aaaa1111-0000-4000-8000-000000000001", t0)
	a2 := seedSession("aaaa2222-0000-4000-8000-000000000002", t0.Add(time.Minute))
	b3 := seedSession("bbbb3333-0000-4000-8000-000000000003", t0.Add(-time.Minute))
	b3.NeedsAttention = true
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{a1, a2, b3}})
	ctx := context.Background()
	if _, err := g.store.AppendEvent(ctx, storage.TimelineEvent{SessionID: b3.ID, Time: t0, Kind: "marked_suspect", TurnGeneration: 1,
		Detail: []byte(`{"message":"12 min silent"}`)}); err != nil {
		t.Fatal(err)
	}

	list, err := g.client.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	// Needing attention first, then newest.
	if want := []string{b3.ID, a2.ID, a1.ID}; !slices.Equal(ids, want) {
		t.Errorf("list order = %v, want %v", ids, want)
	}

	cases := []struct {
		query    string
		want     string // the id found, or empty for an error
		notFound bool
		errText  string
	}{
		{query: a1.ID, want: a1.ID},
		{query: "bbbb", want: b3.ID},
		{query: "aaaa2", want: a2.ID},
		{query: "aaaa", errText: `prefix "aaaa" is ambiguous`},
		{query: "zzzz", notFound: true, errText: `"zzzz"`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			s, err := g.client.Session(ctx, tc.query)
			if tc.want != "" {
				if err != nil || s.ID != tc.want {
					t.Fatalf("show %q = %s, %v; want %s", tc.query, s.ID, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("show %q found %s, want an error", tc.query, s.ID)
			}
			if errors.Is(err, localapi.ErrNotFound) != tc.notFound || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("show %q: %v (ErrNotFound %t); want ErrNotFound=%t mentioning %s", tc.query, err, errors.Is(err, localapi.ErrNotFound), tc.notFound, tc.errText)
			}
		})
	}

	rows, err := g.client.Timeline(ctx, "bbbb", 0)
	if err != nil || len(rows) != 1 || rows[0].Kind != "marked_suspect" || rows[0].SessionID != b3.ID {
		t.Errorf("timeline by prefix = %+v, %v", rows, err)
	}
	if _, err := g.client.Timeline(ctx, "zzzz", 0); !errors.Is(err, localapi.ErrNotFound) {
		t.Errorf("timeline of an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := g.client.Timeline(ctx, "bbbb", -1); err == nil || !strings.Contains(err.Error(), "invalid limit") {
		t.Errorf("timeline with limit -1: %v", err)
	}
}

func TestAPILaunchErrors(t *testing.T) {
	g := newAPIRig(t, rigConfig{})
	ctx := context.Background()
	file := filepath.Join(g.cwd, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		req     localapi.LaunchRequest
		command string // agents.claude.command for this case
		want    []string
	}{
		{"missing cwd", localapi.LaunchRequest{Cwd: filepath.Join(g.cwd, "nope"), Prompt: "hi"}, "", []string{"working directory", "nope", "is not a directory"}},
		{"cwd is a file", localapi.LaunchRequest{Cwd: file, Prompt: "hi"}, "", []string{"is not a directory"}},
		{"unknown agent", localapi.LaunchRequest{Agent: "gemini", Cwd: g.cwd, Prompt: "hi"}, "", []string{`unknown agent "gemini"`, "claude"}},
		{"empty prompt", localapi.LaunchRequest{Cwd: g.cwd, Prompt: "  "}, "", []string{"prompt is empty"}},
		{"bad permission mode", localapi.LaunchRequest{Cwd: g.cwd, Prompt: "hi", PermissionMode: "--dangerously"}, "", []string{"invalid permission mode"}},
		{"missing agent binary", localapi.LaunchRequest{Cwd: g.cwd, Prompt: "hi"}, filepath.Join(g.cwd, "no-such-claude"), []string{claude.CommandSetting, "no-such-claude", "not found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			command := g.fake
			if tc.command != "" {
				command = tc.command
			}
			if _, err := g.client.SetSetting(ctx, claude.CommandSetting, command); err != nil {
				t.Fatal(err)
			}
			s, err := g.client.Launch(ctx, tc.req)
			if err == nil {
				t.Fatalf("launch succeeded: %+v", s)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if list, err := g.client.Sessions(ctx); err != nil || len(list) != 0 {
		t.Errorf("failed launches left sessions behind: %v, %v", list, err)
	}
}

func TestAPISettings(t *testing.T) {
	g := newAPIRig(t, rigConfig{noAgent: true})
	ctx := context.Background()
	vals, err := g.client.Settings(ctx)
	if err != nil || len(vals) != len(testSettings.Defs()) {
		t.Fatalf("settings: %d values (%v), want %d", len(vals), err, len(testSettings.Defs()))
	}
	cases := []struct {
		key, value string
		want       settings.SetResult
		errText    []string
	}{
		{key: "supervisor.tick_seconds", value: "1", want: settings.SetResult{Key: "supervisor.tick_seconds", Value: "5", Clamped: true, Requested: "1",
			Note: "1 is outside 5–60, so 5 (the nearest allowed value) was saved"}},
		{key: "supervisor.stall_suspect_minutes", value: "0.5", want: settings.SetResult{Key: "supervisor.stall_suspect_minutes", Value: "0.5", Requested: "0.5"}},
		// Stored as asked, in force at the suspect threshold (cross-key floor).
		{key: "supervisor.stall_hard_minutes", value: "0.25", want: settings.SetResult{Key: "supervisor.stall_hard_minutes", Value: "0.25", Requested: "0.25",
			InForce: "0.5", Note: "0.25 is below supervisor.stall_suspect_minutes (0.5), so 0.5 is in force until one of them changes"}},
		{key: "supervisor.enabled", value: "maybe", errText: []string{"supervisor.enabled", "maybe"}},
		{key: "no.such.key", value: "1", errText: []string{"unknown setting", "no.such.key"}},
	}
	for _, tc := range cases {
		res, err := g.client.SetSetting(ctx, tc.key, tc.value)
		if tc.errText != nil {
			if err == nil {
				t.Errorf("set %s=%s succeeded: %+v", tc.key, tc.value, res)
				continue
			}
			for _, w := range tc.errText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("set %s=%s: error %q does not mention %q", tc.key, tc.value, err, w)
				}
			}
			continue
		}
		if err != nil || res != tc.want {
			t.Errorf("set %s=%s = %+v, %v; want %+v", tc.key, tc.value, res, err, tc.want)
		}
	}
	set, err := testSettings.On(g.store).LoadSettings(ctx)
	if err != nil || set.Tick != 5*time.Second || set.StallSuspect != 30*time.Second {
		t.Errorf("stored settings: tick %v, suspect %v (%v)", set.Tick, set.StallSuspect, err)
	}
	vals, _ = g.client.Settings(ctx)
	for _, v := range vals {
		if v.Key == "supervisor.tick_seconds" && (v.Value != "5" || v.IsDefault) {
			t.Errorf("listed tick = %+v", v)
		}
	}
	// DELETE resets to the default, through the same service.
	res, err := g.client.ResetSetting(ctx, "supervisor.tick_seconds")
	if err != nil || res.Value != "15" {
		t.Errorf("reset = %+v, %v; want the default 15", res, err)
	}
	if set, _ := testSettings.On(g.store).LoadSettings(ctx); set.Tick != 15*time.Second {
		t.Errorf("tick after reset = %v", set.Tick)
	}
	if _, err := g.client.ResetSetting(ctx, "no.such.key"); err == nil || !strings.Contains(err.Error(), "unknown setting") {
		t.Errorf("reset of an unknown key: %v", err)
	}
}

// TestAPIEventsStartWithSnapshot: every connection starts with a full
// snapshot; one holding a cursor of another generation is told to resync
// first.
func TestAPIEventsStartWithSnapshot(t *testing.T) {
	s := seedSession("cccc0000-0000-4000-8000-000000000001", time.Now().UTC().Truncate(time.Millisecond))
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	gen := g.rt.Bus().Generation()
	cases := []struct {
		name, cursor string
		want         []localapi.MessageType
	}{
		{"no cursor", "", []localapi.MessageType{localapi.MsgSnapshot}},
		{"this generation", gen + ":3", []localapi.MessageType{localapi.MsgSnapshot}},
		{"an older generation", "0123456789abcdef:99", []localapi.MessageType{localapi.MsgResync, localapi.MsgSnapshot}},
		{"an unreadable cursor", "nonsense", []localapi.MessageType{localapi.MsgResync, localapi.MsgSnapshot}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := startWatch(t, g.client, tc.cursor)
			var got []localapi.Message
			for range tc.want {
				got = append(got, w.next(t))
			}
			if !slices.Equal(types(got), tc.want) {
				t.Fatalf("first messages = %v, want %v", types(got), tc.want)
			}
			snap := got[len(got)-1]
			if snap.Cursor.Generation != gen || len(snap.Sessions) != 1 || snap.Sessions[0].ID != s.ID || snap.Sessions[0].State != sessions.WaitingOnUser {
				t.Errorf("snapshot = %+v", snap)
			}
		})
	}
}

// TestAPIEventsSnapshotFirstUnderLoad: while the runtime publishes changes
// continuously, a new connection still gets the snapshot (after the resync
// notice) before any change, and the changes after it in cursor order.
func TestAPIEventsSnapshotFirstUnderLoad(t *testing.T) {
	s := seedSession("dddd0000-0000-4000-8000-000000000001", time.Now().UTC().Truncate(time.Millisecond))
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := g.rt.Ack(ctx, s.ID); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	for i := range 30 {
		cursor, want := "", []localapi.MessageType{localapi.MsgSnapshot}
		if i%2 == 1 {
			cursor, want = "0123456789abcdef:1", []localapi.MessageType{localapi.MsgResync, localapi.MsgSnapshot}
		}
		w := startWatch(t, g.client, cursor)
		var got []localapi.Message
		for range len(want) + 3 {
			got = append(got, w.next(t))
		}
		w.cancel()
		if !slices.Equal(types(got[:len(want)]), want) {
			t.Fatalf("connection %d began with %v, want %v", i, types(got), want)
		}
		snap := got[len(want)-1]
		prev := snap.Cursor.Seq
		for _, m := range got[len(want):] {
			if m.Cursor.Seq <= prev {
				t.Fatalf("connection %d: %s at seq %d after seq %d", i, m.Type, m.Cursor.Seq, prev)
			}
			prev = m.Cursor.Seq
			if m.Type == localapi.MsgSession && m.Session.UpdatedAt.Before(snap.Sessions[0].UpdatedAt) {
				t.Fatalf("connection %d: a change older than the snapshot came after it", i)
			}
		}
	}
}

// TestAPIEventsStreamChanges: session changes arrive as session and timeline
// messages in increasing cursor order, through a whole API-driven session.
func TestAPIEventsStreamChanges(t *testing.T) {
	g := newAPIRig(t, rigConfig{})
	ctx := context.Background()
	g.agent.setScript(writeFakeScript(t, []fcStep{fcText, fcResult}))
	w := startWatch(t, g.client, "")
	if m := w.next(t); m.Type != localapi.MsgSnapshot || len(m.Sessions) != 0 {
		t.Fatalf("first message = %+v, want an empty snapshot", m)
	}
	s, err := g.client.Launch(ctx, localapi.LaunchRequest{Cwd: g.cwd, Name: "via api", Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != sessions.Working || s.Name != "via api" {
		t.Errorf("launched: %s %q", s.State, s.Name)
	}
	isState := func(st sessions.State, gen int64) func(localapi.Message) bool {
		return func(m localapi.Message) bool {
			return m.Type == localapi.MsgSession && m.Session.ID == s.ID && m.Session.State == st && m.Session.TurnGeneration == gen
		}
	}
	msgs := w.until(t, "the turn to complete", isState(sessions.WaitingOnUser, 1))
	if !slices.ContainsFunc(msgs, isState(sessions.Working, 1)) {
		t.Errorf("no Working session message before the review: %v", types(msgs))
	}
	if !slices.ContainsFunc(msgs, func(m localapi.Message) bool { return m.Type == localapi.MsgTimeline && m.Event.Kind == "prompt_sent" }) {
		t.Errorf("no prompt_sent timeline message: %v", types(msgs))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Cursor.Seq <= msgs[i-1].Cursor.Seq || msgs[i].Cursor.Generation != g.rt.Bus().Generation() {
			t.Fatalf("message %d cursor %+v after %+v", i, msgs[i].Cursor, msgs[i-1].Cursor)
		}
	}

	if _, err := g.client.Interrupt(ctx, s.ID); err == nil || !strings.Contains(err.Error(), "no turn in flight") {
		t.Errorf("interrupt between turns: %v", err)
	}
	if _, err := g.client.Send(ctx, s.ID, "again"); err != nil {
		t.Fatal(err)
	}
	w.until(t, "turn 2 to complete", isState(sessions.WaitingOnUser, 2))
	if a, err := g.client.Ack(ctx, s.ID); err != nil || a.State != sessions.Idle {
		t.Fatalf("ack: %s, %v", a.State, err)
	}
	w.until(t, "the ack", isState(sessions.Idle, 2))
	if _, err := g.client.Answer(ctx, s.ID, "", true, ""); err == nil || !strings.Contains(err.Error(), "no pending permission") {
		t.Errorf("approve with nothing pending: %v", err)
	}
	// A request no longer open is its own kind over the wire (a 409 the
	// client rebuilds), so a window can say the request was already answered.
	if _, err := g.client.Answer(ctx, s.ID, "req_gone", true, ""); !errors.Is(err, localapi.ErrRequestClosed) || !strings.Contains(err.Error(), "req_gone") {
		t.Errorf("approve a request no longer open: %v, want ErrRequestClosed", err)
	}
}

func TestAPIPublishSnapshotArrives(t *testing.T) {
	s := seedSession("eeee0000-0000-4000-8000-000000000001", time.Now().UTC().Truncate(time.Millisecond))
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	w := startWatch(t, g.client, "")
	first := w.next(t)
	for range 3 {
		g.rt.PublishSnapshot()
		m := w.next(t)
		if m.Type != localapi.MsgSnapshot || m.Cursor != g.rt.Bus().Cursor() || len(m.Sessions) != 1 || m.Sessions[0].ID != s.ID {
			t.Fatalf("after PublishSnapshot got %s %+v (%d sessions)", m.Type, m.Cursor, len(m.Sessions))
		}
		if m.Cursor.Seq <= first.Cursor.Seq {
			t.Errorf("re-sent snapshot seq %d not after %d", m.Cursor.Seq, first.Cursor.Seq)
		}
		first = m
	}
}

// TestAPISlowClientDoesNotBlock: a client that never reads its stream holds
// up neither the runtime nor other clients; it lags, and catches up from the
// next snapshot once it reads again.
func TestAPISlowClientDoesNotBlock(t *testing.T) {
	s := seedSession("ffff0000-0000-4000-8000-000000000001", time.Now().UTC().Truncate(time.Millisecond))
	g := newAPIRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	ctx := context.Background()
	bus := g.rt.Bus()

	good := startWatch(t, g.client, "")
	good.next(t)
	before := waitSubscribers(t, bus, 2) // the rig's recorder and good

	conn, err := net.Dial("unix", filepath.Join(g.dir, localapi.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprint(conn, "GET /v1/events HTTP/1.1\r\nHost: supervisor\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var slow *localapi.Subscription
	for sub := range waitSubscribers(t, bus, 3) {
		if !before[sub] {
			slow = sub
		}
	}

	// A flood far bigger than the socket buffers and the queue.
	pad := `{"pad":"` + strings.Repeat("x", 16<<10) + `"}`
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for i := range 1000 {
			bus.Publish(localapi.Message{Type: localapi.MsgTimeline, Event: &localapi.TimelineRow{ID: int64(i), SessionID: "flood", Kind: "flood", Detail: []byte(pad)}})
		}
	}()
	select {
	case <-flooded:
	case <-time.After(waitLimit):
		t.Fatal("publishing blocked on a client that does not read")
	}
	if slow.Dropped() == 0 {
		t.Fatal("the slow client dropped nothing: the flood did not fill its queue")
	}

	// The runtime and the good client carry on.
	snap := g.rt.Bus().Cursor()
	g.rt.PublishSnapshot()
	good.until(t, "the snapshot after the flood", func(m localapi.Message) bool { return m.Type == localapi.MsgSnapshot && m.Cursor.Seq > snap.Seq })
	for range 20 {
		if _, err := g.rt.Ack(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	acked := bus.Cursor()
	good.until(t, "the last ack", func(m localapi.Message) bool { return m.Cursor.Seq >= acked.Seq })
	if h, err := g.client.Health(ctx); err != nil || h.Generation != bus.Generation() {
		t.Fatalf("health while a client lags: %+v, %v", h, err)
	}

	// The slow client reads at last: it gets a snapshot at least as new as
	// the one published after the flood, then the next snapshot and the
	// incremental messages after it.
	// Closing conn (deferred above) ends the reader below.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	slowMsgs := make(chan localapi.Message, 1<<12)
	go func() {
		_ = localapi.ReadEvents(resp.Body, func(m localapi.Message) error { slowMsgs <- m; return nil })
	}()
	slowWatch := &watcher{msgs: slowMsgs, done: make(chan error)}
	slowWatch.until(t, "the slow client's snapshot", func(m localapi.Message) bool { return m.Type == localapi.MsgSnapshot && m.Cursor.Seq > snap.Seq })
	g.rt.PublishSnapshot()
	resync := bus.Cursor()
	marker := bus.Publish(localapi.Message{Type: localapi.MsgSession, Session: &sessions.Session{ID: "marker"}})
	got := slowWatch.until(t, "the marker", func(m localapi.Message) bool { return m.Cursor == marker })
	if !slices.ContainsFunc(got, func(m localapi.Message) bool { return m.Type == localapi.MsgSnapshot && m.Cursor == resync }) {
		t.Errorf("the slow client got the message after the snapshot but not the snapshot: %v", types(got))
	}
}

// TestAPICloseEndsEventStreams: stopping the API ends live streams cleanly
// and at once, instead of waiting for them to go idle (they never do).
func TestAPICloseEndsEventStreams(t *testing.T) {
	g := newAPIRig(t, rigConfig{noAgent: true})
	w := startWatch(t, g.client, "")
	w.next(t)
	start := time.Now()
	if err := g.api.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with a stream open", d.Round(time.Millisecond))
	}
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		if err != nil {
			t.Errorf("the stream ended with %v, want a clean end", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the stream did not end")
	}
	if _, err := os.Stat(filepath.Join(g.dir, localapi.SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
}

func TestClientNotRunning(t *testing.T) {
	stale := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(stale, localapi.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a socket file nobody answers on: the app died
	cases := map[string]string{
		"no socket":         t.TempDir(),
		"stale socket":      stale,
		"no data directory": filepath.Join(t.TempDir(), "missing"),
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		dir := cases[name]
		t.Run(name, func(t *testing.T) {
			c := localapi.NewClient(dir)
			ctx := context.Background()
			_, err := c.Health(ctx)
			if !errors.Is(err, localapi.ErrNotRunning) {
				t.Fatalf("Health: %v, want ErrNotRunning", err)
			}
			for _, w := range []string{"not running", filepath.Join(dir, localapi.SocketName), "session-supervisor run"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if err := c.Watch(ctx, "", func(localapi.Message) error { return nil }); !errors.Is(err, localapi.ErrNotRunning) {
				t.Errorf("Watch: %v, want ErrNotRunning", err)
			}
		})
	}
}

// TestAPIAttachedDesktop: while a desktop streams events as a desktop, the
// supervisor knows it (and leaves notifications to it), and POST /v1/show
// reaches that desktop as a show message; once it detaches, show answers
// that no window was shown.
func TestAPIAttachedDesktop(t *testing.T) {
	g := newAPIRig(t, rigConfig{noAgent: true})
	ctx := context.Background()
	if g.api.DesktopAttached() {
		t.Fatal("a desktop is attached before any connected")
	}
	wctx, stop := context.WithCancel(ctx)
	got := make(chan localapi.MessageType, 16)
	watching := make(chan error, 1)
	go func() {
		watching <- g.client.WatchAsDesktop(wctx, "", func(m localapi.Message) error {
			got <- m.Type
			return nil
		})
	}()
	if typ := <-got; typ != localapi.MsgSnapshot {
		t.Fatalf("first message %s, want snapshot", typ)
	}
	if !g.api.DesktopAttached() {
		t.Fatal("the streaming desktop is not counted as attached")
	}
	res, err := g.client.Show(ctx)
	if err != nil || !res.Shown {
		t.Fatalf("show with a desktop attached: %+v, %v; want shown", res, err)
	}
	if typ := <-got; typ != localapi.MsgShow {
		t.Fatalf("the desktop got %s, want show", typ)
	}
	stop()
	<-watching
	deadline := time.Now().Add(waitLimit)
	for g.api.DesktopAttached() {
		if time.Now().After(deadline) {
			t.Fatal("the desktop still counts as attached after it disconnected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res, err := g.client.Show(ctx); err != nil || res.Shown {
		t.Errorf("show with nothing attached: %+v, %v; want not shown", res, err)
	}
}
