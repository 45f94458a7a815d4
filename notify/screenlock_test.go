package notify

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/requiretool"
)

type fakeScreenSaver struct{ active atomic.Bool }

func (f *fakeScreenSaver) GetActive() (bool, *dbus.Error) { return f.active.Load(), nil }

// The screen saver's answer on the session bus is the lock state; with
// none on the bus it is unknown (taken as unlocked); the watch asks again
// only after its TTL.
func TestScreenLocked(t *testing.T) {
	addr := requiretool.SessionBus(t)
	client, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if locked, known := ScreenLocked(client); locked || known {
		t.Fatalf("no screen saver: locked %v known %v", locked, known)
	}
	server, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	saver := &fakeScreenSaver{}
	saver.active.Store(true)
	if err := server.Export(saver, "/org/gnome/ScreenSaver", "org.gnome.ScreenSaver"); err != nil {
		t.Fatal(err)
	}
	if reply, err := server.RequestName("org.gnome.ScreenSaver", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning the screen saver's name: %v %v", reply, err)
	}
	if locked, known := ScreenLocked(client); !locked || !known {
		t.Fatalf("GNOME's screen saver active: locked %v known %v", locked, known)
	}
	t0 := time.Now()
	w := NewLockWatch(client, time.Minute)
	if !w.Locked(t0) {
		t.Fatal("the watch says unlocked")
	}
	saver.active.Store(false)
	if !w.Locked(t0.Add(30 * time.Second)) {
		t.Fatal("the watch asked again before its TTL")
	}
	if w.Locked(t0.Add(time.Minute)) {
		t.Fatal("the watch did not ask again after its TTL")
	}
	var none *LockWatch
	if none.Locked(t0) {
		t.Fatal("a nil watch is locked")
	}
}
