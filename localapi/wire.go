// Package localapi is the wire between the supervisor and whoever watches or
// drives it: the messages of the live stream and their cursors, the timeline
// rows, health, the errors a request can fail with, the server on the data
// directory's unix socket, its client, and Remote (an attached desktop's
// mirror). It knows the runtime only through the Supervisor interface, so the
// desktop, the notifier and the CLI depend on the wire, not on the runtime.
package localapi

import (
	"context"
	"sort"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// MessageType says what a bus message carries.
type MessageType string

// The message types on the live stream.
const (
	// MsgSnapshot is the full authoritative state of every session.
	MsgSnapshot MessageType = "snapshot"
	// MsgResync tells a client its cursor is from an older generation; a
	// snapshot follows at once.
	MsgResync MessageType = "resync"
	// MsgSession is one session's new state.
	MsgSession MessageType = "session"
	// MsgTimeline is one new timeline row.
	MsgTimeline MessageType = "timeline"
	// MsgEscalation is a session that needs attention (for the notifier).
	MsgEscalation MessageType = "escalation"
	// MsgSettings carries every setting's value in force after a change
	// (a snapshot carries them too).
	MsgSettings MessageType = "settings"
	// MsgShow asks an attached desktop to bring its window forward (a
	// second `run` while the supervisor runs headless).
	MsgShow MessageType = "show"
	// MsgUsage carries today's usage across every session when it changed
	// (a snapshot carries it too): the tray's header.
	MsgUsage MessageType = "usage"
)

// Message is one item on the live event stream.
type Message struct {
	Cursor   Cursor             `json:"cursor"`
	Type     MessageType        `json:"type"`
	Session  *sessions.Session  `json:"session,omitempty"`
	Sessions []sessions.Session `json:"sessions,omitempty"`
	Event    *TimelineRow       `json:"event,omitempty"`
	// Settings is every setting's value in force (MsgSettings, and
	// MsgSnapshot when the runtime has a settings source).
	Settings []SettingValue `json:"settings,omitempty"`
	// Link is a Remote's link state (MsgLink, local only).
	Link *LinkStatus `json:"link,omitempty"`
	// Usage is today's usage across every session (MsgUsage, MsgSnapshot).
	Usage *DayUsage `json:"usage,omitempty"`
	// Machine is the other machine the message came from, set by the
	// desktop when it relays that machine's stream ("" for this one). It
	// never crosses the API: a supervisor speaks only for its own machine.
	Machine string `json:"-"`
}

// DayUsage is one local calendar day's usage across every session: its
// tokens, their equivalent API cost by the supervisor's price table (what
// they would cost at list prices, not a charge) and the automatic
// recoveries of the day.
type DayUsage struct {
	Day    string          `json:"day"`
	Tokens sessions.Tokens `json:"tokens"`
	Cost   pricing.Micros  `json:"equivalent_api_cost_micros"`
	// Unknown: a model the table does not know is priced at the fallback
	// rate in Cost.
	Unknown    bool `json:"unknown_models,omitempty"`
	Recoveries int  `json:"recoveries"`
}

// UsageDay is one row of the usage history as `usage --by day` reads it:
// a session's tokens of one model on one day.
type UsageDay = storage.UsageRow

// TimelineRow is a timeline row as published on the bus and the API.
type TimelineRow = storage.TimelineEvent

// TimelineChoice is what forget does with a session's timeline, re-exported
// so the views need not import storage.
type TimelineChoice = storage.TimelineChoice

// The choices.
const (
	KeepTimeline = storage.KeepTimeline
	DropTimeline = storage.DropTimeline
)

// HandoverRequest asks to continue a managed session in a terminal.
type HandoverRequest struct {
	// Interrupt stops the turn in flight (as the user's stop) instead of
	// waiting for it to end.
	Interrupt bool `json:"interrupt"`
	// WaitSeconds bounds the wait for the turn to end (0: the default,
	// DefaultHandoverWait).
	WaitSeconds int `json:"wait_seconds"`
}

// DefaultHandoverWait is how long a hand-over waits for the turn in flight
// to end by itself before it gives up and says so (the session goes on).
const DefaultHandoverWait = 10 * time.Minute

// Handover is a managed session stopped to continue in a terminal: the
// command line that continues it (the agent's own resume, with its
// agents.NAME.command) and the directory it runs in. The caller opens it
// where the person is (their tmux, their display).
type Handover struct {
	Session sessions.Session `json:"session"`
	Argv    []string         `json:"argv"`
	Cwd     string           `json:"cwd"`
	// Stopped says how the process was stopped ("it exited when its input
	// closed", "it was killed after …").
	Stopped string `json:"stopped"`
}

// LaunchRequest asks for a new managed session.
type LaunchRequest struct {
	Agent          string `json:"agent"`
	Cwd            string `json:"cwd"`
	Name           string `json:"name"`
	PermissionMode string `json:"permission_mode"`
	Prompt         string `json:"prompt"`
}

// SortSessions orders sessions as every list shows them: needing attention
// first, then newest.
func SortSessions(out []sessions.Session) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].NeedsAttention != out[j].NeedsAttention {
			return out[i].NeedsAttention
		}
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
}

// The settings types the UI needs, re-exported so app and tray read
// settings through the wire rather than importing the settings package.
type (
	SettingValue  = settings.Value
	SetResult     = settings.SetResult
	SettingDef    = settings.Def
	Settings      = settings.Settings
	SettingChange = settings.Change
)

// AgentCommandKey is the setting holding the command that starts agent name.
func AgentCommandKey(name string) string { return settings.AgentCommandKey(name) }

// Commands are a supervisor's commands as a desktop sends them: the
// Runtime in process, a Remote attached over the API, the desktop's router
// over every machine (ui/fleet) all take them.
type Commands interface {
	Timeline(ctx context.Context, id string, limit int) ([]TimelineRow, error)
	Launch(ctx context.Context, req LaunchRequest) (sessions.Session, error)
	Send(ctx context.Context, id, prompt string) (sessions.Session, error)
	Interrupt(ctx context.Context, id string) (sessions.Session, error)
	Ack(ctx context.Context, id string) (sessions.Session, error)
	// Answer answers the permission request requestID, the one the window
	// shows, never whichever is oldest when the call runs.
	Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error)
	NudgeNow(ctx context.Context, id string) (sessions.Session, error)
	// Forget removes an ended session. Not recorded into the model: the
	// snapshot that follows drops it there.
	Forget(ctx context.Context, id string, timeline TimelineChoice) (sessions.Session, error)
	// Resume resumes a terminal session whose process is gone as a new
	// managed session (returned).
	Resume(ctx context.Context, id string) (sessions.Session, error)
	// Handover stops a managed session's process to continue it in a
	// terminal (waiting for its turn, or interrupting it) and answers the
	// command that continues it there.
	Handover(ctx context.Context, id string, req HandoverRequest) (Handover, error)
	// SetRecovery is the session's "stop recovering" switch (on: it is
	// recovered again).
	SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error)
	// PublishSnapshot re-emits every session on the bus. The window's
	// Settings calls it after saving, so the tray and other views re-read
	// at once instead of at the next periodic snapshot.
	PublishSnapshot()
}
