// Package app is the Fyne window: the sessions list, a session's live
// timeline and actions, the new-session dialog and Settings. It shows what
// the supervisor decides and sends the user's commands back; it decides no
// state itself.
package app

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

// Backend is what the window needs from the supervisor. *supervisor.Runtime
// satisfies it; tests use a real Runtime over a temporary database.
type Backend interface {
	Sessions() []sessions.Session
	Session(id string) (sessions.Session, error)
	Timeline(ctx context.Context, id string, limit int) ([]supervisor.TimelineRow, error)
	Bus() *supervisor.Bus
	Launch(ctx context.Context, req supervisor.LaunchRequest) (sessions.Session, error)
	Send(ctx context.Context, id, prompt string) (sessions.Session, error)
	Interrupt(ctx context.Context, id string) (sessions.Session, error)
	Ack(ctx context.Context, id string) (sessions.Session, error)
	Answer(ctx context.Context, id string, allow bool, message string) (sessions.Session, error)
	NudgeNow(ctx context.Context, id string) (sessions.Session, error)
	// PublishSnapshot re-emits every session on the bus. Settings calls it
	// after saving, so the tray and other views re-read at once instead of
	// at the next periodic snapshot.
	PublishSnapshot()
}

// SettingsBackend reads and changes settings: the app's settings service
// (*storage.SettingsService, through the supervisor's re-exported types).
// List reads memory, so rendering Settings never queries SQLite; UpdateMany
// validates, clamps, persists and publishes a whole Save at once.
type SettingsBackend interface {
	List() []supervisor.SettingValue
	UpdateMany(ctx context.Context, changes []supervisor.SettingChange) ([]supervisor.SetResult, error)
}

var _ Backend = (*supervisor.Runtime)(nil)
