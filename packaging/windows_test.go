package packaging

import (
	"strings"
	"testing"
)

func TestWindowsQuote(t *testing.T) {
	// Expected values follow CommandLineToArgvW's rules (and match what
	// syscall.EscapeArg produces on Windows).
	cases := map[string]string{
		"run":                     "run",
		"":                        `""`,
		`C:\Program Files\ss.exe`: `"C:\Program Files\ss.exe"`,
		`C:\dir\`:                 `C:\dir\`,
		`C:\my dir\`:              `"C:\my dir\\"`,
		`a"b`:                     `"a\"b"`,
		`a\"b`:                    `"a\\\"b"`,
	}
	for in, want := range cases {
		if got := windowsQuote(in); got != want {
			t.Errorf("windowsQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWindowsServiceConfig(t *testing.T) {
	spec := Spec{Executable: `C:\Users\Ada\AppData\Local\Programs\Session Supervisor\session-supervisor.exe`, DataDir: `C:\Users\Ada\AppData\Local\Session Supervisor`}
	cfg := windowsServiceConfig(spec, `PC\ada`, "pw")
	// A service runs in session 0 without a desktop: always headless.
	if got := strings.Join(cfg.Arguments, " "); got != `run --headless --data-dir C:\Users\Ada\AppData\Local\Session Supervisor` {
		t.Errorf("arguments %q", got)
	}
	if cfg.Name != Name || cfg.UserName != `PC\ada` || cfg.Executable != spec.Executable {
		t.Errorf("config %+v", cfg)
	}
	for k, want := range map[string]any{"OnFailure": "restart", "StartType": "automatic", "Password": "pw", "OnFailureResetPeriod": 600} {
		if cfg.Option[k] != want {
			t.Errorf("option %s = %v, want %v", k, cfg.Option[k], want)
		}
	}
	// The tray's logon entry runs the same binary and data directory, in
	// the tray only (no window popping up at logon).
	want := `"C:\Users\Ada\AppData\Local\Programs\Session Supervisor\session-supervisor.exe" run --tray --data-dir "C:\Users\Ada\AppData\Local\Session Supervisor"`
	if got := TrayLogonCommand(spec); got != want {
		t.Errorf("logon command %s, want %s", got, want)
	}
}
