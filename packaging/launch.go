package packaging

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

// Launch says what started `run`, which decides where it logs.
type Launch string

// The ways `run` is started.
const (
	// LaunchTerminal: a user in a terminal or a desktop launcher; logs go
	// to stderr as they always did.
	LaunchTerminal Launch = "terminal"
	// LaunchSystemd: the user unit. stderr goes to the journal, which
	// stamps the time itself and reads a "<N>" priority prefix per line.
	LaunchSystemd Launch = "systemd"
	// LaunchLaunchd: the LaunchAgent. Nobody reads its stderr, so logs go
	// to a rotating file in the data directory.
	LaunchLaunchd Launch = "launchd"
	// LaunchWindowsService: the service control manager. A service has no
	// console at all; logs go to the rotating file too.
	LaunchWindowsService Launch = "windows-service"
)

// Interactive reports whether a person started run and may be watching
// its terminal.
func (l Launch) Interactive() bool { return l == LaunchTerminal }

// StopGrace bounds the graceful quit (turns in flight finishing) under a
// service manager. It is shorter than the unit's TimeoutStopSec and the
// plist's ExitTimeOut, so the app closes its database and socket itself
// before the manager kills it; in a terminal a second Ctrl-C decides instead.
const StopGrace = (timeoutStopSec - 10) * time.Second

// DetectLaunch works out what started this process.
func DetectLaunch() Launch {
	return detectLaunch(runtime.GOOS, os.Getenv, underWindowsService, stderrIdentity)
}

// detectLaunch is DetectLaunch with its inputs passed in. The variable our
// own unit and plist set is the first answer; JOURNAL_STREAM (systemd's own
// signal, checked against stderr's device and inode as systemd.exec(5)
// says, since children inherit the variable) and launchd's XPC_SERVICE_NAME
// cover a unit or plist the user wrote by hand.
func detectLaunch(goos string, getenv func(string) string, windowsService func() bool, stderrID func() (dev, ino uint64, ok bool)) Launch {
	if goos == "windows" && windowsService() {
		return LaunchWindowsService
	}
	switch getenv(EnvService) {
	case "systemd":
		return LaunchSystemd
	case "launchd":
		return LaunchLaunchd
	}
	if goos == "darwin" && getenv("XPC_SERVICE_NAME") == AppID {
		return LaunchLaunchd
	}
	if js := getenv("JOURNAL_STREAM"); js != "" {
		if dev, ino, ok := stderrID(); ok && js == strconv.FormatUint(dev, 10)+":"+strconv.FormatUint(ino, 10) {
			return LaunchSystemd
		}
	}
	return LaunchTerminal
}
