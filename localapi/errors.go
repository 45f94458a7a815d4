package localapi

import (
	"errors"
	"fmt"
)

// The kinds of failure the runtime reports, so the local API can answer
// with the right status and its client can rebuild the same error: a
// request that can never succeed as sent (400), an unknown session (404), a
// request the session's current state refuses (409), and a runtime that
// cannot do it right now (503).
var (
	// ErrInvalid: the request itself is wrong (an empty prompt, a bad directory).
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound is returned for an unknown session id.
	ErrNotFound = errors.New("no such session")
	// ErrConflict: the session's state refuses it (no turn to interrupt, no
	// pending permission, the agent would not start).
	ErrConflict = errors.New("not possible in the session's current state")
	// ErrUnavailable: the runtime cannot do it now (the database is failing,
	// the loop is not ticking); retrying later may work.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrForbidden: the caller may not make this request (another user, or
	// a tool of a supervised session asking for a change).
	ErrForbidden = errors.New("forbidden")
	// ErrRequestClosed: the permission request an answer names is no longer
	// open (answered already, by a double click or another view, or
	// withdrawn by the agent). A 409 of its own kind, so a view can say the
	// request is gone instead of "not possible now".
	ErrRequestClosed = errors.New("the permission request is no longer open")
)

// kindError carries a message and the kind it is matched by with errors.Is;
// its text is the message alone.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// Errorf is an error of the given kind (one of the Err values above) whose
// text is the formatted message alone: the runtime reports its refusals
// with it, and the client rebuilds them from the wire the same way.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// ErrorKind names the kind of err for the wire ("invalid", "not_found",
// "conflict", "unavailable", "forbidden", "request_closed"), "" when it
// has none.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, ErrRequestClosed):
		return "request_closed"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	}
	return ""
}

// ErrorFromWire rebuilds an error of the named kind, so a client's caller
// can use errors.Is exactly as with the runtime in process.
func ErrorFromWire(kind, msg string) error {
	switch kind {
	case "invalid":
		return Errorf(ErrInvalid, "%s", msg)
	case "not_found":
		return Errorf(ErrNotFound, "%s", msg)
	case "conflict":
		return Errorf(ErrConflict, "%s", msg)
	case "unavailable":
		return Errorf(ErrUnavailable, "%s", msg)
	case "forbidden":
		return Errorf(ErrForbidden, "%s", msg)
	case "request_closed":
		return Errorf(ErrRequestClosed, "%s", msg)
	}
	return errors.New(msg)
}
