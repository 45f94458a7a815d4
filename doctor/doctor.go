// Package doctor is `session-supervisor doctor`: checks of the data
// directory, the database, the running app, the service, the agent CLIs and
// the desktop, each over an injected probe, so that every verdict and every
// fix sentence can be tested without the machine's real state. The caller
// (main) wires the real probes and prints the Report.
package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
)

// Status is a check's verdict. Warn is something worth knowing that does
// not stop the app from working (an optional agent missing, the service not
// installed); Fail is something that needs fixing, and makes doctor exit 1.
type Status int

// The verdicts, from best to worst.
const (
	OK Status = iota
	Warn
	Fail
)

var statusNames = []string{"ok", "warn", "fail"}

func (s Status) String() string { return enum.Name(s, "Status", statusNames) }

// MarshalText writes the name: `doctor --json` says "ok", "warn", "fail".
func (s Status) MarshalText() ([]byte, error) {
	if s < 0 || int(s) >= len(statusNames) {
		return nil, fmt.Errorf("invalid doctor status %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a name MarshalText wrote.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown doctor status %q", b)
}

// Check is one line of the report; its JSON is the `doctor --json`
// contract.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is `doctor --json`: the worst status and every check.
type Report struct {
	Status  Status  `json:"status"`
	Version string  `json:"version"`
	DataDir string  `json:"data_dir"`
	Checks  []Check `json:"checks"`
}

// Counts returns how many checks failed and how many warned.
func (r Report) Counts() (failed, warned int) {
	for _, ch := range r.Checks {
		switch ch.Status {
		case Fail:
			failed++
		case Warn:
			warned++
		}
	}
	return failed, warned
}

// Agent is an agent CLI doctor looks for. The caller builds the list from
// the agent registry.
type Agent struct {
	// Name is the registry name ("claude"); the check is "agent NAME".
	Name string
	// Command is the default executable, looked up on PATH.
	Command string
	// Setting is the key that can name another executable
	// (agents.NAME.command); when the database holds a value the user set,
	// that value is checked instead of Command. Empty: no such setting.
	Setting string
	// Display is the product's name in sentences ("Claude Code").
	Display string
	// Managed says the app launches sessions of this agent, so a missing
	// one means those sessions cannot start; the others are optional.
	Managed bool
	// Install is the command that installs it.
	Install string
}

func (a Agent) display() string {
	if a.Display != "" {
		return a.Display
	}
	return a.Name
}

// Database is what the database check reads from an opened database.
type Database interface {
	// IntegrityCheck runs the full integrity check: "ok" or the problems.
	IntegrityCheck(ctx context.Context) (string, error)
	SchemaVersion(ctx context.Context) (int, error)
	// UserSettings returns the settings the user set (not defaults), by key.
	UserSettings(ctx context.Context) (map[string]string, error)
	// Quarantined lists the stored sessions this build cannot read (see
	// storage.Store.LoadSessions).
	Quarantined(ctx context.Context) ([]storage.Quarantined, error)
	Close() error
}

// Health is the running app's answer to GET /v1/health. The tick fields are
// absent (zero) from an app older than them.
type Health struct {
	PID     int
	Version string
	// HTTPStatus is the answer's status code: 200, or 503 when the
	// supervision loop has stopped ticking.
	HTTPStatus int
	// State is "ok" or "stalled"; empty from an older app.
	State        string
	LastTick     time.Time
	TickLag      time.Duration
	TickDuration time.Duration
	Subscribers  int
	Dropped      int64
	// Push is the push channels' state; nil from an app that sends none
	// (or is older than them).
	Push *Push
}

// Push is the push channels' part of the app's health.
type Push struct {
	Channels []string    `json:"channels"`
	Problems []PushIssue `json:"problems"`
	Failures []PushIssue `json:"failures"`
}

// PushIssue is one channel's trouble.
type PushIssue struct {
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
	GaveUp  bool      `json:"gave_up"`
}

// Stalled reports whether the app says its supervision loop is stuck.
func (h Health) Stalled() bool {
	return h.HTTPStatus == 503 || h.State == "stalled"
}

// LockState is who holds the data directory's instance lock.
type LockState struct {
	// Held: another process holds it.
	Held bool
	// PID is the holder, when known (0 otherwise).
	PID int
}

// Probes are doctor's only ways to look at the machine. Every field must be
// set; Real (in probes.go) and the caller's wiring fill the ones that need
// the app's packages.
type Probes struct {
	// Stat is os.Stat.
	Stat func(path string) (fs.FileInfo, error)
	// LookPath is exec.LookPath.
	LookPath func(file string) (string, error)
	// Version runs `path --version` and returns the first line it prints;
	// the context carries the deadline.
	Version func(ctx context.Context, path string) (string, error)
	// OpenDatabase opens the data directory's database the way the app
	// does (refusing a corrupt, foreign or too new file untouched).
	OpenDatabase func(dir string) (Database, error)
	// Health asks the running app over its socket; an error means nothing
	// answered.
	Health func(ctx context.Context) (Health, error)
	// Lock says whether another process holds the data directory (only
	// asked when nothing answers); an error means it could not tell.
	Lock func() (LockState, error)
	// Service reports the per-user service; an error means it could not
	// be asked, and its text is shown as is.
	Service func(ctx context.Context) (packaging.Status, error)
	// Getenv is os.Getenv.
	Getenv func(string) string
	// BusNames lists the names owned on and activatable by the session bus
	// at addr.
	BusNames func(ctx context.Context, addr string) (owned, activatable []string, err error)
	// Now is time.Now.
	Now func() time.Time
}

// Options is what to check and how long to wait.
type Options struct {
	// Version is this binary's version; DataDir the absolute data directory;
	// Socket the app's socket in it (named in the app check's sentences).
	Version, DataDir, Socket string
	// GOOS decides the platform checks (modes, the desktop bus).
	GOOS   string
	Agents []Agent
	// Hooks, when set, is what main found about the Claude Code hooks.
	Hooks *Hooks
	// Machines is what main found asking each other machine's supervisor
	// over ssh (machines ls), one check each.
	Machines []Machine
	// Bounds on what doctor waits for: an agent's --version (some CLIs
	// start a runtime first), the app's health answer, a D-Bus query.
	// Zero means the default.
	VersionTimeout, AppTimeout, BusTimeout time.Duration
}

// The default bounds.
const (
	DefaultVersionTimeout = 5 * time.Second
	DefaultAppTimeout     = 3 * time.Second
	DefaultBusTimeout     = 3 * time.Second
)

func (o *Options) defaults() {
	if o.VersionTimeout <= 0 {
		o.VersionTimeout = DefaultVersionTimeout
	}
	if o.AppTimeout <= 0 {
		o.AppTimeout = DefaultAppTimeout
	}
	if o.BusTimeout <= 0 {
		o.BusTimeout = DefaultBusTimeout
	}
}

// Run runs every check, in the report's order: data directory, database,
// app, service, each agent, then the desktop bus where there is one.
func Run(ctx context.Context, p Probes, o Options) Report {
	o.defaults()
	d := &doctor{p: p, o: o}
	rep := Report{Version: o.Version, DataDir: o.DataDir}
	dirCheck, dirExists := d.checkDataDir()
	rep.Checks = append(rep.Checks, dirCheck)
	dbCheck, userSettings := d.checkDatabase(ctx, dirExists)
	rep.Checks = append(rep.Checks, dbCheck)
	appCheck, health := d.checkApp(ctx, dirExists)
	rep.Checks = append(rep.Checks, appCheck)
	if health != nil && health.Push != nil {
		rep.Checks = append(rep.Checks, CheckPush(*health.Push, d.p.Now()))
	}
	rep.Checks = append(rep.Checks, d.checkService(ctx))
	for _, a := range o.Agents {
		rep.Checks = append(rep.Checks, d.checkAgent(ctx, a, userSettings))
	}
	if o.Hooks != nil {
		rep.Checks = append(rep.Checks, CheckHooks(*o.Hooks, time.Now()))
	}
	for _, m := range o.Machines {
		rep.Checks = append(rep.Checks, CheckMachine(m))
	}
	if HasFreedesktop(o.GOOS) {
		rep.Checks = append(rep.Checks, d.checkDesktopBus(ctx)...)
	}
	rep.Status = OK
	for _, ch := range rep.Checks {
		rep.Status = max(rep.Status, ch.Status)
	}
	return rep
}

// HasFreedesktop: the desktops whose notifications and tray go over D-Bus.
func HasFreedesktop(goos string) bool {
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return true
	}
	return false
}

type doctor struct {
	p Probes
	o Options
}
