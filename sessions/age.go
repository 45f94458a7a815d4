package sessions

import (
	"fmt"
	"time"
)

// Age is the compact duration since t that every view shows next to a
// state (the tray, the window, `ls`): 45s, 12m, 3h, 2d; "-" when unknown.
func Age(now, t time.Time) string {
	if t.IsZero() || now.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
