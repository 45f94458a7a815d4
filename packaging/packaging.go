// Package packaging registers Session Supervisor with the OS so it is there
// whenever the user is: a per-user systemd unit on Linux, a launchd
// LaunchAgent on macOS, a service (plus a logon entry for the tray) on
// Windows. It also decides how `run` logs once a service manager, not a
// terminal, started it.
//
// The unit and plist are generated here rather than by kardianos/service's
// templates: those cannot express what the app needs (restart on failure with
// a burst limit, start with the graphical session, KeepAlive only on crash),
// they write the user unit to ~/.config regardless of $XDG_CONFIG_HOME, and
// their Install refuses to run twice, while ours must be idempotent. On
// Windows, where the service control manager is an API rather than a file,
// kardianos/service does the work.
//
// Nothing here imports the rest of the app: the caller passes what it needs
// (the binary, the data directory) in a Spec.
package packaging

// Names the OS sees. They must stay stable across releases: install writes
// them and a later uninstall (by a newer build) must find the same ones.
const (
	// Name is the service, unit and binary name.
	Name = "session-supervisor"
	// DisplayName is the human name (Windows service list, desktop entry).
	DisplayName = "Session Supervisor"
	// AppID is the reverse-DNS application id: the launchd label, the Fyne
	// app id (gui.go) and FyneApp.toml's ID.
	AppID = "io.github.sessionsupervisor"
	// Description is one line for service managers.
	Description = "Keeps local AI coding-agent sessions honest and moving"
	// UnitName is the systemd user unit's file name.
	UnitName = Name + ".service"
)

// EnvService is set by the generated unit and plist to say which service
// manager started `run` ("systemd" or "launchd"), so run can log where that
// manager collects logs instead of to a terminal nobody is watching.
const EnvService = "SESSION_SUPERVISOR_SERVICE"
