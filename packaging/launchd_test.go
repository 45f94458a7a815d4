package packaging

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/testdir"
)

const defaultPlist = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by "session-supervisor service install", removed by "session-supervisor service uninstall". -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>io.github.sessionsupervisor</string>
	<key>ProgramArguments</key>
	<array>
		<string>/Applications/Session Supervisor.app/Contents/MacOS/session-supervisor</string>
		<string>run</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>ExitTimeOut</key>
	<integer>60</integer>
	<key>ProcessType</key>
	<string>Interactive</string>
	<key>LimitLoadToSessionType</key>
	<string>Aqua</string>
	<key>EnvironmentVariables</key>
	<dict>
		<key>PATH</key>
		<string>/opt/homebrew/bin:/usr/bin:/bin</string>
		<key>SESSION_SUPERVISOR_SERVICE</key>
		<string>launchd</string>
	</dict>
	<key>StandardErrorPath</key>
	<string>/Users/ada/Library/Logs/session-supervisor.stderr.log</string>
</dict>
</plist>
`

func macSpec() Spec {
	return Spec{Executable: "/Applications/Session Supervisor.app/Contents/MacOS/session-supervisor", PathEnv: "/opt/homebrew/bin:/usr/bin:/bin"}
}

func TestLaunchdPlistDefault(t *testing.T) {
	got := LaunchdPlist(macSpec(), "/Users/ada")
	if got != defaultPlist {
		t.Errorf("plist differs:\n--- got\n%s\n--- want\n%s", got, defaultPlist)
	}
}

// plistValue is a decoded property list value: enough of the format to
// check what launchd will read, independently of how the text is laid out.
type plistValue struct {
	kind  string // string, integer, true, false, array, dict
	text  string
	items []plistValue
	dict  map[string]plistValue
}

func decodePlist(t *testing.T, s string) map[string]plistValue {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var parse func(start xml.StartElement) plistValue
	parse = func(start xml.StartElement) plistValue {
		v := plistValue{kind: start.Name.Local}
		var key string
		for {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("invalid plist XML: %v", err)
			}
			switch tk := tok.(type) {
			case xml.StartElement:
				if tk.Name.Local == "key" {
					var k string
					if err := dec.DecodeElement(&k, &tk); err != nil {
						t.Fatal(err)
					}
					key = k
					continue
				}
				child := parse(tk)
				switch v.kind {
				case "dict":
					if v.dict == nil {
						v.dict = map[string]plistValue{}
					}
					v.dict[key] = child
				default:
					v.items = append(v.items, child)
				}
			case xml.CharData:
				v.text += string(tk)
			case xml.EndElement:
				v.text = strings.TrimSpace(v.text)
				return v
			}
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			t.Fatal("no plist dict")
		}
		if err != nil {
			t.Fatalf("invalid plist XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			return parse(se).dict
		}
	}
}

func TestLaunchdPlistVariants(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		check func(t *testing.T, d map[string]plistValue)
	}{
		{"runs at load, kept alive only after a crash", macSpec(), func(t *testing.T, d map[string]plistValue) {
			if d["RunAtLoad"].kind != "true" {
				t.Errorf("RunAtLoad = %+v", d["RunAtLoad"])
			}
			ka := d["KeepAlive"]
			if ka.kind != "dict" || ka.dict["SuccessfulExit"].kind != "false" || len(ka.dict) != 1 {
				t.Errorf("KeepAlive = %+v, want {SuccessfulExit: false}", ka)
			}
			if d["Label"].text != AppID || d["LimitLoadToSessionType"].text != "Aqua" {
				t.Errorf("Label/session type = %+v / %+v", d["Label"], d["LimitLoadToSessionType"])
			}
			if d["EnvironmentVariables"].dict[EnvService].text != "launchd" {
				t.Errorf("the service marker is missing: %+v", d["EnvironmentVariables"])
			}
		}},
		{"headless runs in the background in any session", Spec{Executable: "/usr/local/bin/session-supervisor", Headless: true}, func(t *testing.T, d map[string]plistValue) {
			args := d["ProgramArguments"].items
			if len(args) != 3 || args[2].text != "--headless" {
				t.Errorf("ProgramArguments = %+v", args)
			}
			if _, ok := d["LimitLoadToSessionType"]; ok || d["ProcessType"].text != "Background" {
				t.Errorf("headless plist limits the session type or is not Background: %+v", d)
			}
			if _, ok := d["EnvironmentVariables"].dict["PATH"]; ok {
				t.Errorf("PATH written though none was given")
			}
		}},
		{"data directory and XML specials", Spec{Executable: "/Users/a&b/<bin>/session-supervisor", DataDir: "/Users/a&b/Data \"x\""}, func(t *testing.T, d map[string]plistValue) {
			var got []string
			for _, a := range d["ProgramArguments"].items {
				got = append(got, a.text)
			}
			want := []string{"/Users/a&b/<bin>/session-supervisor", "run", "--data-dir", "/Users/a&b/Data \"x\""}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("ProgramArguments = %q, want %q", got, want)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, decodePlist(t, LaunchdPlist(tc.spec, "/Users/ada")))
		})
	}
}

// fakeLaunchctl records launchctl calls; loaded/running is its state.
type fakeLaunchctl struct {
	mu      sync.Mutex
	calls   []string
	loaded  bool
	running bool
}

func (f *fakeLaunchctl) run(_ context.Context, name string, args ...string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch args[0] {
	case "print":
		if !f.loaded {
			return "", "Could not find service \"x\" in domain for port", errors.New("exit status 113")
		}
		state := "not running"
		if f.running {
			state = "running"
		}
		return "gui/501/io.github.sessionsupervisor = {\n\tactive count = 1\n\tstate = " + state + "\n}\n", "", nil
	case "bootstrap":
		f.loaded, f.running = true, true
	case "bootout":
		f.loaded, f.running = false, false
	case "kickstart":
		f.running = true
	}
	return "", "", nil
}

func TestLaunchAgentLifecycle(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "Library", "LaunchAgents"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := testdir.Listing(t, home)
	fake := &fakeLaunchctl{}
	m := NewLaunchAgent(macSpec(), home, 501, fake.run)
	ctx := context.Background()

	res, err := m.Install(ctx)
	if err != nil || res.Change != Created || !res.Enabled || res.Running {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if want := filepath.Join(home, "Library", "LaunchAgents", AppID+".plist"); res.Path != want {
		t.Errorf("plist at %s, want %s", res.Path, want)
	}
	if res, err := m.Install(ctx); err != nil || res.Change != Unchanged {
		t.Fatalf("second install: %+v, %v", res, err)
	}
	st, err := m.Status(ctx)
	if err != nil || st.State != StateStopped || !st.Installed || !st.Current {
		t.Fatalf("status after install: %+v, %v", st, err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Status(ctx); st.State != StateRunning || st.Command != macSpec().Executable+" run" {
		t.Errorf("status after start: %+v", st)
	}
	ures, err := m.Uninstall(ctx)
	if err != nil || len(ures.Removed) != 1 {
		t.Fatalf("uninstall: %+v, %v", ures, err)
	}
	testdir.Unchanged(t, home, before)

	var verbs []string
	for _, c := range fake.calls {
		if !strings.HasPrefix(c, "launchctl print") {
			verbs = append(verbs, c)
		}
	}
	want := []string{
		"launchctl enable gui/501/" + AppID,
		"launchctl enable gui/501/" + AppID,
		"launchctl bootstrap gui/501 " + res.Path,
		"launchctl bootout gui/501/" + AppID,
		"launchctl bootstrap gui/501 " + res.Path,
		"launchctl bootout gui/501/" + AppID,
	}
	if strings.Join(verbs, "\n") != strings.Join(want, "\n") {
		t.Errorf("launchctl calls:\n%s\nwant:\n%s", strings.Join(verbs, "\n"), strings.Join(want, "\n"))
	}
	var p *Problem
	if err := m.Start(ctx); !errors.As(err, &p) || p.Fix != "session-supervisor service install" {
		t.Errorf("start when not installed: %v", err)
	}
}
