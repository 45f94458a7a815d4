package packaging

import (
	"path/filepath"
	"strconv"
)

// The XDG base directories (https://specifications.freedesktop.org/basedir-spec/).
// The spec says a relative value is invalid and must be ignored, so a
// relative $XDG_CONFIG_HOME cannot make the unit land in the working
// directory.

// ConfigHome is $XDG_CONFIG_HOME, else ~/.config.
func ConfigHome(getenv func(string) string, home string) string {
	return xdgDir(getenv, "XDG_CONFIG_HOME", home, ".config")
}

// DataHome is $XDG_DATA_HOME, else ~/.local/share: applications/ and
// icons/ live under it.
func DataHome(getenv func(string) string, home string) string {
	return xdgDir(getenv, "XDG_DATA_HOME", home, ".local", "share")
}

// SystemdUserDir is where systemd looks for the user's own units.
func SystemdUserDir(getenv func(string) string, home string) string {
	return filepath.Join(ConfigHome(getenv, home), "systemd", "user")
}

// DesktopEntryPath is where install.sh puts the desktop entry.
func DesktopEntryPath(getenv func(string) string, home string) string {
	return filepath.Join(DataHome(getenv, home), "applications", Name+".desktop")
}

// IconPath is where install.sh puts the size×size app icon.
func IconPath(getenv func(string) string, home string, size int) string {
	return filepath.Join(DataHome(getenv, home), "icons", "hicolor", iconDirName(size), "apps", Name+".png")
}

// IconSizes are the hicolor sizes the Linux package ships.
var IconSizes = []int{16, 32, 48, 64, 128, 256}

func iconDirName(size int) string {
	return strconv.Itoa(size) + "x" + strconv.Itoa(size)
}

func xdgDir(getenv func(string) string, env, home string, def ...string) string {
	if d := getenv(env); d != "" && filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(append([]string{home}, def...)...)
}
