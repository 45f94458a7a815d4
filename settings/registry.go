// Package settings is the app's settings registry: every setting's
// definition (kind, default, range, description), the validation and
// clamping of a value, the cross-key rules, the typed snapshot the app reads,
// and the in-memory service the running app changes them through. The
// registry is a value (NewRegistry) built by the composition root from the
// agents it knows; nothing here is global, and the rows themselves are kept by
// whoever implements Rows (storage.Store).
package settings

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/session-supervisor/session-supervisor/enum"
)

// Sentinel errors of the settings API.
var (
	ErrUnknown = errors.New("unknown setting")
	ErrInvalid = errors.New("invalid setting value")
)

// Kind is a setting's value type.
type Kind int

// The kinds. Minutes are a float so thresholds can be set below a minute
// (0.1 = 6 s), which tests and impatient users both want.
const (
	KindBool Kind = iota + 1
	KindInt
	KindMinutes
	KindString
)

// MarshalText makes a Kind readable in the local API's JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText is the inverse of MarshalText, so a client can decode a
// Def it received.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range []Kind{KindBool, KindInt, KindMinutes, KindString} {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("unknown setting kind %q", b)
}

var kindNames = [...]string{
	KindBool:    "bool",
	KindInt:     "int",
	KindMinutes: "minutes",
	KindString:  "string",
}

func (k Kind) String() string { return enum.Name(k, "kind", kindNames[:]) }

// Policy says what happens to a number outside a setting's range.
type Policy int

// The policies.
const (
	// Clamp moves the value to the nearest bound and reports it
	// (SetResult.Clamped): asking for a 1-second tick gets the fastest safe
	// tick rather than an error.
	Clamp Policy = iota
	// Reject refuses the value.
	Reject
)

// MarshalText makes a Policy readable in the local API's JSON.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (p *Policy) UnmarshalText(b []byte) error {
	switch string(b) {
	case "clamp":
		*p = Clamp
	case "reject":
		*p = Reject
	default:
		return fmt.Errorf("unknown setting policy %q", b)
	}
	return nil
}

func (p Policy) String() string {
	if p == Reject {
		return "reject"
	}
	return "clamp"
}

// Def describes one setting: what the CLI and the UI show and what
// SetSetting enforces. Numbers outside [Min, Max] are handled by Policy;
// values that do not parse are always rejected. Min and Max are meaningless
// for bool and string settings.
type Def struct {
	Key         string `json:"key"`
	Description string `json:"description"`
	Kind        Kind   `json:"kind"`
	// Unit names what an int counts ("seconds", "days", "attempts"); minutes
	// settings are in minutes.
	Unit    string  `json:"unit,omitempty"`
	Default string  `json:"default"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Policy  Policy  `json:"policy"`
	// Optional: a string setting that may be empty, which turns what it
	// configures off (no ntfy topic: no ntfy).
	Optional bool `json:"optional,omitempty"`
	// Format is the rule a non-empty string follows beyond being one line
	// (CheckFormat); Choices are FormatChoice's values. Data, not code, so
	// a client (the window) checks as the store does.
	Format  Format   `json:"format,omitempty"`
	Choices []string `json:"choices,omitempty"`
	// Secret: a token, a signing secret or a URL that is itself a
	// credential. Its value is stored like every other (in the data
	// directory, owner-only) but never shown: lists, reads and results
	// say only whether it is set (Masked).
	Secret bool `json:"secret,omitempty"`
}

// Masked is what a secret setting that is set shows instead of its value.
const Masked = "•••••• (set)"

// Settings is the typed snapshot of every setting, what the supervisor and
// the rest of the app read.
type Settings struct {
	Enabled          bool
	Tick             time.Duration
	StallSuspect     time.Duration
	StallToolSuspect time.Duration
	StallHard        time.Duration
	AutoRecover      bool
	NudgeEnabled     bool
	NudgeMaxAttempts int
	NudgeCooldown    time.Duration
	// ResumeTerminal is supervisor.resume_terminal_sessions.
	ResumeTerminal bool
	AuthRetry      time.Duration
	// TransientWindow is how long one transient incident (a network
	// failure, a 5xx, an overload) is retried before it is escalated.
	TransientWindow  time.Duration
	SnapshotInterval time.Duration
	// CompactTimeout bounds a compaction; the stuck-compaction and
	// stale-overflow checks both use it so they cannot disagree.
	CompactTimeout time.Duration
	RetentionDays  int
	// ArchiveAfterDays is sessions.archive_after_days: an ended session
	// (process gone, nothing pending, acknowledged) this many days quiet is
	// archived; 0 never archives.
	ArchiveAfterDays    int
	NotifyWaitingOnUser bool
	// AgentCommands maps an agent's name to its agents.NAME.command, for
	// every agent the registry was built with. Read it through
	// AgentCommand; a snapshot's map is never modified once built, so
	// snapshots can be shared between goroutines.
	AgentCommands map[string]string
	// SSHCommand is machines.ssh_command.
	SSHCommand string
	// Terminal is desktop.terminal: the emulator a hand-over opens when no
	// tmux server runs ("" finds the desktop's).
	Terminal string
	// Push is the notify.* settings of the channels beyond the desktop
	// and of the escalation's tiers.
	Push Push
	// Budgets are the budget.* settings.
	Budgets Budgets
}

// Budgets are the limits past which a session is no longer recovered
// (budget.*): one session's and every session's today. Zero in a measure
// turns it off, which is every default.
type Budgets struct {
	// SessionCost and DailyCost are equivalent API cost in micro-dollars
	// (ParseDollars).
	SessionCost, DailyCost int64
	// SessionTokens and DailyTokens count every token of every class.
	SessionTokens, DailyTokens int64
	// SessionRecoveries and DailyRecoveries count automatic recoveries
	// (nudges, continues, resumes, compactions and retries) in a day.
	SessionRecoveries, DailyRecoveries int
}

// Push is what the push channels and the escalation's tiers read.
type Push struct {
	// After is notify.push_after_minutes: how long an incident stays
	// unacknowledged before it is pushed while a desktop is there.
	After time.Duration
	// WaitingOnUser is notify.push_waiting_on_user.
	WaitingOnUser bool
	Quiet         QuietHours
	// NtfyServer, NtfyTopic and NtfyToken configure ntfy; no topic, no
	// ntfy.
	NtfyServer, NtfyTopic, NtfyToken string
	// WebhookURL, WebhookFormat and WebhookSecret configure the webhook;
	// no URL, no webhook.
	WebhookURL, WebhookFormat, WebhookSecret string
	// ClickURL is what a push opens when tapped ("" for nothing).
	ClickURL string
}

// AgentCommand is the command that starts the named agent: the setting
// agents.NAME.command, or "" for an agent the registry does not know.
func (s Settings) AgentCommand(name string) string { return s.AgentCommands[name] }

// parsed is a parsed setting value; the field matching the kind is set.
type parsed struct {
	b bool
	i int64
	f float64
	s string
}

func (v parsed) seconds() time.Duration { return time.Duration(v.i) * time.Second }

// minutes converts fractional minutes, rounded to the nanosecond: 0.1 is
// exactly 6 s, not 5.999999999 s.
func (v parsed) minutes() time.Duration { return time.Duration(math.Round(v.f * float64(time.Minute))) }

// setting is a definition plus where its value goes in Settings.
type setting struct {
	Def
	apply func(*Settings, parsed)
}

// minMinutes is the smallest accepted minutes value (0.6 s): small enough
// for tests driving a fake agent, and keeps "0" (which a user may type
// meaning "off") from becoming a threshold that fires on every tick.
const minMinutes = 0.01

// coreSettings is every setting but the agents', in the order the spec's
// table lists them; NewRegistry appends one command setting per agent.
var coreSettings = []setting{
	{Def{Key: "supervisor.enabled", Kind: KindBool, Default: "true",
		Description: "Master switch for the supervisor loop."},
		func(s *Settings, v parsed) { s.Enabled = v.b }},
	{Def{Key: "supervisor.tick_seconds", Kind: KindInt, Unit: "seconds", Default: "15", Min: 5, Max: 60,
		Description: "Watchdog tick interval (clamped 5–60)."},
		func(s *Settings, v parsed) { s.Tick = v.seconds() }},
	{Def{Key: "supervisor.stall_suspect_minutes", Kind: KindMinutes, Default: "10", Min: minMinutes, Max: 24 * 60,
		Description: "Working + silent stream for this long → Suspect."},
		func(s *Settings, v parsed) { s.StallSuspect = v.minutes() }},
	{Def{Key: "supervisor.stall_tool_suspect_minutes", Kind: KindMinutes, Default: "30", Min: minMinutes, Max: 24 * 60,
		Description: "Suspect threshold while a tool call or background task is open."},
		func(s *Settings, v parsed) { s.StallToolSuspect = v.minutes() }},
	// Up to a week: turns legitimately run for hours, and the hard stall
	// interrupts work, so a user must be able to set it very high.
	{Def{Key: "supervisor.stall_hard_minutes", Kind: KindMinutes, Default: "150", Min: minMinutes, Max: 7 * 24 * 60,
		Description: "Suspect + still silent this long → interrupt the turn."},
		func(s *Settings, v parsed) { s.StallHard = v.minutes() }},
	{Def{Key: "supervisor.auto_recover_enabled", Kind: KindBool, Default: "true",
		Description: "Gates recovery actions and the nudge. Status reconciliation stays on regardless."},
		func(s *Settings, v parsed) { s.AutoRecover = v.b }},
	{Def{Key: "supervisor.nudge_enabled", Kind: KindBool, Default: "true",
		Description: "Allow the continuation nudge."},
		func(s *Settings, v parsed) { s.NudgeEnabled = v.b }},
	// 0 is allowed: escalate at once without nudging. 10 caps how long a
	// session that dies on every turn can be re-driven unattended.
	{Def{Key: "supervisor.nudge_max_attempts", Kind: KindInt, Unit: "attempts", Default: "2", Min: 0, Max: 10,
		Description: "Nudges per incident before escalating."},
		func(s *Settings, v parsed) { s.NudgeMaxAttempts = int(v.i) }},
	// 0 is legitimate: "no cooldown" nudges again at the next tick after an
	// interrupted resume. Nudges stay bounded by nudge_max_attempts and by
	// the tick, and a nudge puts the session back to Working, so 0 cannot
	// send two nudges for one interruption.
	{Def{Key: "supervisor.nudge_cooldown_minutes", Kind: KindMinutes, Default: "10", Min: 0, Max: 24 * 60,
		Description: "Minimum minutes between nudges (0: nudge again at the next tick)."},
		func(s *Settings, v parsed) { s.NudgeCooldown = v.minutes() }},
	// Off by default: resuming starts a process (and spends tokens) on the
	// user's behalf for a session they started themselves; with it off the
	// session is escalated and "Resume in the background" is offered.
	{Def{Key: "supervisor.resume_terminal_sessions", Kind: KindBool, Default: "false",
		Description: "When a session started in a terminal dies mid-turn (its process killed or crashed), resume it in the background as a managed session with the continuation nudge, within the nudge's attempts and cooldown."},
		func(s *Settings, v parsed) { s.ResumeTerminal = v.b }},
	// Five minutes leaves time to log in again (the user runs /login or
	// refreshes a key) without hammering the provider; each attempt resumes
	// the session, which costs a request.
	{Def{Key: "supervisor.auth_retry_minutes", Kind: KindMinutes, Default: "5", Min: minMinutes, Max: 24 * 60,
		Description: "After an authentication failure, minutes between attempts to resume with refreshed credentials."},
		func(s *Settings, v parsed) { s.AuthRetry = v.minutes() }},
	// An outage of a long lunch is survived by default; up to a day for a
	// machine that is routinely offline for hours. Retries grow from 30 s to
	// every 15 min (no wait longer than a sixth of the window, so a short
	// window still gets several tries); time known offline does not count.
	{Def{Key: "supervisor.transient_window_minutes", Kind: KindMinutes, Default: "90", Min: minMinutes, Max: 24 * 60,
		Description: "After a network failure, server error or overload that outlasted the agent's own retries, minutes the supervisor keeps retrying before escalating (a success refills it; time offline does not count)."},
		func(s *Settings, v parsed) { s.TransientWindow = v.minutes() }},
	// Not below the fastest tick: a snapshot more often than the watchdog
	// can change anything is wasted work for every subscriber.
	{Def{Key: "supervisor.snapshot_interval_seconds", Kind: KindInt, Unit: "seconds", Default: "60", Min: 5, Max: 3600,
		Description: "Cadence of the authoritative activity snapshot re-emit."},
		func(s *Settings, v parsed) { s.SnapshotInterval = v.seconds() }},
	// A compaction of a large context was measured at ~44 s; 600 s gives
	// more than 10x headroom so a slow provider never has a healthy
	// compaction failed, while a truly stuck one is failed by the watchdog
	// within minutes instead of latching the session busy. Below 60 s would
	// fail real compactions.
	{Def{Key: "context_overflow.compact_timeout_seconds", Kind: KindInt, Unit: "seconds", Default: "600", Min: 60, Max: 7200,
		Description: "How long a compaction may run before it is failed; also the stuck-compaction and stale-overflow threshold."},
		func(s *Settings, v parsed) { s.CompactTimeout = v.seconds() }},
	// At least 30 days: the timeline is the audit of what happened while
	// nobody watched, and a shorter window could prune an incident before
	// anyone reads it.
	{Def{Key: "timeline.retention_days", Kind: KindInt, Unit: "days", Default: "30", Min: 30, Max: 3650,
		Description: "Days of supervisor timeline to keep (at least 30); older events are pruned."},
		func(s *Settings, v parsed) { s.RetentionDays = int(v.i) }},
	// A week: long enough that a session finished on Friday is still in the
	// tray on Monday, short enough that terminal sessions found over months
	// do not pile up in it.
	{Def{Key: "sessions.archive_after_days", Kind: KindInt, Unit: "days", Default: "7", Min: 0, Max: 3650,
		Description: "Archive a session that ended (process gone, nothing pending, acknowledged) after this many quiet days: it leaves the tray and the default list and stays readable with ls --all and timeline. 0 never archives."},
		func(s *Settings, v parsed) { s.ArchiveAfterDays = int(v.i) }},
	{Def{Key: "notify.waiting_on_user", Kind: KindBool, Default: "true",
		Description: "Notify when a session starts waiting on you for an answer: a question, a plan to approve, a permission request. A finished turn does not notify."},
		func(s *Settings, v parsed) { s.NotifyWaitingOnUser = v.b }},
	// Five minutes: long enough for someone at the desk to see the
	// desktop notification and act, short enough that an unattended
	// session does not idle for long. 0 pushes at once.
	{Def{Key: "notify.push_after_minutes", Kind: KindMinutes, Default: "5", Min: 0, Max: 24 * 60,
		Description: "Minutes a session needing you stays unacknowledged before the push channels (ntfy, webhook) are told; 0 tells them at once. With no desktop running they are told at once."},
		func(s *Settings, v parsed) { s.Push.After = v.minutes() }},
	// Off: a finished turn is routine, and pushing every one is the storm
	// users complain about; an escalation is always pushed.
	{Def{Key: "notify.push_waiting_on_user", Kind: KindBool, Default: "false",
		Description: "Also push sessions waiting on you (a question, a plan, a permission request, a finished turn), not only those that need you because nothing automatic is left."},
		func(s *Settings, v parsed) { s.Push.WaitingOnUser = v.b }},
	{Def{Key: "notify.quiet_hours", Kind: KindString, Format: FormatQuietHours, Optional: true, Default: "",
		Description: "Local time span (HH:MM-HH:MM, such as 22:00-07:00) during which pushes are held; one summary goes out when it ends. The desktop is notified as usual. Empty: no quiet hours."},
		func(s *Settings, v parsed) { s.Push.Quiet, _ = ParseQuietHours(v.s) }},
	{Def{Key: "notify.ntfy.server", Kind: KindString, Format: FormatURL, Default: "https://ntfy.sh",
		Description: "The ntfy server pushes go through: the public one or your own."},
		func(s *Settings, v parsed) { s.Push.NtfyServer = v.s }},
	// Secret: on a public server the topic is the password.
	{Def{Key: "notify.ntfy.topic", Kind: KindString, Format: FormatNtfyTopic, Optional: true, Secret: true, Default: "",
		Description: "The ntfy topic to publish to (letters, digits, - and _; on a public server pick one nobody guesses: it is the password). Empty: no ntfy."},
		func(s *Settings, v parsed) { s.Push.NtfyTopic = v.s }},
	{Def{Key: "notify.ntfy.token", Kind: KindString, Optional: true, Secret: true, Default: "",
		Description: "The ntfy access token, when the server requires one (tk_…)."},
		func(s *Settings, v parsed) { s.Push.NtfyToken = v.s }},
	// Secret: a Slack or Discord incoming-webhook URL is a credential.
	{Def{Key: "notify.webhook.url", Kind: KindString, Format: FormatWebhookURL, Optional: true, Secret: true, Default: "",
		Description: "The URL pushes are POSTed to (https; a Slack or Discord incoming webhook, or your own receiver). Empty: no webhook."},
		func(s *Settings, v parsed) { s.Push.WebhookURL = v.s }},
	{Def{Key: "notify.webhook.format", Kind: KindString, Format: FormatChoice, Choices: WebhookFormats, Default: "generic",
		Description: "The webhook's body: generic (the documented JSON), slack or discord."},
		func(s *Settings, v parsed) { s.Push.WebhookFormat = v.s }},
	{Def{Key: "notify.webhook.secret", Kind: KindString, Optional: true, Secret: true, Default: "",
		Description: "A secret the webhook's body is signed with (HMAC-SHA256 in X-Session-Supervisor-Signature). Empty: unsigned."},
		func(s *Settings, v parsed) { s.Push.WebhookSecret = v.s }},
	{Def{Key: "notify.click_url", Kind: KindString, Format: FormatURL, Optional: true, Default: "",
		Description: "A link a push opens when tapped (http or https), such as your remote desktop's address. Empty: none. Pushes never carry a way to approve anything."},
		func(s *Settings, v parsed) { s.Push.ClickURL = v.s }},
	// The ssh program and its options, not a host list: which machines to
	// reach is `machines add`, and ssh's own configuration says how.
	{Def{Key: "machines.ssh_command", Kind: KindString, Default: "ssh",
		Description: "The ssh program, with any extra options, that reaches other machines' supervisors (`ssh -F ~/.ssh/other_config`, a wrapper)."},
		func(s *Settings, v parsed) { s.SSHCommand = v.s }},
	// The emulator "Continue in terminal" opens when no tmux server runs.
	{Def{Key: "desktop.terminal", Kind: KindString, Format: FormatCommand, Optional: true, Default: "",
		Description: "The terminal emulator \"Continue in terminal\" opens when no tmux server runs (\"kitty\", \"/usr/bin/konsole\"). Empty: the desktop's ($TERMINAL, x-terminal-emulator, then a common one on PATH)."},
		func(s *Settings, v parsed) { s.Terminal = v.s }},
	// Budgets: off by default (empty, 0). A runaway session (a loop of
	// restarts, a 16-hour turn) is what they bound; the nudge cap bounds
	// one incident whatever they say.
	{Def{Key: "budget.session_cost_dollars", Kind: KindString, Format: FormatDollars, Optional: true, Default: "",
		Description: "Stop recovering a session once its tokens' equivalent API cost (list prices, not a charge) reaches this many dollars over its life, and tell you once. Empty: no limit."},
		func(s *Settings, v parsed) { s.Budgets.SessionCost, _ = ParseDollars(v.s) }},
	{Def{Key: "budget.session_tokens", Kind: KindInt, Unit: "tokens", Default: "0", Min: 0, Max: 1e12,
		Description: "Stop recovering a session once it has used this many tokens (every class) over its life, and tell you once. 0: no limit."},
		func(s *Settings, v parsed) { s.Budgets.SessionTokens = v.i }},
	{Def{Key: "budget.session_recoveries_per_day", Kind: KindInt, Unit: "recoveries", Default: "0", Min: 0, Max: 10000,
		Description: "Automatic recoveries (nudges, continues, resumes, compactions, retries) one session may get in a day; past them it is not recovered until tomorrow, and you are told once. 0: no limit."},
		func(s *Settings, v parsed) { s.Budgets.SessionRecoveries = int(v.i) }},
	{Def{Key: "budget.daily_cost_dollars", Kind: KindString, Format: FormatDollars, Optional: true, Default: "",
		Description: "Stop recovering every session once all sessions' equivalent API cost today (local time; list prices, not a charge) reaches this many dollars. Empty: no limit."},
		func(s *Settings, v parsed) { s.Budgets.DailyCost, _ = ParseDollars(v.s) }},
	{Def{Key: "budget.daily_tokens", Kind: KindInt, Unit: "tokens", Default: "0", Min: 0, Max: 1e12,
		Description: "Stop recovering every session once all sessions together have used this many tokens today. 0: no limit."},
		func(s *Settings, v parsed) { s.Budgets.DailyTokens = v.i }},
	{Def{Key: "budget.daily_recoveries", Kind: KindInt, Unit: "recoveries", Default: "0", Min: 0, Max: 10000,
		Description: "Automatic recoveries all sessions together may get in a day; past them none is recovered until tomorrow. 0: no limit."},
		func(s *Settings, v parsed) { s.Budgets.DailyRecoveries = int(v.i) }},
}

// maxDollars bounds a cost budget: far above any real day, far below
// what micro-dollars in an int64 can hold.
const maxDollars = 1_000_000

// ParseDollars reads an amount of dollars ("20", "20.5", "$0.75") into
// micro-dollars, exactly: at most two decimals, not negative, at most a
// million.
func ParseDollars(s string) (int64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	whole, frac, hasFrac := strings.Cut(t, ".")
	if whole == "" || strings.ContainsAny(whole, "+-") || hasFrac && (frac == "" || len(frac) > 2 || strings.ContainsAny(frac, "+-")) {
		return 0, fmt.Errorf("%q is not an amount of dollars (such as 20 or 12.50)", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is not an amount of dollars (such as 20 or 12.50)", s)
	}
	if err != nil || w > maxDollars {
		return 0, fmt.Errorf("%q is over the most a budget may be, $%d", s, maxDollars)
	}
	var c int64
	if hasFrac {
		if c, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not an amount of dollars (such as 20 or 12.50)", s)
		}
		if len(frac) == 1 {
			c *= 10
		}
	}
	return w*1_000_000 + c*10_000, nil
}

// Agent is what the settings registry needs to know about one agent
// CLI: its name (the NAME of agents.NAME.command), how people call it, and
// the command that starts it when nothing is configured. sessions.Registry
// provides it; storage never imports an adapter.
type Agent struct {
	Name           string
	DisplayName    string
	DefaultCommand string
}

// AgentCommandKey is the setting that holds the command starting agent name.
func AgentCommandKey(name string) string { return "agents." + name + ".command" }

// Registry is every setting the app has: the core settings, then one
// command setting per agent, in display order. It is a value the
// composition root builds once from its agents and hands to what reads or
// changes settings (the service, the CLI, the window); storage does not
// import the adapters or the registry.
type Registry struct {
	all []setting
}

// NewRegistry returns the core settings plus an agents.NAME.command setting
// for each agent, in the order given.
func NewRegistry(agents ...Agent) (*Registry, error) {
	r := &Registry{all: slices.Clone(coreSettings)}
	seen := map[string]bool{}
	for _, a := range agents {
		if a.Name == "" || strings.ContainsAny(a.Name, ". \t\n") || seen[a.Name] {
			return nil, fmt.Errorf("registering agent settings: invalid or duplicate agent name %q", a.Name)
		}
		seen[a.Name] = true
		name := a.Name
		s := setting{Def{Key: AgentCommandKey(name), Kind: KindString, Default: a.DefaultCommand,
			Description: fmt.Sprintf("Command that starts %s: a name on PATH or an absolute path.", a.DisplayName)},
			func(s *Settings, v parsed) { s.AgentCommands[name] = v.s }}
		if _, _, _, err := s.parse(s.Default); err != nil {
			return nil, fmt.Errorf("registering agent %s: bad default command: %w", name, err)
		}
		r.all = append(r.all, s)
	}
	return r, nil
}

// MustRegistry is NewRegistry for a list fixed in the code: a bad agent
// name is a bug.
func MustRegistry(agents ...Agent) *Registry {
	r, err := NewRegistry(agents...)
	if err != nil {
		panic(err)
	}
	return r
}

// Defs returns every setting's definition, in display order. The slice is
// a copy.
func (r *Registry) Defs() []Def {
	out := make([]Def, len(r.all))
	for i, s := range r.all {
		out[i] = s.Def
	}
	return out
}

// Lookup returns key's definition, or an error wrapping ErrUnknown that
// lists the known keys.
func (r *Registry) Lookup(key string) (Def, error) {
	s, err := r.lookup(key)
	return s.Def, err
}

func (r *Registry) lookup(key string) (setting, error) {
	for _, s := range r.all {
		if s.Key == key {
			return s, nil
		}
	}
	keys := make([]string, len(r.all))
	for i, s := range r.all {
		keys[i] = s.Key
	}
	return setting{}, fmt.Errorf("%w %q; known settings: %s", ErrUnknown, key, strings.Join(keys, ", "))
}

// floorRule says a setting's value in force is never below another's: the
// cross-key checks. The value stored is what the user asked for (so the
// order in which two keys are set does not matter); the value in force is
// raised to the floor and a note on the setting says why.
type floorRule struct{ key, floor string }

// floorRules: a hard stall is counted from the same silence as the suspect
// one, so a hard threshold below the suspect threshold would interrupt the
// turn the moment it became Suspect, skipping the warning; and the tool
// threshold only ever relaxes the plain one (the spec: "relaxed while a tool
// call is open"). Both sides of a rule are minutes.
var floorRules = []floorRule{
	{"supervisor.stall_tool_suspect_minutes", "supervisor.stall_suspect_minutes"},
	{"supervisor.stall_hard_minutes", "supervisor.stall_suspect_minutes"},
}

// Allowed describes the values the setting accepts, for help text and
// error messages.
func (d Def) Allowed() string {
	switch d.Kind {
	case KindBool:
		return "true or false"
	case KindInt:
		unit := ""
		if d.Unit != "" {
			unit = " of " + d.Unit
		}
		return fmt.Sprintf("a whole number%s from %s to %s%s", unit, formatNumber(d.Min), formatNumber(d.Max), d.clampHint())
	case KindMinutes:
		return fmt.Sprintf("a number of minutes from %s to %s (fractions allowed: 0.1 = 6 seconds)%s", formatNumber(d.Min), formatNumber(d.Max), d.clampHint())
	case KindString:
		what := map[Format]string{FormatURL: "an http or https URL", FormatWebhookURL: "an https URL (plain http only to this machine)",
			FormatNtfyTopic: "a topic of 1 to 64 letters, digits, - and _", FormatQuietHours: "HH:MM-HH:MM in local time (22:00-07:00)",
			FormatChoice: "one of " + strings.Join(d.Choices, ", "), FormatDollars: "an amount of dollars (20 or 12.50)",
			FormatCommand: "a program (a name on PATH or an absolute path) and its options, run without a shell"}[d.Format]
		if what == "" {
			what = "a non-empty single line of text"
		}
		if d.Optional && d.Format == FormatCommand {
			return what + ", or nothing (\"\") to find one"
		}
		if d.Optional {
			return what + ", or nothing (\"\") to turn it off"
		}
		return what
	}
	return d.Kind.String()
}

// clampHint tells, in Allowed, that numbers outside the range are not an
// error for a clamping setting.
func (d Def) clampHint() string {
	if d.Policy == Clamp {
		return "; numbers outside are clamped"
	}
	return ""
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// parse validates raw against the definition and returns the canonical text
// to store, the parsed value and whether it was clamped into range.
func (d Def) parse(raw string) (string, parsed, bool, error) {
	in := strings.TrimSpace(raw)
	invalid := func(why string) (string, parsed, bool, error) {
		return "", parsed{}, false, fmt.Errorf("%w: %s = %q: %s; want %s", ErrInvalid, d.Key, raw, why, d.Allowed())
	}
	switch d.Kind {
	case KindBool:
		switch strings.ToLower(in) {
		case "true", "yes", "on", "1":
			return "true", parsed{b: true}, false, nil
		case "false", "no", "off", "0":
			return "false", parsed{b: false}, false, nil
		}
		return invalid("not a boolean")

	case KindInt:
		n, err := strconv.ParseInt(in, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			// A whole number too large for int64 is still clearly "too
			// big" (or too small), so it gets the range policy, not a
			// parse error.
			n = math.MaxInt64
			if strings.HasPrefix(in, "-") {
				n = math.MinInt64
			}
		} else if err != nil {
			return invalid("not a whole number")
		}
		lo, hi := int64(d.Min), int64(d.Max)
		clamped := false
		if n < lo || n > hi {
			if d.Policy == Reject {
				return invalid("out of range")
			}
			n, clamped = max(lo, min(hi, n)), true
		}
		return strconv.FormatInt(n, 10), parsed{i: n}, clamped, nil

	case KindMinutes:
		f, err := strconv.ParseFloat(in, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			// ParseFloat accepts "NaN" and "Inf" and returns ±Inf for
			// "1e999"; none of them is a duration.
			return invalid("not a finite number")
		}
		// Out of range, 0 and negatives included, is clamped like every
		// other number (the README's promise): a threshold cannot be
		// switched off, so "0" becomes the smallest threshold, and the
		// result says so.
		clamped := false
		if f < d.Min || f > d.Max {
			if d.Policy == Reject {
				return invalid("out of range")
			}
			f, clamped = max(d.Min, min(d.Max, f)), true
		}
		return formatNumber(f), parsed{f: f}, clamped, nil

	case KindString:
		if in == "" && d.Optional {
			return "", parsed{}, false, nil
		}
		if in == "" {
			return invalid("empty")
		}
		if strings.ContainsFunc(in, unicode.IsControl) {
			return invalid("contains a control character")
		}
		if err := d.CheckFormat(in); err != nil {
			return "", parsed{}, false, fmt.Errorf("%w: %s: %w", ErrInvalid, d.Key, err)
		}
		return in, parsed{s: in}, false, nil
	}
	return invalid("unsupported kind " + d.Kind.String())
}

// mustDefault parses the definition's default. A default that does not
// parse is a bug in the registry above (the tests parse every one).
func (s setting) mustDefault() parsed {
	_, v, _, err := s.parse(s.Default)
	if err != nil {
		panic(fmt.Sprintf("settings: bad default for %s: %v", s.Key, err))
	}
	return v
}

// effective returns the value in force for a setting given what is stored,
// before the cross-key rules. A stored value that no longer parses (edited
// by hand, or written by a build with other rules) falls back to the default
// instead of failing, so a bad row can never stop the supervisor from
// starting; note says so.
func (s setting) effective(stored string, present bool) (text string, v parsed, note string) {
	if !present {
		return s.Default, s.mustDefault(), ""
	}
	text, v, clamped, err := s.parse(stored)
	if err != nil {
		return s.Default, s.mustDefault(), fmt.Sprintf("stored value %q is invalid, using the default: %v", stored, err)
	}
	if clamped {
		return text, v, fmt.Sprintf("stored value %q is out of range, using %s", stored, text)
	}
	return text, v, ""
}

// resolved is the settings in force for one set of stored rows: the typed
// snapshot and every setting's row, notes included.
type resolved struct {
	settings Settings
	values   []Value
}

// resolve computes the settings in force from the stored rows: each value
// parsed (or defaulted), then the cross-key floors applied. It is the one
// place that turns rows into values, so the Service and DB cannot disagree.
func (r *Registry) resolve(stored map[string]string) resolved {
	all := r.all
	vals := make([]parsed, len(all))
	out := resolved{
		settings: Settings{AgentCommands: map[string]string{}},
		values:   make([]Value, len(all)),
	}
	index := make(map[string]int, len(all))
	for i, def := range all {
		index[def.Key] = i
		raw, ok := stored[def.Key]
		text, v, note := def.effective(raw, ok)
		vals[i] = v
		out.values[i] = Value{Key: def.Key, Value: text, Default: def.Default, Description: def.Description, Note: note}
	}
	for _, rule := range floorRules {
		k, f := index[rule.key], index[rule.floor]
		if vals[k].f >= vals[f].f {
			continue
		}
		asked := out.values[k].Value
		vals[k] = vals[f]
		out.values[k].Value = out.values[f].Value
		out.values[k].Note = fmt.Sprintf("%s is below %s (%s), so %s is in force until one of them changes",
			asked, rule.floor, out.values[f].Value, out.values[f].Value)
	}
	for i, def := range all {
		def.apply(&out.settings, vals[i])
		out.values[i].IsDefault = out.values[i].Value == def.Default
		out.values[i].Value = def.show(out.values[i].Value)
	}
	return out
}

// show is a value as it may be shown: a secret's only as set or not.
func (d Def) show(text string) string {
	if d.Secret && text != "" {
		return Masked
	}
	return text
}

// Defaults is the snapshot of an unconfigured install.
func (r *Registry) Defaults() Settings { return r.resolve(nil).settings }

// Defaults is the snapshot of an unconfigured install with no agent: every
// default of the core settings lives in the table above, and
// supervisor.DefaultPolicy derives from this.
func Defaults() Settings { return (&Registry{all: coreSettings}).Defaults() }

// SetResult reports what SetSetting stored.
type SetResult struct {
	Key string `json:"key"`
	// Value is the canonical value stored: clamped, trimmed, normalized
	// ("yes" → "true", "0.50" → "0.5").
	Value string `json:"value"`
	// Clamped is true when Requested was out of range and Value is the
	// nearest bound.
	Clamped   bool   `json:"clamped"`
	Requested string `json:"requested"`
	// InForce is the value the supervisor uses, which differs from Value
	// only when a cross-key rule raised it (a hard stall threshold below
	// the suspect one); Note then says why. Empty from DB.SetSetting,
	// which does not resolve.
	InForce string `json:"in_force,omitempty"`
	// Note explains, in a sentence for people, a clamp or a cross-key
	// adjustment; empty when the value was taken as given.
	Note string `json:"note,omitempty"`
}

// prepareSet validates and canonicalises one change without storing it.
func (r *Registry) prepareSet(key, raw string) (SetResult, error) {
	def, err := r.lookup(key)
	if err != nil {
		return SetResult{}, err
	}
	text, _, clamped, err := def.parse(raw)
	if err != nil {
		return SetResult{}, err
	}
	res := SetResult{Key: key, Value: text, Clamped: clamped, Requested: raw}
	if clamped {
		res.Note = clampNote(def.Def, raw, text)
	}
	return res, nil
}

// shown is a result as it may be shown: a secret's values only as set or
// not. The stored value is the one prepareSet returned, never this.
func (r *Registry) shown(res SetResult) SetResult {
	if def, err := r.lookup(res.Key); err == nil && def.Secret {
		res.Value, res.Requested = def.show(res.Value), def.show(res.Requested)
	}
	return res
}

// clampNote words a clamp for people.
func clampNote(def Def, requested, stored string) string {
	return fmt.Sprintf("%s is outside %s–%s, so %s (the nearest allowed value) was saved",
		strings.TrimSpace(requested), formatNumber(def.Min), formatNumber(def.Max), stored)
}

// Value is one row of ListSettings.
type Value struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Default     string `json:"default"`
	Description string `json:"description"`
	// IsDefault is true when Value equals the default, whether or not a
	// value is stored.
	IsDefault bool `json:"is_default"`
	// Note explains a stored value that was ignored, clamped or raised by
	// a cross-key rule; empty normally.
	Note string `json:"note,omitempty"`
}

// QuietHours is a daily span of local time during which pushes are held.
// The zero value is none.
type QuietHours struct {
	set        bool
	start, end int // minutes after midnight; end < start spans midnight
}

// ParseQuietHours reads "HH:MM-HH:MM" (local time; "22:00-07:00" spans
// midnight); "" is none.
func ParseQuietHours(s string) (QuietHours, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return QuietHours{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return QuietHours{}, fmt.Errorf("quiet hours %q: want HH:MM-HH:MM, such as 22:00-07:00", s)
	}
	start, err := clockMinutes(a)
	if err != nil {
		return QuietHours{}, fmt.Errorf("quiet hours %q: start: %w", s, err)
	}
	end, err := clockMinutes(b)
	if err != nil {
		return QuietHours{}, fmt.Errorf("quiet hours %q: end: %w", s, err)
	}
	if start == end {
		return QuietHours{}, fmt.Errorf("quiet hours %q: start and end are the same time", s)
	}
	return QuietHours{set: true, start: start, end: end}, nil
}

func clockMinutes(s string) (int, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day (HH:MM, 24-hour)", strings.TrimSpace(s))
	}
	return t.Hour()*60 + t.Minute(), nil
}

// String is the form ParseQuietHours reads ("" for none).
func (q QuietHours) String() string {
	if !q.set {
		return ""
	}
	return fmt.Sprintf("%02d:%02d-%02d:%02d", q.start/60, q.start%60, q.end/60, q.end%60)
}

// Contains reports whether t (in its own location) is within the hours.
func (q QuietHours) Contains(t time.Time) bool {
	if !q.set {
		return false
	}
	m := t.Hour()*60 + t.Minute()
	if q.start < q.end {
		return m >= q.start && m < q.end
	}
	return m >= q.start || m < q.end
}

// End is when the quiet hours containing t end (t itself when it is not
// within them).
func (q QuietHours) End(t time.Time) time.Time {
	if !q.Contains(t) {
		return t
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	end := day.Add(time.Duration(q.end) * time.Minute)
	if !end.After(t) {
		end = day.AddDate(0, 0, 1).Add(time.Duration(q.end) * time.Minute)
	}
	return end
}

// checkServerURL accepts an http or https URL with a host.
func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", s)
	}
	return nil
}

// checkWebhookURL accepts https, and plain http only to this machine: a
// push carries what sessions do, which must not cross a network in clear.
// The URL may be a credential, so the error does not repeat it.
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return errors.New("not a URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if h := u.Hostname(); h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
			return nil
		}
		return errors.New("plain http is accepted only to this machine (localhost, 127.0.0.1); use https")
	}
	return errors.New("not an https URL")
}

// ntfyTopic is ntfy's rule for a topic name.
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

func checkNtfyTopic(s string) error {
	if !ntfyTopic.MatchString(s) {
		return errors.New("a topic is 1 to 64 letters, digits, - and _")
	}
	return nil
}

// WebhookFormats are the bodies a webhook can be sent in.
var WebhookFormats = []string{"generic", "slack", "discord"}

// Format is a rule a string setting's text follows.
type Format int

// The formats. FormatAny is the zero value: any single line.
const (
	FormatAny Format = iota
	// FormatURL: an http or https URL with a host.
	FormatURL
	// FormatWebhookURL: https, or plain http to this machine.
	FormatWebhookURL
	// FormatNtfyTopic: ntfy's rule for a topic name.
	FormatNtfyTopic
	// FormatQuietHours: HH:MM-HH:MM.
	FormatQuietHours
	// FormatChoice: one of Def.Choices.
	FormatChoice
	// FormatDollars: an amount of dollars (ParseDollars).
	FormatDollars
	// FormatCommand: a program (a name on PATH or an absolute path) and its
	// options, split on spaces and run without a shell (CheckCommand).
	FormatCommand
)

var formatNames = []string{"", "url", "webhook_url", "ntfy_topic", "quiet_hours", "choice", "dollars", "command"}

func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// MarshalText makes a Format readable in the local API's JSON.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (f *Format) UnmarshalText(b []byte) error {
	if i := slices.Index(formatNames, string(b)); i >= 0 {
		*f = Format(i)
		return nil
	}
	return fmt.Errorf("unknown setting format %q", b)
}

// CheckFormat checks a non-empty text against the definition's Format;
// the store and the window both call it. The error never repeats a
// secret's text.
func (d Def) CheckFormat(text string) error {
	switch d.Format {
	case FormatURL:
		return checkServerURL(text)
	case FormatWebhookURL:
		return checkWebhookURL(text)
	case FormatNtfyTopic:
		return checkNtfyTopic(text)
	case FormatQuietHours:
		_, err := ParseQuietHours(text)
		return err
	case FormatChoice:
		if !slices.Contains(d.Choices, text) {
			return fmt.Errorf("%q is not one of %s", text, strings.Join(d.Choices, ", "))
		}
	case FormatDollars:
		_, err := ParseDollars(text)
		return err
	case FormatCommand:
		return CheckCommand(text)
	}
	return nil
}

// CheckCommand checks a command setting's text: words split on spaces and
// run as they are, without a shell, so quotes, $, ;, | and the like (which
// would not mean what they mean in a shell) are refused, and the program is
// a name on PATH or an absolute path.
func CheckCommand(text string) error {
	if i := strings.IndexAny(text, "'\"\\`$;|&<>(){}*?~"); i >= 0 {
		return fmt.Errorf("%q: the command is split on spaces and run without a shell, so %q means nothing here", text, text[i:i+1])
	}
	prog := strings.Fields(text)[0]
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		return fmt.Errorf("%q: the program is a name on PATH or an absolute path", prog)
	}
	return nil
}
