package packaging

import (
	"strings"

	"github.com/kardianos/service"
)

// On Windows the app is two processes that meet through the local API: the
// supervisor runs as a service (`run --headless`, started at boot, restarted
// by the service control manager after a crash) and owns the data directory
// and its socket; a service lives in session 0 and cannot show a window or a
// tray icon, so a logon entry (HKCU\…\Run) starts `run` in the user's desktop
// session. That second `run` finds the data directory held, asks the service
// over the socket to show its window and exits 0, exactly as on Linux and
// macOS; the desktop UI uses the same socket as the CLI.

// EnvServicePassword names the variable `service install` reads the
// account's password from on Windows. The service runs as the installing
// user (the agents need that user's files and credentials), and the
// service control manager needs the password to log that account on.
const EnvServicePassword = "SESSION_SUPERVISOR_SERVICE_PASSWORD"

// windowsServiceConfig is the kardianos/service configuration of the
// Windows service: headless (session 0 has no desktop), started
// automatically but delayed, so it does not slow the boot and the desktop
// session's `run` usually holds the data directory while someone is logged
// in (the service stands by and takes over at logout); restarted by the
// service control manager 10 s after a crash; the failure count resets after
// ten quiet minutes.
func windowsServiceConfig(spec Spec, account, password string) *service.Config {
	spec.Headless = true
	var env map[string]string
	if spec.PathEnv != "" {
		// As in the unit and the plist: the installing shell's PATH, so
		// the agents are found.
		env = map[string]string{"PATH": spec.PathEnv}
	}
	return &service.Config{
		EnvVars:     env,
		Name:        Name,
		DisplayName: DisplayName,
		Description: Description,
		Executable:  spec.Executable,
		Arguments:   spec.Args(),
		UserName:    account,
		Option: service.KeyValue{
			"Password":               password,
			"StartType":              "automatic",
			"DelayedAutoStart":       true,
			"OnFailure":              "restart",
			"OnFailureDelayDuration": "10s",
			"OnFailureResetPeriod":   600,
		},
	}
}

// TrayLogonCommand is the command line the logon entry runs in the user's
// session: the same binary, `run` with the window (not headless), and the
// same data directory as the service.
func TrayLogonCommand(spec Spec) string {
	spec.Headless = false
	// Started for the user at logon: the tray only, no window popping up.
	args := append([]string{spec.Executable, "run", "--tray"}, spec.Args()[1:]...)
	return windowsCommandLine(args)
}

// windowsCommandLine joins args the way CommandLineToArgvW splits them
// (the rules syscall.EscapeArg follows, which only builds on Windows).
func windowsCommandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = windowsQuote(a)
	}
	return strings.Join(q, " ")
}

func windowsQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			// Backslashes before a quote are escapes: double them, then
			// escape the quote itself.
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	// Backslashes before the closing quote would escape it: double them.
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}
