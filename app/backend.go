// Package app is the Fyne window: the sessions list, a session's live
// timeline and actions, the new-session dialog and Settings. It shows what
// the supervisor decides and sends the user's commands back; it decides no
// state itself.
package app

import (
	"context"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// Backend is the supervisor's commands (localapi.Commands, where each is
// described). The window reads what it shows from its model (ui/model),
// never from here: Timeline is called once when a session's detail opens
// (and again only after missed messages), never to redraw. The runtime in
// process satisfies it (the root's desktopSource checks that), and so does
// the desktop's router over every machine (ui/fleet); tests use a real
// Runtime over a temporary database.
type Backend interface {
	localapi.Commands
}

// SettingsBackend reads and changes settings: the app's settings service
// (*settings.Service, through the wire's re-exported types).
// List reads memory, so rendering Settings never queries SQLite; UpdateMany
// validates, clamps, persists and publishes a whole Save at once.
type SettingsBackend interface {
	List() []localapi.SettingValue
	UpdateMany(ctx context.Context, changes []localapi.SettingChange) ([]localapi.SetResult, error)
}

// Machines are the other machines' supervisors as the window reaches them
// (the desktop's fleet, ui/fleet): New session starts a session on one
// (keyed as the model holds it), Settings reads and saves one's settings.
// Both fail at once, saying why, for a machine whose link is down.
type Machines interface {
	LaunchOn(ctx context.Context, machine string, req localapi.LaunchRequest) (sessions.Session, error)
	SettingsOf(machine string) (SettingsBackend, error)
}

var (
	// An attached desktop drives a supervisor in another process the same way.
	_ Backend         = (*localapi.Remote)(nil)
	_ SettingsBackend = (*localapi.Remote)(nil)
)

// recording is the window's Backend: every command's returned session goes
// into the model at once, so what the user just did shows before its
// message arrives (and a session just launched can be opened).
type recording struct {
	Backend
	put func(sessions.Session)
}

func (r recording) keep(s sessions.Session, err error) (sessions.Session, error) {
	if err == nil {
		r.put(s)
	}
	return s, err
}

func (r recording) Launch(ctx context.Context, req localapi.LaunchRequest) (sessions.Session, error) {
	return r.keep(r.Backend.Launch(ctx, req))
}

func (r recording) Send(ctx context.Context, id, prompt string) (sessions.Session, error) {
	return r.keep(r.Backend.Send(ctx, id, prompt))
}

func (r recording) Interrupt(ctx context.Context, id string) (sessions.Session, error) {
	return r.keep(r.Backend.Interrupt(ctx, id))
}

func (r recording) Ack(ctx context.Context, id string) (sessions.Session, error) {
	return r.keep(r.Backend.Ack(ctx, id))
}

func (r recording) Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error) {
	return r.keep(r.Backend.Answer(ctx, id, requestID, allow, message))
}

func (r recording) NudgeNow(ctx context.Context, id string) (sessions.Session, error) {
	return r.keep(r.Backend.NudgeNow(ctx, id))
}

func (r recording) Resume(ctx context.Context, id string) (sessions.Session, error) {
	return r.keep(r.Backend.Resume(ctx, id))
}

func (r recording) SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error) {
	return r.keep(r.Backend.SetRecovery(ctx, id, on))
}
