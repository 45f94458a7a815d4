package notify

import (
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// screenSavers are the session-bus services that say whether the screen
// is locked (or blanked), in the order asked: the freedesktop name most
// desktops implement (KDE, Xfce, Cinnamon, MATE), then GNOME's.
var screenSavers = []struct {
	name string
	path dbus.ObjectPath
}{
	{"org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver"},
	{"org.gnome.ScreenSaver", "/org/gnome/ScreenSaver"},
}

// ScreenLocked asks the session's screen saver whether it is active;
// known is false when none answers (no desktop, or one that does not
// say), which the caller takes as unlocked.
func ScreenLocked(conn *dbus.Conn) (locked, known bool) {
	for _, s := range screenSavers {
		var active bool
		if err := conn.Object(s.name, s.path).Call(s.name+".GetActive", 0).Store(&active); err == nil {
			return active, true
		}
	}
	return false, false
}

// LockWatch answers "is the screen locked?" at most once per TTL: the push
// channels ask on every session change, and a bus round trip each time
// would cost more than the answer is worth.
type LockWatch struct {
	conn *dbus.Conn
	ttl  time.Duration

	mu     sync.Mutex
	asked  time.Time
	locked bool
}

// NewLockWatch asks over conn (nil: never locked) every ttl at most.
func NewLockWatch(conn *dbus.Conn, ttl time.Duration) *LockWatch {
	return &LockWatch{conn: conn, ttl: ttl}
}

// Locked reports whether the screen was locked when last asked.
func (w *LockWatch) Locked(now time.Time) bool {
	if w == nil || w.conn == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asked.IsZero() || now.Sub(w.asked) >= w.ttl {
		w.locked, _ = ScreenLocked(w.conn)
		w.asked = now
	}
	return w.locked
}
