// Package assets holds the embedded icons: one tray icon per aggregate
// state and the app icon in the sizes desktops ask for. The PNGs are drawn by
// gen_icons.go (go run assets/gen_icons.go) and committed.
package assets

import (
	"embed"
	"fmt"

	"github.com/session-supervisor/session-supervisor/enum"
)

//go:embed icons/*.png
var icons embed.FS

// Icon names the tray icon of an aggregate state.
type Icon int

// The tray icons, in order of urgency (most urgent first).
const (
	IconAttention Icon = iota
	IconWaiting
	IconRecovering
	IconWorking
	IconIdle
)

var iconNames = []string{"attention", "waiting", "recovering", "working", "idle"}

func (i Icon) String() string { return enum.Name(i, "icon", iconNames) }

// TrayIcon returns the 64 px PNG for a state icon (Linux trays need PNG).
func TrayIcon(i Icon) []byte { return mustRead(fmt.Sprintf("icons/%s-64.png", i)) }

// AppIconSizes are the sizes AppIcon has.
var AppIconSizes = []int{16, 32, 48, 64, 128, 256}

// AppIcon returns the app icon at one of AppIconSizes.
func AppIcon(size int) ([]byte, error) {
	b, err := icons.ReadFile(fmt.Sprintf("icons/app-%d.png", size))
	if err != nil {
		return nil, fmt.Errorf("no %d px app icon (have %v): %w", size, AppIconSizes, err)
	}
	return b, nil
}

func mustRead(name string) []byte {
	b, err := icons.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("embedded icon %s is missing: %v", name, err))
	}
	return b
}
