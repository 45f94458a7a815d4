package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/eta"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/storage"
)

// appCommands are the commands that talk to the running app.
func appCommands() []command {
	return []command{
		{"run", "[--headless]", "start the app (the supervisor, its local API and the agent processes)", cmdRun},
		{"new", "[--agent NAME] --cwd DIR [--name NAME] [--permission-mode MODE] (PROMPT | - | --file F)", "launch a managed session; prints its id (- reads the prompt from standard input)", cmdNew},
		{"ls", "[--all] [--json]", "list sessions (--all: the archived ones too)", cmdLs},
		{"show", "ID [--json]", "show one session", cmdShow},
		{"focus", "ID", "bring the terminal a session runs in to the front (tmux pane, terminal window)", cmdFocus},
		{"handover", "ID [--interrupt]", "continue a managed session in a terminal: waits for its turn to end (--interrupt: stops it), stops its process and opens the agent's own resume in a new tmux window, else in desktop.terminal", cmdHandover},
		{"send", "ID (PROMPT | - | --file F)", "send a prompt to a session (- reads it from standard input)", cmdSend},
		{"interrupt", "ID", "interrupt the turn in flight", cmdInterrupt},
		{"ack", "ID", "acknowledge a session (a reviewed turn becomes Idle, needs-attention is cleared)", cmdAck},
		{"resume", "ID", "resume a terminal session whose process died mid-turn in the background, as a managed session with the nudge; prints the new session's id", cmdResume},
		{"approve", "ID [--request R]", "approve permission request R (the only one open when not given)", cmdApprove},
		{"deny", "ID [--request R] [--message M]", "deny permission request R (the only one open when not given)", cmdDeny},
		{"forget", "ID [--delete-timeline]", "remove an ended session from the app; its timeline is kept (readable with timeline FULL-ID) unless --delete-timeline", cmdForget},
		{"watch", "[--json]", "print live events until Ctrl-C", cmdWatch},
		{"recover", "off|on ID", "stop recovering a session (no nudge, continue, resume or compaction), or recover it again", cmdRecover},
		{"usage", "[--by session|model|agent|day] [--since YYYY-MM-DD] [--json]", "tokens and their equivalent API cost, grouped (day: per local day, from the usage history)", cmdUsage},
	}
}

// client returns an API client for the data directory's running app.
func (c *cli) client() (*localapi.Client, error) {
	if c.machine != "" {
		return c.machineClient(c.machine)
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return nil, err
	}
	return localapi.NewClient(dir), nil
}

// requestContext bounds a one-shot request to the app.
func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// launchContext bounds a request that starts an agent (new, resume): the
// app answers once the agent took its prompt, and an agent can take a
// minute to get there (Gemini CLI 0.61.0 waits out the minute its chat was
// created in before it can load it again).
func launchContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func cmdNew(c *cli, args []string) error {
	fs := c.newFlags("new")
	agent := fs.String("agent", "", "agent CLI (default "+defaultAgent()+")")
	cwd := fs.String("cwd", "", "working directory")
	name := fs.String("name", "", "display name")
	mode := fs.String("permission-mode", "", "the agent's permission mode")
	file := fs.String("file", "", "read the prompt from this file")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	prompt, err := c.prompt("new", *file, pos)
	if err != nil {
		return err
	}
	if *cwd == "" {
		return usagef("new needs --cwd DIR")
	}
	if c.machine != "" && !filepath.IsAbs(*cwd) {
		return usagef("with --machine, --cwd is a directory on that machine: give its absolute path")
	}
	abs, err := filepath.Abs(*cwd)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", *cwd, err)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := launchContext()
	defer cancel()
	s, err := cl.Launch(ctx, localapi.LaunchRequest{Agent: *agent, Cwd: abs, Name: *name, PermissionMode: *mode, Prompt: prompt})
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, s.ID)
	return nil
}

func cmdLs(c *cli, args []string) error {
	fs := c.newFlags("ls")
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "include the archived sessions")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if handled, err := c.lsMachines(*asJSON); handled {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	list, err := cl.Sessions(ctx)
	if *all {
		list, err = cl.AllSessions(ctx)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, c.sessionsJSON(list, time.Now()))
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no sessions yet; start one with 'session-supervisor new --cwd DIR PROMPT'")
		return nil
	}
	printSessions(c, list, time.Now())
	return nil
}

// printSessions is the `ls` table, in the order and words of the tray and
// the window (sessions/view).
func printSessions(c *cli, list []sessions.Session, now time.Time) {
	list = slices.Clone(list)
	view.Sort(list)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSTATE\tAGE\tEVIDENCE")
	cells := textsafe.NewWriter(tw) // cleaned before the columns are measured
	for _, s := range list {
		state := view.StateText(s)
		if !s.ArchivedAt.IsZero() {
			state += " (archived)"
		}
		fmt.Fprintf(cells, "%s\t%s\t%s\t%s\t%s\t%s\n", sessions.ShortID(s.ID), view.Title(s), s.Agent, state, sessions.Age(now, s.StateChangedAt), s.Evidence)
	}
	tw.Flush()
}

func cmdShow(c *cli, args []string) error {
	fs := c.newFlags("show")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	s, err := c.oneSession("show", pos)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, c.sessionsJSON([]sessions.Session{s}, time.Now())[0])
	}
	printSession(c, s, time.Now())
	return nil
}

// oneSession is the session a command's one positional argument names.
func (c *cli) oneSession(command string, pos []string) (sessions.Session, error) {
	if len(pos) != 1 {
		return sessions.Session{}, usagef("%s takes one session id", command)
	}
	cl, err := c.client()
	if err != nil {
		return sessions.Session{}, err
	}
	ctx, cancel := requestContext()
	defer cancel()
	return cl.Session(ctx, pos[0])
}

func printSession(c *cli, s sessions.Session, now time.Time) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	cells := textsafe.NewWriter(tw) // cleaned before the columns are measured
	row := func(k, v string) { fmt.Fprintf(cells, "%s\t%s\n", k, v) }
	row("id", s.ID)
	row("name", s.DisplayName())
	row("agent", s.Agent)
	row("agent session", orDash(s.AgentSessionID))
	row("source", s.Source.String())
	row("cwd", s.Cwd)
	pid := "-"
	if s.PID > 0 {
		pid = fmt.Sprintf("%d", s.PID)
		if !s.ProcessAlive {
			pid += " (exited)"
		}
	}
	row("pid", pid)
	if s.Terminal != nil {
		row("terminal", s.Terminal.String())
	}
	if shared := view.SharedText(s); shared != "" {
		row("conversation", shared)
	}
	if rec := view.RecoveryText(s); rec != "" {
		row("recovery", rec)
	}
	row("state", s.State.Label())
	row("evidence", s.Evidence)
	if s.WaitReason != sessions.NoWait {
		row("waiting for", s.WaitReason.String())
	}
	for _, p := range s.Permissions {
		what := p.Tool
		if p.Input != "" {
			what += ": " + p.Input
		}
		row("permission", fmt.Sprintf("%s (approve or deny) request %s", what, p.RequestID))
	}
	if f := view.FailureText(s.Failure); f != "" {
		if retry := view.RetryText(s.Failure, time.Local); retry != "" {
			f += " (" + retry + ")"
		}
		row("failure", f)
	}
	row("needs attention", fmt.Sprintf("%t", s.NeedsAttention))
	row("turn", fmt.Sprintf("%d (in flight: %t)", s.TurnGeneration, s.InTurn))
	if len(s.OpenTools) > 0 || len(s.OpenTasks) > 0 {
		row("open", fmt.Sprintf("%d tool call(s), %d background task(s)", len(s.OpenTools), len(s.OpenTasks)))
	}
	if len(s.Usage.Total) > 0 {
		t := s.Usage.Total.Total()
		row("tokens", fmt.Sprintf("%d in · %d out · %d cache write · %d cache read", t.Input, t.Output, t.CacheWrite, t.CacheRead))
		row("cost", c.priceTable().Cost(s.Usage.Total).String())
	}
	if s.InTurn {
		band := view.TimeLeft(s, now)
		row("time left", band.String())
		if parts := band.PartsText(); parts != "" {
			row("each signal", parts)
		}
	}
	for _, w := range s.RateWindows {
		row("plan window", view.WindowText(w, now, time.Local))
	}
	if warn := view.WindowWarning(s, view.AccountWindows([]sessions.Session{s}), now, time.Local); warn != "" {
		row("plan limit", warn)
	}
	row("skipped lines", fmt.Sprintf("%d", s.SkippedLines))
	row("updated", s.UpdatedAt.Local().Format(time.DateTime))
	tw.Flush()
}

// sessionJSON is a session as `ls --json` and `show --json` print it: the
// session's own fields, and what the views derive from it (its tokens'
// equivalent API cost, the time its turn has left, a plan window it will
// hit).
type sessionJSON struct {
	sessions.Session
	Cost          pricing.Breakdown `json:"equivalent_api_cost"`
	TimeLeft      eta.Band          `json:"time_left"`
	WindowWarning string            `json:"window_warning,omitempty"`
}

// sessionsJSON derives list's JSON at now; an empty list is [], never null.
func (c *cli) sessionsJSON(list []sessions.Session, now time.Time) []sessionJSON {
	out := make([]sessionJSON, 0, len(list))
	prices := c.priceTable()
	windows := view.AccountWindows(list)
	for _, s := range list {
		out = append(out, sessionJSON{
			Session: s, Cost: prices.Cost(s.Usage.Total), TimeLeft: view.TimeLeft(s, now),
			WindowWarning: view.WindowWarning(s, windows, now, time.Local),
		})
	}
	return out
}

// priceTable is what the CLI prices tokens with: the built-in list prices
// with the data directory's pricing.csv over them. A bad override is said
// on stderr and the built-in prices are used.
func (c *cli) priceTable() *pricing.Table {
	dir, err := c.resolveDataDir()
	if err != nil {
		return pricing.Builtin()
	}
	t, err := pricing.Load(dir)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
	}
	return t
}

func cmdSend(c *cli, args []string) error {
	fs := c.newFlags("send")
	file := fs.String("file", "", "read the prompt from this file")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("send needs a session id and a prompt")
	}
	prompt, err := c.prompt("send", *file, pos[1:])
	if err != nil {
		return err
	}
	return c.sessionAction(pos[0], func(ctx context.Context, cl *localapi.Client, id string) (sessions.Session, error) {
		return cl.Send(ctx, id, prompt)
	})
}

// maxPromptBytes bounds a prompt read from a file or standard input; the
// app refuses larger input to an agent anyway (input_blocked).
const maxPromptBytes = 1 << 20

// prompt is a command's prompt: its words, or "-" for standard input, or
// --file. Reading it from a file or a pipe keeps it out of the process
// list, where any user of the machine can read a command line.
func (c *cli) prompt(cmd, file string, words []string) (string, error) {
	var (
		r    io.Reader
		from string
	)
	switch {
	case file != "" && len(words) > 0:
		return "", usagef("%s takes the prompt as words, - or --file, not both", cmd)
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("reading the prompt: %w", err)
		}
		defer f.Close()
		r, from = f, file
	case len(words) == 1 && words[0] == "-":
		if c.stdin == nil {
			return "", usagef("%s -: no standard input", cmd)
		}
		r, from = c.stdin, "standard input"
	case len(words) == 0:
		return "", usagef("%s needs a prompt (words, - for standard input, or --file F)", cmd)
	default:
		return strings.Join(words, " "), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPromptBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from %s: %w", from, err)
	}
	if len(b) > maxPromptBytes {
		return "", fmt.Errorf("the prompt in %s is over %d bytes", from, maxPromptBytes)
	}
	prompt := strings.TrimRight(string(b), "\r\n")
	if strings.TrimSpace(prompt) == "" {
		return "", usagef("%s: the prompt in %s is empty", cmd, from)
	}
	return prompt, nil
}

func cmdInterrupt(c *cli, args []string) error {
	return c.simpleAction("interrupt", args, (*localapi.Client).Interrupt)
}

func cmdAck(c *cli, args []string) error {
	return c.simpleAction("ack", args, (*localapi.Client).Ack)
}

// cmdRecover is the per-session "stop recovering" switch.
func cmdRecover(c *cli, args []string) error {
	pos, err := parseFlags(c.newFlags("recover"), args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "on" && pos[0] != "off" {
		return usagef("recover takes off or on, then one session id")
	}
	on := pos[0] == "on"
	return c.sessionAction(pos[1], func(ctx context.Context, cl *localapi.Client, id string) (sessions.Session, error) {
		s, err := cl.SetRecovery(ctx, id, on)
		if err == nil {
			what := "automatic recovery is off for this session"
			if on {
				what = "automatic recovery applies to this session again"
			}
			fmt.Fprintf(c.human(), "%s: %s\n", s.DisplayName(), what)
		}
		return s, err
	})
}

func cmdResume(c *cli, args []string) error {
	id, err := parseSessionID(c.newFlags("resume"), args)
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := launchContext()
	defer cancel()
	s, err := cl.Resume(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, s.ID)
	return nil
}

func cmdApprove(c *cli, args []string) error { return c.answer("approve", args, true) }

func cmdDeny(c *cli, args []string) error { return c.answer("deny", args, false) }

// answer approves or denies one permission request: the one --request
// names (as `show` lists them), else the only one open; with several open
// the app refuses and lists them.
func (c *cli) answer(name string, args []string, allow bool) error {
	fs := c.newFlags(name)
	req := fs.String("request", "", "the request to answer (its id, as show lists it)")
	var msg *string
	if !allow {
		msg = fs.String("message", "", "why, for the agent")
	}
	id, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	return c.sessionAction(id, func(ctx context.Context, cl *localapi.Client, id string) (sessions.Session, error) {
		m := ""
		if !allow {
			m = cmp.Or(*msg, "The user denied this request.")
		}
		return cl.Answer(ctx, id, *req, allow, m)
	})
}

func cmdForget(c *cli, args []string) error {
	fs := c.newFlags("forget")
	drop := fs.Bool("delete-timeline", false, "delete the session's timeline too")
	id, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	timeline := storage.KeepTimeline
	if *drop {
		timeline = storage.DropTimeline
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	s, err := cl.Forget(ctx, id, timeline)
	if err != nil {
		return err
	}
	if timeline == storage.KeepTimeline {
		fmt.Fprintf(textsafe.NewWriter(c.stdout), "forgot %s; its timeline is kept: session-supervisor timeline %s\n", s.DisplayName(), s.ID)
	} else {
		fmt.Fprintf(textsafe.NewWriter(c.stdout), "forgot %s and its timeline\n", s.DisplayName())
	}
	return nil
}

// simpleAction runs a one-argument session action (interrupt, ack).
func (c *cli) simpleAction(name string, args []string, act func(*localapi.Client, context.Context, string) (sessions.Session, error)) error {
	id, err := parseSessionID(c.newFlags(name), args)
	if err != nil {
		return err
	}
	return c.sessionAction(id, func(ctx context.Context, cl *localapi.Client, id string) (sessions.Session, error) {
		return act(cl, ctx, id)
	})
}

// sessionAction runs act against the app and prints the session's new state.
func (c *cli) sessionAction(id string, act func(context.Context, *localapi.Client, string) (sessions.Session, error)) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	s, err := act(ctx, cl, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.human(), "%s: %s — %s\n", s.DisplayName(), s.State.Label(), s.Evidence)
	return nil
}

func cmdWatch(c *cli, args []string) error {
	fs := c.newFlags("watch")
	asJSON := fs.Bool("json", false, "print each event as one JSON line")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if handled, err := c.watchMachines(*asJSON); handled {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, stop := c.signalContext()
	defer stop()
	names := map[string]string{}
	cursor := ""
	print := func(m localapi.Message) error {
		cursor = m.Cursor.String()
		if *asJSON {
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.stdout, "%s\n", b)
			return err
		}
		printMessage(c, m, names)
		return nil
	}
	connected := false
	for {
		err := cl.Watch(ctx, cursor, func(m localapi.Message) error { connected = true; return print(m) })
		if ctx.Err() != nil {
			return nil
		}
		if !connected {
			if err == nil {
				err = errors.New("the app closed the event stream")
			}
			return err
		}
		// The app went away: wait for it to come back, then resync.
		fmt.Fprintln(c.stderr, "connection to the app lost; reconnecting…")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func printMessage(c *cli, m localapi.Message, names map[string]string) {
	now := time.Now().Format(time.TimeOnly)
	switch m.Type {
	case localapi.MsgResync:
		fmt.Fprintf(c.human(), "%s  the app restarted; resyncing from a full snapshot\n", now)
	case localapi.MsgSnapshot:
		for _, s := range m.Sessions {
			names[s.ID] = s.DisplayName()
		}
		fmt.Fprintf(c.human(), "%s  snapshot: %d session(s)\n", now, len(m.Sessions))
		for _, s := range m.Sessions {
			fmt.Fprintf(c.human(), "          %s  %s — %s\n", s.DisplayName(), s.State.Label(), s.Evidence)
		}
	case localapi.MsgSession:
		s := m.Session
		names[s.ID] = s.DisplayName()
		fmt.Fprintf(c.human(), "%s  %s  %s — %s\n", now, s.DisplayName(), s.State.Label(), s.Evidence)
	case localapi.MsgTimeline:
		e := m.Event
		name := names[e.SessionID]
		if name == "" {
			name = sessions.ShortID(e.SessionID)
		}
		fmt.Fprintf(c.human(), "%s  %s  [%s] %s\n", now, name, e.Kind, view.TimelineDetail(e.Detail))
	case localapi.MsgEscalation:
		fmt.Fprintf(c.human(), "%s  %s NEEDS ATTENTION — %s\n", now, m.Session.DisplayName(), m.Session.Evidence)
	}
}

// signalContext is cancelled on Ctrl-C or SIGTERM (or when c.interrupt closes, in tests).
func (c *cli) signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if c.interrupt != nil {
		go func() {
			select {
			case <-c.interrupt:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, stop
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
