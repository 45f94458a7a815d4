package supervisor

import "github.com/session-supervisor/session-supervisor/localapi"

// The runtime's refusals, of the kinds the local API answers with its
// status codes (see localapi.ErrInvalid and its siblings).

func invalidf(format string, args ...any) error {
	return localapi.Errorf(localapi.ErrInvalid, format, args...)
}

func conflictf(format string, args ...any) error {
	return localapi.Errorf(localapi.ErrConflict, format, args...)
}

func unavailablef(format string, args ...any) error {
	return localapi.Errorf(localapi.ErrUnavailable, format, args...)
}
