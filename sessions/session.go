package sessions

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
)

// Failure is why a turn failed, already sanitized: it never carries secrets
// or raw provider stderr.
type Failure struct {
	Kind    FailureKind `json:"kind"`
	RetryAt time.Time   `json:"retry_at,omitzero"`
	Message string      `json:"message"`
}

// failureJSON is Failure's wire form: retry_at is always present, null when
// unknown, so scripts can rely on the key (the --json contract).
type failureJSON struct {
	Kind    FailureKind `json:"kind"`
	RetryAt *time.Time  `json:"retry_at"`
	Message string      `json:"message"`
}

// MarshalJSON writes retry_at as null when it is unknown.
func (f Failure) MarshalJSON() ([]byte, error) {
	w := failureJSON{Kind: f.Kind, Message: f.Message}
	if !f.RetryAt.IsZero() {
		t := f.RetryAt
		w.RetryAt = &t
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Failure) UnmarshalJSON(b []byte) error {
	var w failureJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = Failure{Kind: w.Kind, Message: w.Message}
	if w.RetryAt != nil {
		f.RetryAt = *w.RetryAt
	}
	return nil
}

// IsZero reports whether there is no failure.
func (f Failure) IsZero() bool { return f.Kind == NoFailure && f.Message == "" && f.RetryAt.IsZero() }

// OpenCall is a tool call or background task that has started and not finished.
type OpenCall struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
}

// NudgeBudget tracks the continuation nudge for the current incident.
type NudgeBudget struct {
	Attempts  int       `json:"attempts"`
	LastNudge time.Time `json:"last_nudge,omitzero"`
}

// Supervision is the supervisor's own bookkeeping for the current incident,
// persisted with the session so a restart neither forgets a spent budget nor
// repeats an escalation. Only supervisor.Reconcile writes it.
type Supervision struct {
	// Recovery is what the supervisor is currently doing about a failure
	// ("overflow", "rate_limit", "auth"); empty when nothing is in progress.
	Recovery string `json:"recovery,omitempty"`
	// RecoveryAttempts counts attempts of Recovery this incident.
	RecoveryAttempts int `json:"recovery_attempts,omitempty"`
	// NextAttemptAt is when the held recovery acts next (the countdown).
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// InterruptSentAt is when a stall interrupt was sent for this turn, for
	// the bounded escalation to terminating the process group.
	InterruptSentAt time.Time `json:"interrupt_sent_at,omitzero"`
	// EscalatedGeneration is the turn generation last escalated, so one
	// incident escalates (and notifies) once.
	EscalatedGeneration int64 `json:"escalated_generation,omitempty"`
	// IncidentAttempts counts every automatic attempt of the incident —
	// compactions, continues after a rate limit or an overload, resumes
	// after an auth failure — whatever kind of failure caused it, so a turn
	// that alternates failure kinds still runs out of budget. Only a clean
	// end of the incident (a finished turn, an acknowledgement) refills it.
	IncidentAttempts int `json:"incident_attempts,omitempty"`
	// IncidentStarted is when a transient incident (network, 5xx, overload)
	// began: its retry window runs from here.
	IncidentStarted time.Time `json:"incident_started,omitzero"`
	// OfflineSince is when the machine was seen offline during the
	// incident; zero while it is not. Offline time does not spend the window.
	OfflineSince time.Time `json:"offline_since,omitzero"`
	// OfflineFor is the offline time of the incident already over.
	OfflineFor time.Duration `json:"offline_for_ns,omitempty"`
	// SharedEscalated is the SharedWith the session was escalated for, so
	// a shared conversation escalates once, not again after an
	// acknowledgement while it lasts.
	SharedEscalated string `json:"shared_escalated,omitempty"`
	// BudgetKey names the budget the session was stopped for (its measure,
	// and the day for a daily one), so crossing it escalates once, and a
	// new day or a raised budget lets recovery apply again; Budget is the
	// sentence that says so ("daily cost budget $20.00 reached ($20.41)"),
	// shown while it lasts. Both empty while no budget stops it.
	BudgetKey string `json:"budget_key,omitempty"`
	Budget    string `json:"budget,omitempty"`
}

// Permission is a pending permission request the user must approve or deny.
type Permission struct {
	RequestID string `json:"request_id"`
	Tool      string `json:"tool"`
	// Input is what the tool would do, in one short sanitized line (the
	// command, the file), so a notification can ask "Bash: make build —
	// allow?"; empty when the agent does not say.
	Input string `json:"input,omitempty"`
}

// PermissionQuestion is the request as a notification asks it: "Bash:
// make build — allow?", or "Bash — allow?" when the input is unknown.
func PermissionQuestion(p Permission) string {
	q := textsafe.Clean(SanitizeMessage(p.Tool))
	if p.Input != "" {
		q += ": " + p.Input
	}
	return q + " — allow?"
}

// maxToolInput bounds Permission.Input: a glance, not the whole call.
const maxToolInput = 120

// ToolInputSummary is a tool call's input in one short sanitized line: the
// field that says what it does (a command, a file, a URL, a pattern),
// else the input itself as compact JSON; secrets redacted, control
// characters dropped, clipped.
func ToolInputSummary(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var fields map[string]json.RawMessage
	text := ""
	if json.Unmarshal(raw, &fields) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "filePath", "path", "url", "pattern", "query"} {
			var v string
			if json.Unmarshal(fields[k], &v) == nil && strings.TrimSpace(v) != "" {
				text = v
				break
			}
		}
	}
	if text == "" {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) != nil {
			return ""
		}
		text = compact.String()
	}
	text = strings.Join(strings.Fields(textsafe.Clean(SanitizeMessage(text))), " ")
	if r := []rune(text); len(r) > maxToolInput {
		text = string(r[:maxToolInput-1]) + "…"
	}
	return text
}

// Session is one supervised agent session: its identity and its activity
// state with the evidence for it. The JSON form is the documented contract of
// `--json` output and the local API.
type Session struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Agent          string `json:"agent"`
	AgentSessionID string `json:"agent_session_id"`
	Source         Source `json:"source"`
	Cwd            string `json:"cwd"`
	PID            int    `json:"pid"`
	// PIDStart is the agent process's start stamp (procscan.Proc.Stamp) as
	// seen when it started: the orphan reaper signals PID only while the
	// process there still has it, never a later one that reused the pid.
	// Empty where the platform gives none, and in sessions saved before it
	// was kept.
	PIDStart string `json:"pid_start,omitempty"`

	State      State      `json:"state"`
	Evidence   string     `json:"evidence"`
	WaitReason WaitReason `json:"wait_reason"`
	Failure    Failure    `json:"failure"`
	// NeedsAttention is raised by escalation when nothing automatic is left.
	NeedsAttention bool `json:"needs_attention"`

	TurnGeneration int64 `json:"turn_generation"`
	// InTurn is true from a turn's start until its result, abort or the
	// process's exit. It is what boot reconciliation reads.
	InTurn      bool      `json:"in_turn"`
	TurnStarted time.Time `json:"turn_started,omitzero"`
	// LastEventAt is the time of the last genuine stream event: the stall clock.
	LastEventAt       time.Time           `json:"last_event_at,omitzero"`
	OpenTools         map[string]OpenCall `json:"open_tools,omitempty"`
	OpenTasks         map[string]OpenCall `json:"open_tasks,omitempty"`
	CompactionStarted time.Time           `json:"compaction_started,omitzero"`
	// Permissions are the agent's open permission requests, oldest first:
	// each stays until it is answered or the agent withdraws it, and the
	// session waits on the user while any is open.
	Permissions []Permission `json:"permissions,omitempty"`
	// Permission is the oldest open request (Permissions[0]), the one
	// approve/deny answers; nil when none is open. It mirrors Permissions
	// for the `permission` key of the JSON contract and is kept in step by
	// Apply.
	Permission *Permission `json:"permission,omitempty"`
	// TurnAcked: the agent announced the turn in flight (Claude prints
	// system/init at the start of every turn). Until then an idle signal is
	// the previous turn's and cannot end this one.
	TurnAcked bool `json:"turn_acked,omitempty"`
	// PromptQueued: the app wrote a prompt while the turn was in flight. If
	// the turn ended before the agent read it, the agent starts a new turn
	// with it, which the next init outside a turn reveals.
	PromptQueued bool `json:"prompt_queued,omitempty"`
	// ProcessSpoke: the current agent process printed at least one event.
	// A process that exits having printed none failed to launch.
	ProcessSpoke bool `json:"process_spoke,omitempty"`
	// InterruptBy records who asked to interrupt the turn in flight, so an
	// abort that follows can be told apart: a user's stop is never nudged.
	InterruptBy *Actor `json:"interrupt_by,omitempty"`
	// InterruptAt is when that interrupt was asked for: a user's stop the
	// agent ignores is enforced once the interrupt grace has passed since.
	InterruptAt    time.Time   `json:"interrupt_at,omitzero"`
	Nudge          NudgeBudget `json:"nudge"`
	Supervision    Supervision `json:"supervision"`
	ProcessAlive   bool        `json:"process_alive"`
	LastExitCode   *int        `json:"last_exit_code,omitempty"`
	PermissionMode string      `json:"permission_mode,omitempty"`
	// ResumedFrom is the session this managed one was resumed from in the
	// background (a terminal session whose process died mid-turn).
	ResumedFrom string `json:"resumed_from,omitempty"`
	// HandoverAt is when the app stopped this managed session's process
	// to continue it in a terminal ("Continue in terminal"): the first
	// terminal session of its agent found on its agent session id becomes
	// this session (same id, same timeline). Zero when no hand-over waits;
	// cleared once found, or when the app starts its agent again.
	HandoverAt time.Time `json:"handover_at,omitzero"`
	// TerminalKey is, for a session handed over to a terminal, its
	// terminal source's key (sessions.ExternalSession.Key), so the app
	// finds it again under this id after a restart.
	TerminalKey string `json:"terminal_key,omitempty"`
	// SharedWith is another session whose live process runs this one's
	// agent conversation (the same agent session id): a `claude --resume
	// ID` typed in a terminal on a conversation the app manages. Two
	// processes on one conversation interleave their turns, so while it is
	// set nothing resumes or nudges this session. Set by the tick (see
	// core.SharedConversations), empty when no other process runs it.
	SharedWith string `json:"shared_with,omitempty"`
	// RecoveryOff is the user's "stop recovering" switch for this session:
	// while set, the supervisor neither nudges, continues, resumes nor
	// compacts it (as with supervisor.auto_recover_enabled off, for this
	// session only); status reconciliation goes on. Set by the user only.
	RecoveryOff bool `json:"recovery_off,omitempty"`
	// Terminal is where a terminal session's agent lives (its tty, tmux
	// pane, emulator), refreshed by the tick; nil for a managed session or
	// before the first look. A new value replaces it whole, never edited in
	// place, so a Clone may share it.
	Terminal     *termloc.Location `json:"terminal,omitempty"`
	SkippedLines int               `json:"skipped_lines"`
	// Usage is the tokens the agent reported, per model, over the session
	// and in its current turn (see SessionUsage); pricing turns them into
	// the equivalent API cost.
	Usage SessionUsage `json:"usage,omitzero"`
	// Todos is the agent's task list as it last stood (counts only), and
	// TodosSince when that list began: the time-remaining estimate's pace.
	Todos      TodoProgress `json:"todos,omitzero"`
	TodosSince time.Time    `json:"todos_since,omitzero"`
	// TurnTools counts the tool calls of the turn in flight (or the last);
	// PastTurns are the last MaxPastTurns finished turns. Both feed the
	// time-remaining estimate (sessions/eta).
	TurnTools int          `json:"turn_tools,omitempty"`
	PastTurns []TurnRecord `json:"past_turns,omitempty"`
	// RateWindows are the plan usage windows the agent last reported (see
	// RateWindow), by kind.
	RateWindows    []RateWindow `json:"rate_windows,omitempty"`
	StateChangedAt time.Time    `json:"state_changed_at,omitzero"`
	CreatedAt      time.Time    `json:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at"`
	// ArchivedAt is when the session was archived (ended, acknowledged and
	// quiet for sessions.archive_after_days): it leaves the tray and the
	// default list and stays readable (ls --all, timeline). Zero when not
	// archived; anything that happens to it again brings it back.
	ArchivedAt time.Time `json:"archived_at,omitzero"`
}

// Clone returns a deep copy, so a reducer never mutates its input.
func (s Session) Clone() Session {
	c := s
	c.OpenTools = maps.Clone(s.OpenTools)
	c.OpenTasks = maps.Clone(s.OpenTasks)
	c.Permissions = slices.Clone(s.Permissions)
	c.Usage = s.Usage.clone()
	c.PastTurns = slices.Clone(s.PastTurns)
	c.RateWindows = slices.Clone(s.RateWindows)
	if s.Permission != nil {
		p := *s.Permission
		c.Permission = &p
	}
	if s.InterruptBy != nil {
		a := *s.InterruptBy
		c.InterruptBy = &a
	}
	if s.LastExitCode != nil {
		e := *s.LastExitCode
		c.LastExitCode = &e
	}
	return c
}

// DisplayName is the name if set, else a short form of the id.
func (s Session) DisplayName() string {
	if s.Name != "" {
		return s.Name
	}
	return ShortID(s.ID)
}

// ShortID is the first 8 characters of an id, as the lists show it.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// OldestOpenCall returns the longest-running open tool call or background
// task, for evidence ("Bash open").
func (s Session) OldestOpenCall() (OpenCall, bool) {
	var best OpenCall
	found := false
	for _, m := range []map[string]OpenCall{s.OpenTools, s.OpenTasks} {
		for _, c := range m {
			if !found || c.Started.Before(best.Started) {
				best, found = c, true
			}
		}
	}
	return best, found
}

// StoppedByUser reports whether the user asked to stop the turn in flight:
// however that turn then ends (an abort, the process's death, the app's
// restart), it ends as the user's stop and is never nudged.
func (s Session) StoppedByUser() bool { return s.InterruptBy != nil && *s.InterruptBy == ByUser }

// HasOpenWork reports whether a tool call or background task is open, which
// relaxes the stall threshold.
func (s Session) HasOpenWork() bool { return len(s.OpenTools) > 0 || len(s.OpenTasks) > 0 }

// StderrLine is what the app may keep of an agent's stderr: its last
// non-empty line, sanitized (secrets redacted, one short line). Raw stderr is
// never persisted; this line explains a launch failure.
func StderrLine(tail string) string {
	lines := strings.Split(tail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := SanitizeMessage(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// secretPattern is one kind of credential and what replaces it.
type secretPattern struct {
	re   *regexp.Regexp
	repl string
}

// secretPatterns match credentials that must never reach the timeline or a
// notification: API keys and tokens by their known shapes, bearer and
// basic credentials, key=value secrets, a URL's user:password.
var secretPatterns = []secretPattern{
	{regexp.MustCompile(`sk-[A-Za-z0-9_\-]{8,}`), "[redacted]"},
	{regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._\-~+/=]{8,}`), "[redacted]"},
	// Basic credentials are base64 of user:password: a digit, '+', '/' or
	// '=' in it tells it from a word ("a basic explanation").
	{regexp.MustCompile(`\b[Bb]asic\s+[A-Za-z0-9+/]{3,}[0-9+/=][A-Za-z0-9+/=]*`), "[redacted]"},
	// A JWT (OAuth access and ID tokens): three base64url parts.
	{regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`), "[redacted]"},
	// GitHub tokens (classic, OAuth, app, refresh; fine-grained).
	{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), "[redacted]"},
	// Google API keys and OAuth access tokens.
	{regexp.MustCompile(`\b(?:AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-]{10,})`), "[redacted]"},
	// AWS access key ids, and the secret key by its usual names.
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), "[redacted]"},
	{regexp.MustCompile(`(?i)((?:aws_secret_access_key|secret_access_key|aws_session_token)["']?\s*[:=]\s*["']?)[^\s"',}]+`), "${1}[redacted]"},
	{regexp.MustCompile(`(?i)((?:api[_-]?key|token|secret|password|authorization|x-api-key)["']?\s*[:=]\s*["']?)[^\s"',}]+`), "${1}[redacted]"},
	// Credentials in a URL: scheme://user:password@host keeps the scheme
	// and the host.
	{regexp.MustCompile(`(?i)([a-z][a-z0-9+.\-]*://)[^\s/@:]+:[^\s/@]+@`), "${1}[redacted]@"},
}

// maxMessageLen bounds a failure message: one readable sentence, not a dump.
const maxMessageLen = 200

// SanitizeMessage makes provider text safe to store and show: secrets are
// redacted, escape sequences and bidirectional controls are removed, other
// control characters and runs of whitespace collapse to one space,
// and the result is cut to one short line.
func SanitizeMessage(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	// Control characters part words (a NUL or CR between two words must
	// not join them), except those that open or close an escape sequence
	// and the line breaks that end an unterminated one: textsafe removes
	// the sequences whole, then whitespace folds.
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != 0x1b && r != 0x07 && r != '\n' && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = textsafe.Clean(s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxMessageLen {
		s = string(r[:maxMessageLen-1]) + "…"
	}
	return s
}
