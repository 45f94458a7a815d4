package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/settings"
)

// machineCommands reach other machines' supervisors.
func machineCommands() []command {
	return []command{
		{"machines", "add NAME [USER@]HOST[:PORT] [--command PATH] | ls [--json] | rm NAME", "the other machines whose supervisors this one reaches over ssh", cmdMachines},
		{"dial-stdio", "[--start]", "connect standard input and output to this machine's supervisor (what ssh runs for a client on another machine); --start starts the user's service first when none runs", cmdDialStdio},
	}
}

func cmdMachines(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("machines needs a subcommand: add, ls or rm")
	}
	sub, args := args[0], args[1:]
	fs := c.newFlags("machines " + sub)
	var asJSON *bool
	var command *string
	switch sub {
	case "add":
		command = fs.String("command", "", "the app's command on the remote (default "+machines.DefaultCommand+" on its PATH)")
	case "ls":
		asJSON = fs.Bool("json", false, "print JSON")
	case "rm":
	default:
		return usagef("unknown machines subcommand %q", sub)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	list, err := machines.Load(dir)
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		if len(pos) != 2 {
			return usagef("machines add takes NAME and [USER@]HOST[:PORT]")
		}
		m, err := machines.Parse(pos[0], pos[1], *command)
		if err != nil {
			return err
		}
		if list, err = machines.Add(list, m); err != nil {
			return err
		}
		if err := machines.Save(dir, list); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "added %s (%s); 'session-supervisor machines ls' checks it\n", m.Name, m.Target())
	case "rm":
		if len(pos) != 1 {
			return usagef("machines rm takes NAME")
		}
		if list, err = machines.Remove(list, pos[0]); err != nil {
			return err
		}
		if err := machines.Save(dir, list); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "removed %s\n", pos[0])
	case "ls":
		if len(pos) != 0 {
			return usagef("machines ls takes no arguments")
		}
		return c.listMachines(dir, list, *asJSON)
	}
	return nil
}

// machineAware says whether a command talks to a supervisor through
// c.client, so --machine can send it to another machine's: the app
// commands but run (which starts this machine's).
func machineAware(name string) bool {
	for _, cmd := range appCommands() {
		if cmd.name == name {
			return name != "run"
		}
	}
	return false
}

// machineStatus is one row of `machines ls`.
type machineStatus struct {
	Name       string    `json:"name"`
	Target     string    `json:"target"`
	Command    string    `json:"command"`
	Reachable  bool      `json:"reachable"`
	Version    string    `json:"version,omitempty"`
	APIVersion int       `json:"api_version,omitempty"`
	Sessions   int       `json:"sessions"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	// Health is the remote supervisor's loop status ("ok", "stalled").
	Health string `json:"health,omitempty"`
	Error  string `json:"error,omitempty"`
	// Fix is what to do about Error.
	Fix string `json:"fix,omitempty"`
}

// listMachines asks every machine at once (a slow one does not hold up the
// others) and records when each last answered.
func (c *cli) listMachines(dir string, list []machines.Machine, asJSON bool) error {
	ssh, err := c.sshCommand()
	if err != nil {
		return err
	}
	rows := probeMachines(ssh, list)
	seen := false
	for i := range list {
		if rows[i].Reachable {
			list[i].LastSeen, seen = rows[i].LastSeen, true
		} else {
			rows[i].LastSeen = list[i].LastSeen
		}
	}
	if seen {
		if err := machines.Save(dir, list); err != nil {
			return err
		}
	}
	if asJSON {
		if rows == nil {
			rows = []machineStatus{}
		}
		return writeJSON(c, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "no machines yet: 'session-supervisor machines add NAME [USER@]HOST' adds one")
		return nil
	}
	tw := tabwriter.NewWriter(c.human(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTARGET\tSTATE\tVERSION\tSESSIONS\tLAST SEEN")
	for _, r := range rows {
		state, sessionsText := "reachable", fmt.Sprint(r.Sessions)
		if !r.Reachable {
			state, sessionsText = "unreachable", "-"
		}
		last := "never"
		if !r.LastSeen.IsZero() {
			last = r.LastSeen.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Target, state, orDash(r.Version), sessionsText, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(c.human(), "%s: %s\n", r.Name, r.Error)
		}
	}
	return nil
}

// probeMachines asks every machine at once.
func probeMachines(ssh []string, list []machines.Machine) []machineStatus {
	rows := make([]machineStatus, len(list))
	var wg sync.WaitGroup
	for i, m := range list {
		wg.Go(func() { rows[i] = probeMachine(ssh, m) })
	}
	wg.Wait()
	return rows
}

// probeMachine connects to one machine, checks the API version and counts
// its sessions.
func probeMachine(ssh []string, m machines.Machine) machineStatus {
	row := machineStatus{Name: m.Name, Target: m.Target(), Command: m.RemoteCommand()}
	cl := machines.Client(ssh, m)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := cl.CheckVersion(ctx)
	row.Version, row.APIVersion, row.Health = h.Version, h.APIVersion, h.Status
	if err != nil {
		row.Error, row.Fix = err.Error(), machines.Advice(err, m)
		return row
	}
	list, err := cl.Sessions(ctx)
	if err != nil {
		row.Error, row.Fix = err.Error(), machines.Advice(err, m)
		return row
	}
	row.Reachable, row.Sessions, row.LastSeen = true, len(list), time.Now().UTC().Truncate(time.Second)
	return row
}

// sshCommand is machines.ssh_command as the database holds it (the app
// persists every change before it applies it).
func (c *cli) sshCommand() ([]string, error) {
	st, err := c.openStore()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	svc, err := settings.NewService(context.Background(), settingsRegistry, st)
	if err != nil {
		return nil, err
	}
	v, err := svc.Value(machines.SSHCommandSetting)
	if err != nil {
		return nil, err
	}
	return machines.SplitCommand(v.Value)
}

// machineClient is the client for --machine NAME.
func (c *cli) machineClient(name string) (*localapi.Client, error) {
	dir, err := c.resolveDataDir()
	if err != nil {
		return nil, err
	}
	list, err := machines.Load(dir)
	if err != nil {
		return nil, err
	}
	m, ok := machines.Find(list, name)
	if !ok {
		return nil, fmt.Errorf("no machine named %s ('session-supervisor machines ls' lists them)", name)
	}
	ssh, err := c.sshCommand()
	if err != nil {
		return nil, err
	}
	cl := machines.Client(ssh, m)
	ctx, cancel := requestContext()
	defer cancel()
	if _, err := cl.CheckVersion(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// errNoSupervisor is what the bridge says when nothing answers here.
var errNoSupervisor = errors.New("no Session Supervisor runs on this machine")

// cmdDialStdio is the far end of a connection from another machine: ssh
// runs it, and it joins its standard input and output to the local API's
// socket. The API checks this process like any client (the same user,
// not an agent's tool).
func cmdDialStdio(c *cli, args []string) error {
	fs := c.newFlags("dial-stdio")
	start := fs.Bool("start", false, "start the user's service when no supervisor runs, and wait for it")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	socket := filepath.Join(dir, localapi.SocketName)
	conn, err := net.Dial("unix", socket)
	if err != nil && *start {
		var startErr error
		if conn, startErr = c.startServiceAndDial(socket); startErr != nil {
			return fmt.Errorf("%w (nothing answers on %s), and starting the service did not help: %v", errNoSupervisor, socket, startErr)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%w (nothing answers on %s): start it with 'session-supervisor service start' or 'session-supervisor run --headless'", errNoSupervisor, socket)
	}
	defer conn.Close()
	return bridge(conn.(*net.UnixConn), c.stdin, c.stdout)
}

// startServiceAndDial starts the user's service (its words go to stderr:
// stdout is the connection) and waits up to 30 seconds for its socket.
func (c *cli) startServiceAndDial(socket string) (net.Conn, error) {
	quiet := *c
	quiet.stdout = c.stderr
	if err := cmdService(&quiet, []string{"start"}); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil || time.Now().After(deadline) {
			return conn, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bridge copies both ways until the app closes the connection; the end of
// the input is passed on as a half close, so a last request still gets
// its answer.
func bridge(conn *net.UnixConn, in io.Reader, out io.Writer) error {
	sent := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		if cerr := conn.CloseWrite(); err == nil {
			err = cerr
		}
		sent <- err
	}()
	if f, ok := out.(*os.File); ok {
		out = f // io.Copy's splice path for a pipe
	}
	_, err := io.Copy(out, conn)
	if err != nil {
		return fmt.Errorf("relaying the app's answers: %w", err)
	}
	select {
	case err := <-sent:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("relaying requests to the app: %w", err)
		}
	default:
		// The app closed first; the input's copy ends with the process.
	}
	return nil
}

// machineSession is a session with the machine it runs on, as `ls --json`
// prints it when machines are configured.
type machineSession struct {
	Machine string `json:"machine"`
	sessions.Session
}

// allMachines is what a command over every machine needs: the data
// directory, the other machines and the ssh command. list is nil when the
// command is for one machine (--machine) or there are no others.
func (c *cli) allMachines() (dir string, list []machines.Machine, ssh []string, err error) {
	if c.machine != "" {
		return "", nil, nil, nil
	}
	if dir, err = c.resolveDataDir(); err != nil {
		return "", nil, nil, err
	}
	if list, err = machines.Load(dir); err != nil || len(list) == 0 {
		return "", nil, nil, err
	}
	if ssh, err = c.sshCommand(); err != nil {
		return "", nil, nil, err
	}
	return dir, list, ssh, nil
}

// sessionsOfMachines asks every machine for its sessions with fetch, this
// one's first, each at once (a slow machine delays only its own rows,
// bounded by the request's deadline), each machine's in the view's order.
// A machine that cannot be reached is named on stderr and its rows are
// missing; the others are listed. handled is false when no other machine
// is configured.
func (c *cli) sessionsOfMachines(fetch func(context.Context, *localapi.Client) ([]sessions.Session, error)) (rows []machineSession, handled bool, err error) {
	dir, list, ssh, err := c.allMachines()
	if err != nil || list == nil {
		return nil, err != nil, err
	}
	type answer struct {
		list []sessions.Session
		err  error
	}
	names := []string{machines.LocalName}
	clients := []*localapi.Client{localapi.NewClient(dir)}
	for _, m := range list {
		names = append(names, m.Name)
		clients = append(clients, machines.Client(ssh, m))
	}
	answers := make([]answer, len(clients))
	ctx, cancel := requestContext()
	defer cancel()
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() {
			defer cl.Close()
			if i > 0 {
				if _, err := cl.CheckVersion(ctx); err != nil {
					answers[i].err = err
					return
				}
			}
			answers[i].list, answers[i].err = fetch(ctx, cl)
		})
	}
	wg.Wait()
	rows = []machineSession{}
	failed := 0
	for i, a := range answers {
		if a.err != nil {
			failed++
			fmt.Fprintf(c.stderr, "%s: %s\n", names[i], textsafe.Clean(a.err.Error()))
			continue
		}
		group := slices.Clone(a.list)
		view.Sort(group)
		for _, s := range group {
			rows = append(rows, machineSession{Machine: names[i], Session: s})
		}
	}
	if failed == len(answers) {
		return nil, true, fmt.Errorf("no machine answered, this one included")
	}
	return rows, true, nil
}

// lsMachines is `ls` when other machines are configured and no --machine
// was given: every machine's sessions, this one's first (see
// sessionsOfMachines). handled is false when there are no other machines.
func (c *cli) lsMachines(asJSON bool) (handled bool, err error) {
	rows, handled, err := c.sessionsOfMachines(func(ctx context.Context, cl *localapi.Client) ([]sessions.Session, error) {
		return cl.Sessions(ctx)
	})
	if !handled || err != nil {
		return handled, err
	}
	if asJSON {
		return true, writeJSON(c, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "no sessions on any machine yet; start one with 'session-supervisor [--machine NAME] new --cwd DIR PROMPT'")
		return true, nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tID\tNAME\tAGENT\tSTATE\tAGE\tEVIDENCE")
	cells := textsafe.NewWriter(tw)
	for _, r := range rows {
		s := r.Session
		fmt.Fprintf(cells, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Machine, sessions.ShortID(s.ID), view.Title(s), s.Agent, view.StateText(s), sessions.Age(now, s.StateChangedAt), s.Evidence)
	}
	return true, tw.Flush()
}

// watchMachines is `watch` when other machines are configured and no
// --machine was given: one stream per machine, each on its own goroutine
// with its own cursor, reconnected with backoff when it drops (resynced
// from the cursor, so nothing is printed twice or lost), every event
// carrying its machine. It runs until Ctrl-C. handled is false when there
// are no other machines.
func (c *cli) watchMachines(asJSON bool) (handled bool, err error) {
	dir, list, ssh, err := c.allMachines()
	if err != nil || list == nil {
		return err != nil, err
	}
	ctx, stop := c.signalContext()
	defer stop()
	var out sync.Mutex // one line at a time, whichever machine it is from
	follow := func(name string, cl *localapi.Client, remote bool) {
		defer cl.Close()
		lines := &linePrefixer{w: c.stdout, prefix: name + "  ", mu: &out}
		mc := &cli{stdout: lines, stderr: c.stderr}
		names := map[string]string{}
		cursor := ""
		for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
			err := func() error {
				if remote {
					if _, err := cl.CheckVersion(ctx); err != nil {
						return err
					}
				}
				return cl.Watch(ctx, cursor, func(m localapi.Message) error {
					backoff = time.Second
					cursor = m.Cursor.String()
					if !asJSON {
						printMessage(mc, m, names)
						return nil
					}
					b, err := json.Marshal(machineMessage{Machine: name, Message: m})
					if err != nil {
						return err
					}
					out.Lock()
					defer out.Unlock()
					_, err = fmt.Fprintf(c.stdout, "%s\n", b)
					return err
				})
			}()
			if ctx.Err() != nil {
				return
			}
			reason := "the stream ended"
			if err != nil {
				reason = err.Error()
			}
			fmt.Fprintf(c.stderr, "%s: %s; reconnecting in %s\n", name, textsafe.Clean(reason), backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { follow(machines.LocalName, localapi.NewClient(dir), false) })
	for _, m := range list {
		wg.Go(func() { follow(m.Name, machines.Client(ssh, m), true) })
	}
	wg.Wait()
	return true, nil
}

// machineMessage is one `watch --json` line with machines configured.
type machineMessage struct {
	Machine string `json:"machine"`
	localapi.Message
}

// linePrefixer starts every line written through it with prefix, holding
// mu for each write so machines' lines do not interleave.
type linePrefixer struct {
	w       io.Writer
	prefix  string
	mu      *sync.Mutex
	midLine bool
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var buf []byte
	for _, ch := range b {
		if !p.midLine {
			buf = append(buf, p.prefix...)
		}
		buf = append(buf, ch)
		p.midLine = ch != '\n'
	}
	if _, err := p.w.Write(buf); err != nil {
		return 0, err
	}
	return len(b), nil
}
