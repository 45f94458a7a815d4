package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// testSettings is the settings registry as the composition root builds it,
// with Claude Code alone, so agents.claude.command exists.
var testSettings = func() *settings.Registry {
	a := claude.Agent{}
	return settings.MustRegistry(settings.Agent{Name: a.Name(), DisplayName: a.DisplayName(), DefaultCommand: a.DefaultCommand()})
}()

// t0 is the fixed "now" of every test: ages, countdowns and timeline times
// (shown in t0's location, UTC) are the same on every machine.
var t0 = time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	// Paths under this "home" are shown as ~/…, whoever runs the tests.
	homeDir = "/home/dev"
	os.Exit(m.Run())
}

// lightTheme is Fyne's default theme pinned to its light variant: the test
// app's settings report no variant, and goldens should show what most
// users see.
type lightTheme struct{ fyne.Theme }

func (t lightTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, theme.VariantLight)
}

// env is a window over a real runtime and a real store in a temp dir.
type env struct {
	t     *testing.T
	ctx   context.Context
	store *storage.Store
	// settings is the settings service over store, as cmd run builds it.
	settings *settings.Service
	rt       *supervisor.Runtime
	m        *model.Model
	sub      *localapi.Subscription
	w        *Window
	now      time.Time
	// opened records OpenDir calls.
	opened []string
	// push is what the push channels report (nil: none run).
	push *localapi.PushStatus
	// notifyTest answers Send test (nil: no channel configured).
	notifyTest func(ctx context.Context) ([]localapi.PushReceipt, error)
}

// seed is the sessions the tests (and the golden) show: one per kind of
// state the list must tell apart.
func seed() []sessions.Session {
	mk := func(id, name string, st sessions.State, ev string, ago time.Duration) sessions.Session {
		return sessions.Session{
			ID: id, Name: name, Agent: "claude", Source: sessions.Managed,
			Cwd: "/home/dev/src/" + name, State: st, Evidence: ev,
			StateChangedAt: t0.Add(-ago), CreatedAt: t0.Add(-ago - time.Hour), UpdatedAt: t0.Add(-ago),
			TurnGeneration: 2,
		}
	}
	attention := mk("a1", "refactor-auth", sessions.Interrupted, "turn 3 died mid-work; 2 nudges sent, nothing left to try", 12*time.Minute)
	attention.NeedsAttention = true
	attention.TurnGeneration = 3
	attention.Nudge.Attempts = 2

	review := mk("b2", "docs-site", sessions.WaitingOnUser, "turn 5 finished; waiting for your review", 3*time.Minute)
	review.WaitReason = sessions.WaitReview
	review.TurnGeneration = 5

	perm := mk("c3", "api-migration", sessions.WaitingOnUser, "asks to run Bash: go test ./...", 45*time.Second)
	perm.WaitReason = sessions.WaitPermission
	perm.Permission = &sessions.Permission{RequestID: "req-1", Tool: "Bash", Input: "go test ./..."}

	rate := mk("d4", "billing-export", sessions.Recovering, "rate limited; continuing when the limit resets", 6*time.Minute)
	rate.Failure = sessions.Failure{Kind: sessions.RateLimit, Message: "429: rate limit reached for requests", RetryAt: t0.Add(4*time.Minute + 10*time.Second)}
	rate.Supervision = sessions.Supervision{Recovery: "rate_limit", RecoveryAttempts: 1, NextAttemptAt: t0.Add(4*time.Minute + 10*time.Second)}

	suspect := mk("e5", "search-index", sessions.Suspect, "12 min silent, Bash open, pid 4242 alive", 2*time.Minute)
	working := mk("f6", "ui-polish", sessions.Working, "tool Edit finished", 20*time.Second)
	idle := mk("g7", "old-experiment", sessions.Idle, "session closed", 50*time.Hour)
	return []sessions.Session{attention, review, perm, rate, suspect, working, idle}
}

// row makes a timeline row at t0 - ago.
func row(id string, gen int64, ago time.Duration, kind string, detail map[string]any) storage.TimelineEvent {
	b, _ := json.Marshal(detail)
	return storage.TimelineEvent{SessionID: id, Time: t0.Add(-ago), Kind: kind, TurnGeneration: gen, Detail: b}
}

// seedTimeline is refactor-auth's history over three turns.
func seedTimeline() []storage.TimelineEvent {
	return []storage.TimelineEvent{
		row("a1", 1, 70*time.Minute, "prompt_sent", map[string]any{"message": "prompt sent by the user"}),
		row("a1", 1, 60*time.Minute, "state_changed", map[string]any{"from": "working", "to": "waiting_on_user", "message": "turn 1 finished"}),
		row("a1", 2, 50*time.Minute, "prompt_sent", map[string]any{"message": "prompt sent by the user"}),
		row("a1", 2, 40*time.Minute, "marked_suspect", map[string]any{"message": "10 min silent, pid 4242 alive"}),
		row("a1", 2, 30*time.Minute, "stall_interrupt", map[string]any{"message": "150 min silent; interrupting the turn"}),
		row("a1", 3, 20*time.Minute, "nudge_sent", map[string]any{"message": "continuation nudge 1 of 2"}),
		row("a1", 3, 15*time.Minute, "nudge_sent", map[string]any{"message": "continuation nudge 2 of 2"}),
		row("a1", 3, 12*time.Minute, "escalated", map[string]any{"message": "nothing left to try"}),
	}
}

// newEnv opens a store in a temp dir, seeds it, boots a runtime over it
// and builds the window with the fixed clock. Backend commands run
// synchronously so each test step sees its effect.
func newEnv(t *testing.T, list []sessions.Session, rows []storage.TimelineEvent) *env {
	t.Helper()
	return newEnvWith(t, list, rows, nil)
}

// newEnvWith is newEnv with the window's options changed by opts.
func newEnvWith(t *testing.T, list []sessions.Session, rows []storage.TimelineEvent, opts func(*Options)) *env {
	t.Helper()
	a := test.NewTempApp(t)
	a.Settings().SetTheme(lightTheme{theme.DefaultTheme()})
	e := &env{t: t, ctx: context.Background(), now: t0}
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	for _, s := range list {
		var evs []storage.TimelineEvent
		for _, r := range rows {
			if r.SessionID == s.ID {
				evs = append(evs, r)
			}
		}
		if err := st.SaveSessionWithEvents(e.ctx, s, evs); err != nil {
			t.Fatal(err)
		}
	}
	e.rt = supervisor.New(supervisor.Options{Store: st, Agents: map[string]supervisor.Agent{}})
	if err := e.rt.Boot(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.settings, err = settings.NewService(e.ctx, testSettings, st); err != nil {
		t.Fatal(err)
	}
	// The model is fed synchronously from a real subscription: pump
	// applies what the runtime published so far, so each step is ordered
	// without a feeding goroutine.
	e.m = model.New()
	e.sub = e.rt.Subscribe(4096, false)
	t.Cleanup(func() { e.rt.Bus().Unsubscribe(e.sub) })
	e.pump()
	o := Options{
		Agents:      []sessions.AgentInfo{claude.Agent{}},
		SettingDefs: testSettings.Defs(),
		Now:         func() time.Time { return e.now },
		OpenDir: func(p string) error {
			e.opened = append(e.opened, p)
			return nil
		},
		PushStatus: func() *localapi.PushStatus { return e.push },
		NotifyTest: func(ctx context.Context) ([]localapi.PushReceipt, error) {
			if e.notifyTest == nil {
				return nil, errors.New("no push channel is configured: set notify.ntfy.topic or notify.webhook.url")
			}
			return e.notifyTest(ctx)
		},
	}
	if opts != nil {
		opts(&o)
	}
	e.w = NewWindow(a, e.rt, e.settings, e.m, o)
	// Fyne's goroutine runs after the model has caught up, as it does
	// (within a coalescing delay) in the app.
	e.w.do = func(f func()) { e.pump(); f() }
	e.w.async = func(f func()) { f() }
	t.Cleanup(e.w.win.Close)
	e.w.Show()
	return e
}

// pump applies every message the runtime has published so far.
func (e *env) pump() {
	for {
		select {
		case m := <-e.sub.C:
			e.m.Apply(m)
		default:
			return
		}
	}
}

// refresh is what the window does after the supervisor changed something:
// the model catches up, then the window redraws from it.
func (e *env) refresh() {
	e.pump()
	e.w.Refresh()
}

// walk visits o and every visible object under it, through the widgets'
// current renderers (not fresh ones, which would reset a List's scroll).
func walk(o fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	if o == nil || !o.Visible() {
		return
	}
	fn(o)
	switch c := o.(type) {
	case fyne.Widget:
		for _, ch := range test.WidgetRenderer(c).Objects() {
			walk(ch, fn)
		}
	case *fyne.Container:
		for _, ch := range c.Objects {
			walk(ch, fn)
		}
	}
}

// richString is the plain text of a RichText.
func richString(rt *widget.RichText) string { return rt.String() }

// String is what a rendered session row says.
func (r *sessionRow) String() string {
	if !r.badge.Visible() {
		return "# " + richString(r.title) + " | " + richString(r.evidence) // a machine's heading
	}
	if richString(r.cost) != "" || richString(r.left) != "" {
		return fmt.Sprintf("[%s] %s | %s | %s / %s | %s", r.badge.text.Text, richString(r.title), richString(r.evidence), richString(r.cost), richString(r.left), r.age.Text)
	}
	return fmt.Sprintf("[%s] %s | %s | %s", r.badge.text.Text, richString(r.title), richString(r.evidence), r.age.Text)
}

// renderedRows are the session rows on screen, top to bottom.
func (e *env) renderedRows() []string {
	var rows []*sessionRow
	walk(e.w.list.list, func(o fyne.CanvasObject) {
		if r, ok := o.(*sessionRow); ok {
			rows = append(rows, r)
		}
	})
	sortByY(rows)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	return out
}

// sortByY orders rows by their position (the List pools and reuses them in
// any order).
func sortByY(rows []*sessionRow) {
	pos := func(r *sessionRow) float32 {
		return fyne.CurrentApp().Driver().AbsolutePositionForObject(r).Y
	}
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && pos(rows[j]) < pos(rows[j-1]); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

// key sends one key to whatever has the focus.
func (e *env) key(name fyne.KeyName) {
	e.t.Helper()
	f := e.w.win.Canvas().Focused()
	if f == nil {
		e.t.Fatalf("no focused object for key %s", name)
	}
	f.TypedKey(&fyne.KeyEvent{Name: name})
}

// session reads a session back from the backend.
func (e *env) session(id string) sessions.Session {
	e.t.Helper()
	s, err := e.rt.Session(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}
