//go:build !windows

package tray

// osIcon is the icon as the platform's tray takes it: PNG here.
func osIcon(png []byte) []byte { return png }
