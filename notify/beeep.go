package notify

import "github.com/gen2brain/beeep"

// Desktop sends a real desktop notification (org.freedesktop.Notifications
// over D-Bus on Linux, with beeep's fallbacks elsewhere).
func Desktop(title, body string, icon []byte) error {
	beeep.AppName = "Session Supervisor"
	if icon == nil {
		return beeep.Notify(title, body, "")
	}
	return beeep.Notify(title, body, icon)
}
