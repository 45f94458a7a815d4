package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// want is what a check must say: its status, and pieces of its detail and
// fix ("" for no fix expected, "-" for none allowed).
type want struct {
	status Status
	detail []string
	fix    string
}

func (w want) verify(t *testing.T, ch Check) {
	t.Helper()
	if ch.Status != w.status {
		t.Errorf("%s: status %v, want %v (%q)", ch.Name, ch.Status, w.status, ch.Detail)
	}
	for _, d := range w.detail {
		if !strings.Contains(ch.Detail, d) {
			t.Errorf("%s: detail %q lacks %q", ch.Name, ch.Detail, d)
		}
	}
	switch w.fix {
	case "":
	case "-":
		if ch.Fix != "" {
			t.Errorf("%s: fix %q, want none", ch.Name, ch.Fix)
		}
	default:
		if !strings.Contains(ch.Fix, w.fix) {
			t.Errorf("%s: fix %q lacks %q", ch.Name, ch.Fix, w.fix)
		}
	}
}

func TestStatusText(t *testing.T) {
	for _, s := range []Status{OK, Warn, Fail} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Status
		if err := back.UnmarshalText(b); err != nil || back != s || string(b) != s.String() {
			t.Errorf("%v: %q, back %v, %v", s, b, back, err)
		}
	}
	if _, err := Status(7).MarshalText(); err == nil {
		t.Error("an invalid status marshals")
	}
	if Status(7).String() != "Status(7)" {
		t.Errorf("String = %q", Status(7).String())
	}
	var s Status
	if err := s.UnmarshalText([]byte("bad")); err == nil {
		t.Error("an unknown name parses")
	}
}

// checkCase is one way a machine is set up and what one check must then
// say of it.
type checkCase struct {
	name  string
	setup func(*testing.T, *machine)
	want  want
}

// runCheckCases runs check on a new machine set up by each case.
func runCheckCases(t *testing.T, check string, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			tc.setup(t, m)
			tc.want.verify(t, m.check(t, check))
		})
	}
}

func TestDataDirectory(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, m *machine)
		want  want
		// dbChecked: whether the database check goes on to open it.
		dbChecked bool
	}{
		{"private directory", func(*testing.T, *machine) {}, want{OK, []string{"(mode 0700)"}, "-"}, true},
		{"missing", func(t *testing.T, m *machine) { m.opts.DataDir = filepath.Join(t.TempDir(), "none") },
			want{Warn, []string{"does not exist yet", "SESSION_SUPERVISOR_HOME"}, "session-supervisor run"}, false},
		{"a file", func(t *testing.T, m *machine) {
			m.opts.DataDir = filepath.Join(m.dir, "supervisor.db")
		}, want{Fail, []string{"exists but is not a directory"}, "mv "}, false},
		{"readable by others", func(t *testing.T, m *machine) {
			if err := os.Chmod(m.dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}, want{Warn, []string{"has mode 0755", "should be 0700"}, "chmod 700 "}, true},
		{"no modes on windows", func(t *testing.T, m *machine) {
			if err := os.Chmod(m.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			m.opts.GOOS = "windows"
		}, want{OK, nil, "-"}, true},
		{"unreadable", func(t *testing.T, m *machine) {
			m.probes.Stat = func(string) (fs.FileInfo, error) { return nil, fs.ErrPermission }
		}, want{Fail, []string{"cannot read", "permission denied"}, `sudo chown -R "$USER"`}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			tc.setup(t, m)
			opened := false
			m.probes.OpenDatabase = func(string) (Database, error) { opened = true; return m.db, nil }
			tc.want.verify(t, m.check(t, "data directory"))
			if opened != tc.dbChecked {
				t.Errorf("database opened: %v, want %v", opened, tc.dbChecked)
			}
		})
	}
}

func TestDatabase(t *testing.T) {
	openErr := func(err error) func(*testing.T, *machine) {
		return func(_ *testing.T, m *machine) {
			m.probes.OpenDatabase = func(string) (Database, error) { return nil, err }
		}
	}
	cases := []checkCase{
		{"healthy", func(*testing.T, *machine) {}, want{OK, []string{"supervisor.db: 2.0 KB", "schema version 3 (this build supports", "integrity ok"}, "-"}},
		{"no file yet", func(t *testing.T, m *machine) {
			if err := os.Remove(filepath.Join(m.dir, "supervisor.db")); err != nil {
				t.Fatal(err)
			}
		}, want{Warn, []string{"does not exist yet (the first run creates it)"}, "session-supervisor run"}},
		{"corrupt", openErr(fmt.Errorf("x: %w", storage.ErrCorrupt)), want{Fail, []string{"x: "}, "supervisor.db.corrupt"}},
		{"too new", openErr(fmt.Errorf("x: %w", storage.ErrTooNew)), want{Fail, nil, "install a newer Session Supervisor (this is 1.2.3)"}},
		{"foreign", openErr(fmt.Errorf("x: %w", storage.ErrForeign)), want{Fail, nil, "use another data directory"}},
		{"owned by root", openErr(fmt.Errorf("x: %w", fs.ErrPermission)), want{Fail, nil, `sudo chown -R "$USER"`}},
		{"other open error", openErr(errors.New("disk on fire")), want{Fail, []string{"disk on fire"}, "-"}},
		{"integrity check fails to run", func(_ *testing.T, m *machine) { m.db.integrityErr = errors.New("io error") },
			want{Fail, []string{"io error"}, "stop the app"}},
		{"integrity problems", func(_ *testing.T, m *machine) { m.db.integrity = "p1\np2\np3\np4\np5" },
			want{Fail, []string{"fails its integrity check: p1; p2; p3; (and 2 more)"}, "stop the app"}},
		{"a session a newer build wrote", func(_ *testing.T, m *machine) {
			m.db.quarantined = []storage.Quarantined{
				{ID: "s1", Reason: storage.QuarantineNewer, Err: errors.New(`unknown state "hibernating"`)},
				{ID: "s2", Reason: storage.QuarantineCorrupt, Err: errors.New("unexpected end of JSON input")},
			}
		}, want{Warn, []string{"integrity ok; 2 stored session(s) cannot be read by this build and are left untouched, unsupervised: " +
			`s1 (written by a newer build: unknown state "hibernating"), s2 (corrupt: unexpected end of JSON input)`}, "install the newer Session Supervisor that wrote them (this is 1.2.3)"}},
		{"many corrupt sessions", func(_ *testing.T, m *machine) {
			for i := range 5 {
				m.db.quarantined = append(m.db.quarantined, storage.Quarantined{ID: fmt.Sprint("c", i), Reason: storage.QuarantineCorrupt, Err: errors.New("bad")})
			}
		}, want{Warn, []string{"5 stored session(s)", "c2 (corrupt: bad), and 2 more"}, "nothing is lost"}},
		{"schema version unreadable", func(_ *testing.T, m *machine) { m.db.versionErr = errors.New("no version") },
			want{Fail, []string{"no version"}, "-"}},
	}
	runCheckCases(t, "database", cases)
	t.Run("closed after reading", func(t *testing.T) {
		m := newMachine(t)
		m.run()
		if !m.db.closed {
			t.Error("the database was left open")
		}
	})
}

func TestApp(t *testing.T) {
	answer := func(h Health) func(*testing.T, *machine) {
		return func(_ *testing.T, m *machine) {
			m.probes.Health = func(context.Context) (Health, error) { return h, nil }
		}
	}
	held := func(pid int) func(*testing.T, *machine) {
		return func(_ *testing.T, m *machine) {
			m.probes.Lock = func() (LockState, error) { return LockState{Held: true, PID: pid}, nil }
		}
	}
	cases := []checkCase{
		{"today's answer, no tick fields", answer(Health{PID: 7, Version: "1.2.3", HTTPStatus: 200}),
			want{OK, []string{"running (pid 7, version 1.2.3), answering on ", "supervisor.sock"}, "-"}},
		{"ticking", answer(Health{PID: 7, Version: "1.2.3", HTTPStatus: 200, State: "ok", LastTick: now.Add(-4 * time.Second)}),
			want{OK, []string{"running (pid 7", "last tick 4s ago"}, "-"}},
		{"older version running", answer(Health{PID: 7, Version: "1.0.0", HTTPStatus: 200}),
			want{Warn, []string{"running version 1.0.0 (pid 7), but this binary is 1.2.3"}, "session-supervisor service restart"}},
		{"stalled: 503 with the last tick", answer(Health{PID: 7, Version: "1.2.3", HTTPStatus: 503, State: "stalled", LastTick: now.Add(-95 * time.Second)}),
			want{Fail, []string{"pid 7", "supervision loop has stopped", "no tick for 1m35s", "sessions are not being watched"}, "session-supervisor service restart"}},
		{"stalled: 503 with only the lag", answer(Health{PID: 7, Version: "1.2.3", HTTPStatus: 503, TickLag: 61 * time.Second}),
			want{Fail, []string{"no tick for 1m1s"}, "service restart"}},
		{"stalled: status says so", answer(Health{PID: 7, Version: "1.2.3", HTTPStatus: 200, State: "stalled"}),
			want{Fail, []string{"supervision loop has stopped", "it reports no recent tick"}, "service restart"}},
		{"stalled: a 503 with no body", answer(Health{HTTPStatus: 503}),
			want{Fail, []string{"running (version unknown)", "supervision loop has stopped"}, "service restart"}},
		{"not running", func(*testing.T, *machine) {},
			want{Warn, []string{"not running (nothing answers on "}, "session-supervisor service start"}},
		{"stuck: lock held, no answer", held(4242),
			want{Fail, []string{"process 4242 holds the data directory but does not answer"}, "kill 4242, then session-supervisor run"}},
		{"stuck: holder unknown", held(0),
			want{Fail, []string{"another process holds the data directory"}, "kill <pid>"}},
		{"lock unreadable", func(_ *testing.T, m *machine) {
			m.probes.Lock = func() (LockState, error) { return LockState{}, errors.New("eio") }
		}, want{Warn, []string{"not running"}, ""}},
	}
	runCheckCases(t, "app", cases)
	t.Run("no data directory: nothing is asked", func(t *testing.T) {
		m := newMachine(t)
		m.opts.DataDir = filepath.Join(t.TempDir(), "none")
		m.probes.Health = func(context.Context) (Health, error) { t.Error("health asked"); return Health{}, errors.New("x") }
		m.probes.Lock = func() (LockState, error) { t.Error("lock taken"); return LockState{}, nil }
		want{Warn, []string{"not running"}, "service start"}.verify(t, m.check(t, "app"))
	})
	t.Run("the health query is bounded", func(t *testing.T) {
		m := newMachine(t)
		m.opts.AppTimeout = 20 * time.Millisecond
		m.probes.Health = func(ctx context.Context) (Health, error) { <-ctx.Done(); return Health{}, ctx.Err() }
		want{Warn, []string{"not running"}, ""}.verify(t, m.check(t, "app"))
	})
}

func TestParseHealth(t *testing.T) {
	tick := "2026-05-06T11:59:58Z"
	cases := []struct {
		name    string
		status  int
		body    string
		want    Health
		stalled bool
		err     bool
	}{
		{"today's answer", 200, `{"pid":7,"version":"1.2.3","generation":"g","data_dir":"/d"}`,
			Health{PID: 7, Version: "1.2.3", HTTPStatus: 200}, false, false},
		{"ticking", 200, `{"pid":7,"version":"v","status":"ok","last_tick":"` + tick + `","tick_lag_seconds":2.5,"tick_duration_ms":3,"subscribers":2,"dropped":5}`,
			Health{PID: 7, Version: "v", HTTPStatus: 200, State: "ok", LastTick: time.Date(2026, 5, 6, 11, 59, 58, 0, time.UTC),
				TickLag: 2500 * time.Millisecond, TickDuration: 3 * time.Millisecond, Subscribers: 2, Dropped: 5}, false, false},
		{"stalled", 503, `{"pid":7,"version":"v","status":"stalled","last_tick":"` + tick + `","tick_lag_seconds":95}`,
			Health{PID: 7, Version: "v", HTTPStatus: 503, State: "stalled", LastTick: time.Date(2026, 5, 6, 11, 59, 58, 0, time.UTC), TickLag: 95 * time.Second}, true, false},
		{"a last tick of another shape is ignored", 200, `{"pid":7,"version":"v","last_tick":12345}`,
			Health{PID: 7, Version: "v", HTTPStatus: 200}, false, false},
		{"503 that is not JSON", 503, `service unavailable`, Health{HTTPStatus: 503}, true, false},
		{"200 that is not JSON", 200, `<html>`, Health{}, false, true},
		{"another status", 500, `{"error":"x"}`, Health{}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHealth(tc.status, []byte(tc.body))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !got.LastTick.Equal(tc.want.LastTick) {
				t.Errorf("last tick %v, want %v", got.LastTick, tc.want.LastTick)
			}
			got.LastTick, tc.want.LastTick = time.Time{}, time.Time{}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Stalled() != tc.stalled {
				t.Errorf("Stalled = %v, want %v", got.Stalled(), tc.stalled)
			}
		})
	}
}

// TestSocketHealth asks a real HTTP server on a real unix socket, the way
// doctor asks the app, including a 503 answer.
func TestSocketHealth(t *testing.T) {
	dir := testdir.Short(t, "dr")
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	status := 200
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/health" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		state := map[int]string{200: "ok", 503: "stalled"}[status]
		fmt.Fprintf(w, `{"pid":99,"version":"v","status":%q,"tick_lag_seconds":1}`, state)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	probe := SocketHealth(socket)
	ctx := context.Background()
	if h, err := probe(ctx); err != nil || h.PID != 99 || h.Stalled() {
		t.Errorf("ok answer: %+v, %v", h, err)
	}
	status = 503
	if h, err := probe(ctx); err != nil || !h.Stalled() || h.State != "stalled" || h.TickLag != time.Second {
		t.Errorf("503 answer: %+v, %v", h, err)
	}
	if _, err := SocketHealth(filepath.Join(dir, "none.sock"))(ctx); err == nil {
		t.Error("no socket: no error")
	}
}

func TestService(t *testing.T) {
	status := func(st packaging.Status, err error) func(*machine) {
		return func(m *machine) {
			m.probes.Service = func(context.Context) (packaging.Status, error) { return st, err }
		}
	}
	unit := func(state packaging.State, current bool, p *packaging.Problem) packaging.Status {
		return packaging.Status{Kind: "systemd", UnitPath: "/u/ss.service", State: state, Current: current, Command: "/old/ss run", Problem: p}
	}
	problem := &packaging.Problem{What: "exec failed", Err: errors.New("ENOENT"), Fix: "reinstall"}
	cases := []struct {
		name  string
		setup func(*machine)
		want  want
	}{
		{"running this binary", status(unit(packaging.StateRunning, true, nil), nil), want{OK, []string{"installed and running (systemd /u/ss.service)"}, "-"}},
		{"running another binary", status(unit(packaging.StateRunning, false, nil), nil),
			want{Warn, []string{"it runs /old/ss run, not this binary"}, "service install   (rewrites the unit)"}},
		{"not installed", status(unit(packaging.StateNotInstalled, false, nil), nil), want{Warn, []string{"not installed"}, "session-supervisor service install"}},
		{"stopped", status(unit(packaging.StateStopped, true, nil), nil), want{Warn, []string{"installed but not running"}, "session-supervisor service start"}},
		{"failed", status(unit(packaging.StateFailed, true, problem), nil), want{Fail, []string{"installed but failed", "exec failed"}, "reinstall"}},
		{"unknown", status(unit(packaging.State("weird"), true, problem), nil), want{Warn, []string{"state unknown: exec failed (ENOENT)"}, "reinstall"}},
		{"cannot ask", status(packaging.Status{}, errors.New("not checked: no home")), want{Warn, []string{"not checked: no home"}, "-"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			tc.setup(m)
			tc.want.verify(t, m.check(t, "service"))
		})
	}
}

var claude = Agent{Name: "claude", Command: "claude", Setting: "agents.claude.command", Display: "Claude Code", Managed: true, Install: "npm i claude"}
var codex = Agent{Name: "codex", Command: "codex", Install: "npm i codex"}

func TestAgents(t *testing.T) {
	found := func(paths map[string]string) func(string) (string, error) {
		return func(f string) (string, error) {
			if p, ok := paths[f]; ok {
				return p, nil
			}
			return "", &exec.Error{Name: f, Err: exec.ErrNotFound}
		}
	}
	version := func(v string, err error) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return v, err }
	}
	cases := []struct {
		name     string
		agent    Agent
		settings map[string]string
		lookPath func(string) (string, error)
		version  func(context.Context, string) (string, error)
		want     want
	}{
		{"found", claude, nil, found(map[string]string{"claude": "/bin/claude"}), version("2.1.197 (Claude Code)", nil),
			want{OK, []string{"/bin/claude, 2.1.197 (Claude Code)"}, "-"}},
		{"managed agent missing", claude, nil, found(nil), nil,
			want{Warn, []string{"claude not found on PATH: the app runs, but cannot start Claude Code sessions"}, "npm i claude"}},
		{"optional agent missing", codex, nil, found(nil), nil,
			want{Warn, []string{"codex not found on PATH (optional: only needed for codex sessions)"}, "npm i codex"}},
		{"configured command missing", claude, map[string]string{"agents.claude.command": "/nowhere/claude"}, found(map[string]string{"claude": "/bin/claude"}), nil,
			want{Fail, []string{`agents.claude.command is set to "/nowhere/claude", which is not found: every Claude Code session would fail to start`},
				"session-supervisor settings reset agents.claude.command   (or settings set agents.claude.command /path/to/claude)"}},
		{"configured command found", claude, map[string]string{"agents.claude.command": "/opt/claude"}, found(map[string]string{"/opt/claude": "/opt/claude"}), version("2.0", nil),
			want{OK, []string{"/opt/claude, 2.0"}, "-"}},
		{"another agent's setting is not ours", codex, map[string]string{"agents.claude.command": "/opt/claude"}, found(map[string]string{"codex": "/bin/codex"}), version("0.5", nil),
			want{OK, []string{"/bin/codex, 0.5"}, "-"}},
		{"--version fails", codex, nil, found(map[string]string{"codex": "/bin/codex"}), version("", errors.New("exit status 3: boom")),
			want{Warn, []string{"found /bin/codex, but `codex --version` failed: exit status 3: boom"}, "reinstall it: npm i codex"}},
		{"--version never answers", codex, nil, found(map[string]string{"codex": "/bin/codex"}),
			func(ctx context.Context, _ string) (string, error) { <-ctx.Done(); return "", ctx.Err() },
			want{Warn, []string{"failed: no answer within 30ms"}, "reinstall it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.db.settings = tc.settings
			m.opts.Agents = []Agent{tc.agent}
			m.opts.VersionTimeout = 30 * time.Millisecond
			m.probes.LookPath = tc.lookPath
			if tc.version != nil {
				m.probes.Version = tc.version
			}
			tc.want.verify(t, m.check(t, "agent "+tc.agent.Name))
		})
	}
}

// TestAgentVersionRealCLIs runs AgentVersion, the real probe, against
// shell-script CLIs.
func TestAgentVersionRealCLIs(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh on PATH to run the fake CLIs: %v", err)
	}
	bin := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!"+sh+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, body string
		want       string
		err        string
	}{
		{"answers", `echo; echo "  2.1.197 (Claude Code)  "; echo more`, "2.1.197 (Claude Code)", ""},
		{"long line is cut", `printf '%0150d\n' 0`, strings.Repeat("0", 100) + "…", ""},
		{"broken install", `echo "boom" >&2; exit 3`, "", "exit status 3: boom"},
		{"prints nothing", `exit 0`, "", "it printed nothing"},
		{"never answers", `exec sleep 30`, "", "context deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if tc.name == "never answers" {
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			got, err := AgentVersion(ctx, script(strings.ReplaceAll(tc.name, " ", "_"), tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("AgentVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDesktopBus(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	withBus := env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"})
	cases := []struct {
		name         string
		getenv       func(string) string
		owned, activ []string
		err          error
		notif, tray  Status
		fix          string
	}{
		{"full desktop", withBus, []string{NotificationsName, TrayWatcherName}, nil, nil, OK, OK, ""},
		{"notifications on demand", withBus, nil, []string{NotificationsName}, nil, OK, Warn, "gnome-shell-extension-appindicator"},
		{"bare window manager", withBus, []string{"org.freedesktop.DBus"}, nil, nil, Warn, Warn, "dunst"},
		{"no dbus tools", withBus, nil, nil, exec.ErrNotFound, Warn, Warn, "libglib2.0-bin"},
		{"no bus", env(nil), nil, nil, nil, Warn, Warn, "DBUS_SESSION_BUS_ADDRESS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.probes.Getenv = tc.getenv
			m.probes.BusNames = func(context.Context, string) ([]string, []string, error) { return tc.owned, tc.activ, tc.err }
			notif, tray := m.check(t, "notifications"), m.check(t, "tray host")
			if notif.Status != tc.notif || tray.Status != tc.tray {
				t.Fatalf("notifications %+v, tray %+v; want %v, %v", notif, tray, tc.notif, tc.tray)
			}
			if tc.fix != "" && !strings.Contains(notif.Fix+tray.Fix, tc.fix) {
				t.Errorf("fixes %q / %q lack %q", notif.Fix, tray.Fix, tc.fix)
			}
		})
	}
}

func TestParseBusNames(t *testing.T) {
	gdbus := `(['org.freedesktop.DBus', ':1.7', 'org.freedesktop.Notifications'],)`
	dbusSend := "method return time=1.2 sender=org.freedesktop.DBus -> destination=:1.9 serial=3 reply_serial=2\n   array [\n      string \"org.freedesktop.DBus\"\n      string \"org.kde.StatusNotifierWatcher\"\n   ]\n"
	if got := parseBusNames(gdbus); strings.Join(got, ",") != "org.freedesktop.DBus,:1.7,org.freedesktop.Notifications" {
		t.Errorf("gdbus: %q", got)
	}
	if got := parseBusNames(dbusSend); strings.Join(got, ",") != "org.freedesktop.DBus,org.kde.StatusNotifierWatcher" {
		t.Errorf("dbus-send: %q", got)
	}
}

func TestSessionBusAddressFallback(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": dir}[k] }
	sock := func(mode fs.FileMode) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) {
			if p != filepath.Join(dir, "bus") {
				return nil, fs.ErrNotExist
			}
			return fileInfo{mode: mode}, nil
		}
	}
	if a := SessionBusAddress(getenv, sock(fs.ModeSocket)); a != "unix:path="+filepath.Join(dir, "bus") {
		t.Errorf("socket: %q", a)
	}
	if a := SessionBusAddress(getenv, sock(0)); a != "" {
		t.Errorf("a plain file: %q", a)
	}
	explicit := func(k string) string {
		return map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/b", "XDG_RUNTIME_DIR": dir}[k]
	}
	if a := SessionBusAddress(explicit, sock(fs.ModeSocket)); a != "unix:path=/b" {
		t.Errorf("explicit: %q", a)
	}
}

// TestRunOrderAndVerdict: the checks come in the documented order, the
// desktop checks only where there is a freedesktop bus, and the report's
// status is the worst check's.
func TestRunOrderAndVerdict(t *testing.T) {
	for _, tc := range []struct {
		goos string
		want string
	}{
		{"linux", "data directory,database,app,service,agent claude,agent codex,notifications,tray host"},
		{"darwin", "data directory,database,app,service,agent claude,agent codex"},
		{"windows", "data directory,database,app,service,agent claude,agent codex"},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			m := newMachine(t)
			m.opts.GOOS = tc.goos
			m.opts.Agents = []Agent{claude, codex}
			rep := m.run()
			var names []string
			for _, ch := range rep.Checks {
				names = append(names, ch.Name)
			}
			if strings.Join(names, ",") != tc.want {
				t.Errorf("checks %q, want %q", names, tc.want)
			}
			if rep.Status != Warn {
				t.Errorf("status %v, want warn (agents missing, app not running)", rep.Status)
			}
			m.db.settings = map[string]string{"agents.claude.command": "/nowhere"}
			if rep := m.run(); rep.Status != Fail {
				t.Errorf("with a failing check: status %v", rep.Status)
			}
		})
	}
}

func TestReportJSONAndText(t *testing.T) {
	rep := Report{Version: "1.2.3", DataDir: "/d", Status: Fail, Checks: []Check{
		{Name: "database", Status: OK, Detail: "fine", Fix: "never shown"},
		{Name: "app", Status: Warn, Detail: "not running", Fix: "start it"},
		{Name: "agent claude", Status: Fail, Detail: "missing", Fix: "install it"},
	}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"status":"fail","version":"1.2.3","data_dir":"/d","checks":[{"name":"database","status":"ok","detail":"fine","fix":"never shown"}`) {
		t.Errorf("JSON %s", b)
	}
	var buf bytes.Buffer
	Print(&buf, rep)
	want := "Session Supervisor 1.2.3, data directory /d\n\n" +
		"ok    database      fine\n" +
		"warn  app           not running\n" +
		"                    fix: start it\n" +
		"fail  agent claude  missing\n" +
		"                    fix: install it\n" +
		"\n1 check(s) failed and 1 warning(s): run the fix under each failed check.\n"
	if buf.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", buf.String(), want)
	}
	for _, tc := range []struct {
		checks []Check
		want   string
	}{
		{[]Check{{Name: "a", Status: Warn, Detail: "x"}}, "Nothing is broken; 1 warning(s) above.\n"},
		{[]Check{{Name: "a", Status: OK, Detail: "x"}}, "Everything is in order.\n"},
	} {
		buf.Reset()
		Print(&buf, Report{Checks: tc.checks})
		if !strings.HasSuffix(buf.String(), tc.want) {
			t.Errorf("summary %q, want suffix %q", buf.String(), tc.want)
		}
	}
}

func TestShellQuoteAndSize(t *testing.T) {
	for in, want := range map[string]string{
		"/plain/path": "/plain/path", "/with space": "'/with space'", "it's": `'it'\''s'`, "": "''",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
	for n, want := range map[int64]string{10: "10 bytes", 2048: "2.0 KB", 3 << 20: "3.0 MB", 5 << 30: "5.0 GB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
