package notify

import (
	"errors"
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"
)

// The freedesktop notification service's names.
const (
	fdoName  = "org.freedesktop.Notifications"
	fdoPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	fdoIface = "org.freedesktop.Notifications"
)

// maxTracked bounds the notification ids remembered for clicks: an old
// notification nobody clicked is forgotten first.
const maxTracked = 256

// Clickable sends notifications to org.freedesktop.Notifications with a
// default action and reports which session's notification the person
// clicked, so the window can open on it. It is the Linux (and BSD)
// desktop's sender; where there is no session bus, New fails and the app
// keeps the plain sender.
type Clickable struct {
	conn    *dbus.Conn
	appName string
	icon    string

	mu     sync.Mutex
	ids    map[uint32]aboutOf // notification id → what it was about
	order  []uint32
	clicks chan string
	// terminals yields the session of each "Go to terminal" action.
	terminals chan string
	// answers yields each Allow or Deny chosen on a permission request.
	answers chan Answer
	done    chan struct{}
	// noOpen: there is no window to open (headless), so no Open action.
	noOpen bool
}

// WithoutOpen stops offering Open (the default action): a headless
// supervisor has no window to open, and an action must never silently do
// nothing. Call it before the first Send.
func (c *Clickable) WithoutOpen() { c.noOpen = true }

// aboutOf is what a notification was about: its session and, for a
// permission request, the request it offered Allow and Deny for.
type aboutOf struct {
	session, request string
}

// Answer is Allow or Deny chosen on a permission request's notification,
// tied to that request: the app answers exactly it, and a request no
// longer open is not answered (the runtime refuses it).
type Answer struct {
	SessionID, RequestID string
	Allow                bool
}

// NewClickable connects to the session bus (DBUS_SESSION_BUS_ADDRESS) and
// listens for clicks. icon is an icon name from the theme (the installed
// app icon), or "".
func NewClickable(appName, icon string) (*Clickable, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("connecting to the session bus: %w", err)
	}
	return newClickable(conn, appName, icon)
}

func newClickable(conn *dbus.Conn, appName, icon string) (*Clickable, error) {
	for _, member := range []string{"ActionInvoked", "NotificationClosed"} {
		if err := conn.AddMatchSignal(dbus.WithMatchInterface(fdoIface), dbus.WithMatchMember(member)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("listening for notification %s: %w", member, err)
		}
	}
	c := &Clickable{conn: conn, appName: appName, icon: icon, ids: map[uint32]aboutOf{},
		clicks: make(chan string, 8), terminals: make(chan string, 8), answers: make(chan Answer, 8), done: make(chan struct{})}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	go c.listen(signals)
	return c, nil
}

// listen turns the service's signals into clicks until the connection closes.
func (c *Clickable) listen(signals <-chan *dbus.Signal) {
	defer close(c.done)
	defer close(c.clicks)
	defer close(c.terminals)
	defer close(c.answers)
	for sig := range signals {
		if len(sig.Body) < 2 {
			continue
		}
		id, ok := sig.Body[0].(uint32)
		if !ok {
			continue
		}
		switch sig.Name {
		case fdoIface + ".ActionInvoked":
			action, _ := sig.Body[1].(string)
			if action != "default" && action != terminalAction && action != allowAction && action != denyAction {
				continue
			}
			about := c.forget(id, action == allowAction || action == denyAction)
			if about.session == "" {
				continue
			}
			// Nobody reading fast enough: a click is not worth blocking
			// the bus for.
			switch action {
			case "default":
				offer(c.clicks, about.session)
			case terminalAction:
				offer(c.terminals, about.session)
			case allowAction, denyAction:
				if about.request != "" {
					offer(c.answers, Answer{SessionID: about.session, RequestID: about.request, Allow: action == allowAction})
				}
			}
		case fdoIface + ".NotificationClosed":
			c.forget(id, false)
		}
	}
}

// offer hands v to ch unless nobody is ready for it.
func offer[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// forget returns what notification id was about and forgets it: an
// action is taken once. An answer asked of a notification that offered
// none (no request) leaves it be and returns nothing.
func (c *Clickable) forget(id uint32, answer bool) aboutOf {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.ids[id]
	if answer && s.request == "" {
		return aboutOf{}
	}
	delete(c.ids, id)
	return s
}

// The action keys of "Go to terminal", "Allow" and "Deny".
const (
	terminalAction = "terminal"
	allowAction    = "allow"
	denyAction     = "deny"
)

// Send shows n with a default action ("Open") bound to its session, "Go
// to terminal" when the session runs in one, and Allow and Deny bound to
// the request when it asks for a permission the app can answer (a managed
// session's).
func (c *Clickable) Send(n Notification, _ []byte) error {
	var id uint32
	actions := []string{}
	if !c.noOpen {
		actions = append(actions, "default", "Open")
	}
	if n.Terminal {
		actions = append(actions, terminalAction, "Go to terminal")
	}
	if n.RequestID != "" {
		actions = append(actions, allowAction, "Allow", denyAction, "Deny")
	}
	call := c.conn.Object(fdoName, fdoPath).Call(fdoIface+".Notify", 0,
		c.appName, uint32(0), c.icon, n.Title, n.Body, actions, map[string]dbus.Variant{}, int32(-1))
	if call.Err != nil {
		return fmt.Errorf("sending a notification: %w", call.Err)
	}
	if err := call.Store(&id); err != nil {
		return fmt.Errorf("reading the notification's id: %w", err)
	}
	if n.SessionID == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[id] = aboutOf{session: n.SessionID, request: n.RequestID}
	c.order = append(c.order, id)
	if len(c.order) > maxTracked {
		delete(c.ids, c.order[0])
		c.order = c.order[1:]
	}
	return nil
}

// Clicks yields the session of each clicked notification; it is closed
// when the Clickable is closed.
func (c *Clickable) Clicks() <-chan string { return c.clicks }

// Terminals yields the session of each notification whose "Go to
// terminal" action was chosen; it is closed when the Clickable is closed.
func (c *Clickable) Terminals() <-chan string { return c.terminals }

// Answers yields each Allow or Deny chosen on a permission request's
// notification; it is closed when the Clickable is closed.
func (c *Clickable) Answers() <-chan Answer { return c.answers }

// Close stops listening.
func (c *Clickable) Close() error {
	err := c.conn.Close()
	<-c.done
	if errors.Is(err, dbus.ErrClosed) {
		return nil
	}
	return err
}
