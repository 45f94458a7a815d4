package packaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/testdir"
)

// defaultUnit is the whole unit for the plain case, so a reviewer sees
// exactly what lands in ~/.config/systemd/user and a change shows as a diff.
const defaultUnit = `# Session Supervisor as a per-user service.
# Written by ` + "`session-supervisor service install`, removed by `session-supervisor service uninstall`." + `
# A new install overwrites this file: put local changes in a drop-in instead
# (systemctl --user edit session-supervisor.service).

[Unit]
Description=Session Supervisor: keeps local AI coding-agent sessions honest and moving
Documentation=https://github.com/session-supervisor/session-supervisor#readme
# Started and stopped with the desktop session: the window, the tray and
# notifications need its display and session bus.
PartOf=graphical-session.target
After=graphical-session.target
# Restarted after a crash, but at most 5 times in 10 minutes: a crash loop
# then stops and shows as failed (session-supervisor service status).
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=simple
ExecStart=/home/ada/.local/bin/session-supervisor run
# The PATH of the shell that installed the service, so the agent CLIs
# (often in ~/.local/bin or an npm prefix) are found.
Environment=PATH=/home/ada/.local/bin:/usr/bin:/bin
# Tells ` + "`run`" + ` it is under systemd: it logs to stderr, which goes to the journal.
Environment=SESSION_SUPERVISOR_SERVICE=systemd
Restart=on-failure
RestartSec=5s
# SIGTERM to the app alone: it lets the agents' turns in flight finish, then
# exits; systemd kills whatever is left after TimeoutStopSec.
KillMode=mixed
TimeoutStopSec=60s

[Install]
WantedBy=graphical-session.target
`

func TestSystemdUnitDefault(t *testing.T) {
	got := SystemdUnit(Spec{Executable: "/home/ada/.local/bin/session-supervisor", PathEnv: "/home/ada/.local/bin:/usr/bin:/bin"})
	if got != defaultUnit {
		t.Errorf("unit differs from the expected text:\n--- got\n%s\n--- want\n%s", got, defaultUnit)
	}
}

func TestSystemdUnitVariants(t *testing.T) {
	cases := []struct {
		name    string
		spec    Spec
		want    []string // lines that must be present
		notWant []string // lines that must be absent
	}{
		{
			name:    "headless starts with the user manager, not the desktop",
			spec:    Spec{Executable: "/opt/ss/session-supervisor", Headless: true},
			want:    []string{"ExecStart=/opt/ss/session-supervisor run --headless", "WantedBy=default.target", "Restart=on-failure"},
			notWant: []string{"PartOf=graphical-session.target", "After=graphical-session.target", "WantedBy=graphical-session.target"},
		},
		{
			name: "a non-default data directory is passed",
			spec: Spec{Executable: "/usr/bin/session-supervisor", DataDir: "/srv/ss data"},
			want: []string{`ExecStart=/usr/bin/session-supervisor run --data-dir "/srv/ss data"`},
		},
		{
			name: "systemd specials are escaped",
			spec: Spec{Executable: `/home/a b/100%/$HOME/x"y\z`, PathEnv: "/p%q:/r$s"},
			want: []string{
				`ExecStart="/home/a b/100%%/$$HOME/x\"y\\z" run`,
				// $ is literal in Environment=, % is still a specifier.
				`Environment=PATH=/p%%q:/r$s`,
			},
		},
		{
			name:    "no PATH when none is known",
			spec:    Spec{Executable: "/usr/bin/session-supervisor"},
			notWant: []string{"Environment=PATH="},
		},
		{
			name: "restart with a limit, graceful stop",
			spec: Spec{Executable: "/usr/bin/session-supervisor"},
			want: []string{"StartLimitIntervalSec=600", "StartLimitBurst=5", "RestartSec=5s", "KillMode=mixed", "TimeoutStopSec=60s", "Environment=SESSION_SUPERVISOR_SERVICE=systemd"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unit := SystemdUnit(tc.spec)
			lines := map[string]bool{}
			for _, l := range strings.Split(unit, "\n") {
				lines[l] = true
			}
			for _, w := range tc.want {
				if !lines[w] {
					t.Errorf("missing line %q in\n%s", w, unit)
				}
			}
			for _, nw := range tc.notWant {
				for l := range lines {
					if strings.HasPrefix(l, nw) {
						t.Errorf("unexpected line %q in\n%s", l, unit)
					}
				}
			}
			// StartLimit* belong in [Unit] (systemd ignores them in
			// [Service] since v230), the rest in [Service].
			unitSection := unit[strings.Index(unit, "[Unit]"):strings.Index(unit, "[Service]")]
			if !strings.Contains(unitSection, "StartLimitBurst=") {
				t.Errorf("StartLimitBurst is not in [Unit]")
			}
		})
	}
}

func TestSystemdQuote(t *testing.T) {
	cases := []struct {
		in      string
		command bool
		want    string
	}{
		{"run", true, "run"},
		{"", true, `""`},
		{"/a b", true, `"/a b"`},
		{"50%", true, "50%%"},
		{"$X", true, "$$X"},
		{"$X", false, "$X"},
		{`a"b`, true, `"a\"b"`},
		{`a\b`, true, `"a\\b"`},
		{"it's", true, `"it's"`},
		{"a;b", true, `"a;b"`},
		{"a\nb", true, `"a\nb"`},
	}
	for _, tc := range cases {
		if got := systemdQuote(tc.in, tc.command); got != tc.want {
			t.Errorf("systemdQuote(%q, %v) = %s, want %s", tc.in, tc.command, got, tc.want)
		}
	}
}

func TestStopGraceFitsTheManagersTimeouts(t *testing.T) {
	if StopGrace <= 0 || StopGrace.Seconds() >= timeoutStopSec {
		t.Fatalf("StopGrace %s must be positive and shorter than TimeoutStopSec/ExitTimeOut %ds, or the manager kills the app mid-shutdown", StopGrace, timeoutStopSec)
	}
}

func TestSystemdUnitPathFollowsXDGConfigHome(t *testing.T) {
	cases := []struct {
		env, home, want string
	}{
		{"/tmp/cfg", "/home/ada", "/tmp/cfg/systemd/user/session-supervisor.service"},
		{"", "/home/ada", "/home/ada/.config/systemd/user/session-supervisor.service"},
		{"relative/cfg", "/home/ada", "/home/ada/.config/systemd/user/session-supervisor.service"},
	}
	for _, tc := range cases {
		getenv := func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return tc.env
			}
			return ""
		}
		m, err := newManager("linux", Spec{}, getenv, tc.home, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.UnitPath(); got != filepath.FromSlash(tc.want) {
			t.Errorf("XDG_CONFIG_HOME=%q: unit path %s, want %s", tc.env, got, tc.want)
		}
	}
}

// fakeSystemctl stands in for `systemctl --user`: it records the calls and,
// like the real one, makes (and removes) the wants link on enable (and
// disable), so Uninstall's cleanup is exercised.
type fakeSystemctl struct {
	mu       sync.Mutex
	calls    []string
	userDir  string
	active   string // is-active answer
	enabled  string // is-enabled answer
	failWith string // stderr of a failing call ("" = succeed)
	notFound bool
}

func (f *fakeSystemctl) run(_ context.Context, name string, args ...string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	if f.notFound {
		return "", "", fmt.Errorf("exec: %q: %w", name, exec.ErrNotFound)
	}
	if f.failWith != "" {
		return "", f.failWith, errors.New("exit status 1")
	}
	if len(args) < 2 || args[0] != "--user" {
		return "", "", fmt.Errorf("unexpected call %v", args)
	}
	wants := filepath.Join(f.userDir, "graphical-session.target.wants")
	switch args[1] {
	case "enable", "reenable":
		if err := os.MkdirAll(wants, 0o755); err != nil {
			return "", "", err
		}
		_ = os.Remove(filepath.Join(wants, UnitName))
		return "", "", os.Symlink(filepath.Join(f.userDir, UnitName), filepath.Join(wants, UnitName))
	case "disable":
		_ = os.Remove(filepath.Join(wants, UnitName))
	case "is-active":
		return f.active + "\n", "", nil
	case "is-enabled":
		return f.enabled + "\n", "", nil
	}
	return "", "", nil
}

func (f *fakeSystemctl) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func testSpec() Spec {
	return Spec{Executable: "/home/ada/.local/bin/session-supervisor", PathEnv: "/usr/bin:/bin"}
}

func TestSystemdInstallIsIdempotentAndUninstallRestores(t *testing.T) {
	for _, pre := range []string{"empty config home", "existing user units"} {
		t.Run(pre, func(t *testing.T) {
			cfg := t.TempDir()
			if pre == "existing user units" {
				other := filepath.Join(cfg, "systemd", "user")
				if err := os.MkdirAll(filepath.Join(other, "default.target.wants"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(other, "other.service"), []byte("[Service]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(other, "other.service"), filepath.Join(other, "default.target.wants", "other.service")); err != nil {
					t.Fatal(err)
				}
			}
			before := testdir.Listing(t, cfg)
			fake := &fakeSystemctl{userDir: filepath.Join(cfg, "systemd", "user"), active: "inactive", enabled: "enabled"}
			m := NewSystemdUser(testSpec(), cfg, fake.run)
			ctx := context.Background()

			res, err := m.Install(ctx)
			if err != nil {
				t.Fatalf("install: %v", err)
			}
			if res.Change != Created || !res.Enabled || res.Path != filepath.Join(cfg, "systemd", "user", UnitName) {
				t.Fatalf("install result %+v", res)
			}
			b, err := os.ReadFile(res.Path)
			if err != nil || string(b) != SystemdUnit(testSpec()) {
				t.Fatalf("unit file: %v\n%s", err, b)
			}
			fi, _ := os.Stat(res.Path)
			if fi.Mode().Perm() != 0o644 {
				t.Errorf("unit mode %v, want 0644", fi.Mode().Perm())
			}
			if got := fake.callList(); strings.Join(got, "|") != "systemctl --user daemon-reload|systemctl --user enable "+UnitName+"|systemctl --user is-active "+UnitName {
				t.Errorf("first install ran %q", got)
			}

			// Again: nothing changes on disk.
			mid := testdir.Listing(t, cfg)
			res, err = m.Install(ctx)
			if err != nil || res.Change != Unchanged {
				t.Fatalf("second install: %+v, %v", res, err)
			}
			testdir.Unchanged(t, cfg, mid)

			// A moved binary rewrites the unit and re-enables it.
			moved := testSpec()
			moved.Executable = "/opt/ss/session-supervisor"
			res, err = NewSystemdUser(moved, cfg, fake.run).Install(ctx)
			if err != nil || res.Change != Updated {
				t.Fatalf("install after a move: %+v, %v", res, err)
			}
			if calls := fake.callList(); !strings.Contains(calls[len(calls)-2], "reenable") {
				t.Errorf("an updated unit was not re-enabled: %q", calls)
			}

			st, err := m.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Installed || st.State != StateStopped || !st.Enabled || st.Current || st.Command != "/opt/ss/session-supervisor run" {
				t.Errorf("status after the move (from the old binary's view) = %+v", st)
			}

			ures, err := m.Uninstall(ctx)
			if err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			if len(ures.Removed) != 1 || ures.Note != "" {
				t.Errorf("uninstall result %+v", ures)
			}
			testdir.Unchanged(t, cfg, before)

			// Uninstalling again is a no-op.
			ures, err = m.Uninstall(ctx)
			if err != nil || len(ures.Removed) != 0 {
				t.Errorf("second uninstall: %+v, %v", ures, err)
			}
		})
	}
}

func TestSystemdWithoutUserManager(t *testing.T) {
	cases := []struct {
		name    string
		fake    *fakeSystemctl
		wantFix string
	}{
		{"no user bus", &fakeSystemctl{failWith: "Failed to connect to bus: No medium found"}, "loginctl enable-linger"},
		{"sudo without XDG_RUNTIME_DIR", &fakeSystemctl{failWith: "Failed to connect to bus: $DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined (consider using --machine=<user>@.host --user to connect to bus of other user)"}, "not with sudo"},
		{"no systemd at all", &fakeSystemctl{notFound: true}, "~/.config/autostart"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := t.TempDir()
			before := testdir.Listing(t, cfg)
			m := NewSystemdUser(testSpec(), cfg, tc.fake.run)
			ctx := context.Background()
			res, err := m.Install(ctx)
			var p *Problem
			if !errors.As(err, &p) || !strings.Contains(p.Fix, tc.wantFix) {
				t.Fatalf("install error %v; want a Problem whose fix mentions %q", err, tc.wantFix)
			}
			if !strings.Contains(err.Error(), "wrote "+m.UnitPath()+", but could not enable it") {
				t.Errorf("the error does not say the unit was written: %v", err)
			}
			if res.Change != Created || res.Enabled {
				t.Errorf("install result %+v: the file is written, but not enabled", res)
			}
			if _, err := os.Stat(m.UnitPath()); err != nil {
				t.Errorf("the unit was not written: %v", err)
			}
			st, err := m.Status(ctx)
			if err != nil || st.State != StateUnknown || st.Problem == nil || st.Problem.Fix == "" {
				t.Errorf("status = %+v, %v; want unknown with the fix", st, err)
			}
			for _, verb := range []func(context.Context) error{m.Start, m.Stop, m.Restart} {
				if err := verb(ctx); !errors.As(err, &p) {
					t.Errorf("control error %v is not explained", err)
				}
			}
			ures, err := m.Uninstall(ctx)
			if err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			if ures.Note == "" {
				t.Errorf("uninstall did not say systemd could not be told")
			}
			testdir.Unchanged(t, cfg, before)
		})
	}
}

func TestSystemdStatus(t *testing.T) {
	cases := []struct {
		active, enabled string
		want            State
		wantEnabled     bool
		wantProblem     bool
	}{
		{"active", "enabled", StateRunning, true, false},
		{"activating", "enabled", StateRunning, true, false},
		{"inactive", "disabled", StateStopped, false, false},
		{"failed", "enabled", StateFailed, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.active, func(t *testing.T) {
			cfg := t.TempDir()
			fake := &fakeSystemctl{userDir: filepath.Join(cfg, "systemd", "user"), active: tc.active, enabled: tc.enabled}
			m := NewSystemdUser(testSpec(), cfg, fake.run)
			st, err := m.Status(context.Background())
			if err != nil || st.Installed || st.State != StateNotInstalled {
				t.Fatalf("before install: %+v, %v", st, err)
			}
			if _, err := m.Install(context.Background()); err != nil {
				t.Fatal(err)
			}
			st, err = m.Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tc.want || st.Enabled != tc.wantEnabled || (st.Problem != nil) != tc.wantProblem || !st.Current {
				t.Errorf("status = %+v", st)
			}
			if tc.wantProblem && !strings.Contains(st.Problem.Fix, "journalctl --user -u "+UnitName) {
				t.Errorf("a failed unit's fix does not point at its log: %q", st.Problem.Fix)
			}
		})
	}
}

// TestSystemdRealCommand runs the real command runner against a systemctl
// that behaves like the one in a login without a user manager (containers,
// sudo), and against no systemctl at all, so the classification is checked
// on the actual process output, not on a fake's.
func TestSystemdRealCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux only")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, fix string }{
		{"no user manager", bin, "loginctl enable-linger"},
		{"no systemctl", t.TempDir(), "autostart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			cfg := t.TempDir()
			before := testdir.Listing(t, cfg)
			m := NewSystemdUser(testSpec(), cfg, ExecRunner)
			_, err := m.Install(context.Background())
			var p *Problem
			if !errors.As(err, &p) || !strings.Contains(p.Fix, tc.fix) {
				t.Fatalf("install: %v; want the fix to mention %q", err, tc.fix)
			}
			if _, err := m.Uninstall(context.Background()); err != nil {
				t.Fatal(err)
			}
			testdir.Unchanged(t, cfg, before)
		})
	}
}

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		spec Spec
		ok   bool
	}{
		{Spec{Executable: "/usr/bin/session-supervisor"}, true},
		{Spec{Executable: "session-supervisor"}, false},
		{Spec{Executable: "/usr/bin/session-supervisor", DataDir: "data"}, false},
		{Spec{Executable: "/tmp/go-build1234/b001/exe/session-supervisor"}, false},
	}
	for _, tc := range cases {
		if err := tc.spec.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v", tc.spec, err)
		}
	}
}

func TestProblemJSON(t *testing.T) {
	b, err := json.Marshal(Status{State: StateUnknown, Problem: &Problem{What: "no bus", Err: errors.New("No medium found"), Fix: "loginctl enable-linger $USER"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"problem":{"what":"no bus","error":"No medium found","fix":"loginctl enable-linger $USER"}`) {
		t.Errorf("status JSON %s", b)
	}
}
