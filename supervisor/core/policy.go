package core

import (
	"math"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Policy is everything Reconcile needs to know from the settings, already
// parsed and clamped. It is a plain value so that a settings change applies
// at the next tick simply by passing a new Policy.
type Policy struct {
	// Enabled is the master switch (supervisor.enabled). Off: Reconcile does
	// nothing at all.
	Enabled bool
	// AutoRecover gates every recovery action and the nudge
	// (supervisor.auto_recover_enabled). Status reconciliation — liveness,
	// stalls, the stall interrupt, the compaction timeout — runs regardless.
	AutoRecover bool
	// NudgeEnabled allows the continuation nudge (supervisor.nudge_enabled).
	NudgeEnabled bool
	// ArchiveAfter is how long an ended session stays quiet before Archive
	// archives it (sessions.archive_after_days); 0 never archives. Not
	// gated by Enabled: housekeeping is not supervision.
	ArchiveAfter time.Duration
	// ResumeTerminal lets recovery resume a session the app did not launch
	// whose process is gone mid-turn as a managed session, with the nudge
	// (supervisor.resume_terminal_sessions). Off: such a session is
	// escalated, and the user may resume it.
	ResumeTerminal bool

	// StallSuspect: Working and silent this long → Suspect.
	StallSuspect time.Duration
	// StallToolSuspect replaces StallSuspect while a tool call or background
	// task is open: long-running tools are legitimately silent. It only ever
	// relaxes the threshold (the larger of the two is used).
	StallToolSuspect time.Duration
	// StallHard: Suspect and silent this long (since the last genuine event)
	// → the turn is interrupted.
	StallHard time.Duration
	// NudgeCooldown is the minimum time between two nudges.
	NudgeCooldown time.Duration
	// CompactTimeout bounds a compaction, and every overflow recovery step
	// (context_overflow.compact_timeout_seconds), so the two subsystems
	// cannot disagree about how long a compaction may run.
	CompactTimeout time.Duration
	// NudgeMaxAttempts is the number of nudges per incident.
	NudgeMaxAttempts int
	// InterruptGrace is how long a stall interrupt may go unanswered before
	// the process group gets SIGTERM; SIGKILL follows after a second grace,
	// and escalation after a third.
	InterruptGrace time.Duration
	// LostResultAfter is how long a managed turn whose tools all finished
	// may stay silent before the agent's own record is asked whether the
	// turn ended (a result line the stream lost).
	LostResultAfter time.Duration

	// OverflowMaxAttempts is the number of compact-and-retry rounds per incident.
	OverflowMaxAttempts int
	// RateLimitMaxAttempts is the number of continues after a rate limit per
	// incident.
	RateLimitMaxAttempts int
	// AuthMaxAttempts is the number of resumes after an auth failure per incident.
	AuthMaxAttempts int
	// RateLimitBaseBackoff doubles with every attempt, up to
	// RateLimitMaxBackoff, when the provider gave no reset time.
	RateLimitBaseBackoff time.Duration
	RateLimitMaxBackoff  time.Duration
	// AuthRetryInterval is how long to wait for refreshed credentials
	// between resumes.
	AuthRetryInterval time.Duration
	// TransientWindow bounds one transient incident (network, 5xx,
	// overload): retries with a growing backoff until it is spent, then
	// escalation (see transient.go).
	TransientWindow time.Duration

	// SessionBudget and DailyBudget stop recovery once a session, or every
	// session together today, has spent them (budget.*; zero is off). See
	// OverBudget.
	SessionBudget Budget
	DailyBudget   Budget
}

// BasePolicy holds the policy knobs that are not settings; the runtime's
// PolicyFromSettings fills in the rest from the settings, where every
// setting's default lives (supervisor.DefaultPolicy is the two together).
func BasePolicy() Policy {
	return Policy{
		InterruptGrace:       30 * time.Second,
		LostResultAfter:      time.Minute,
		OverflowMaxAttempts:  2,
		RateLimitMaxAttempts: 5,
		AuthMaxAttempts:      3,
		RateLimitBaseBackoff: time.Minute,
		RateLimitMaxBackoff:  30 * time.Minute,
	}
}

// suspectAfter is the silence after which a Working session is Suspect. An
// open tool call or background task relaxes it; a misconfigured tool
// threshold below the plain one must not make tool calls stricter.
func (p Policy) suspectAfter(s *sessions.Session) time.Duration {
	if s.HasOpenWork() {
		return max(p.StallSuspect, p.StallToolSuspect)
	}
	return p.StallSuspect
}

// incidentMaxAttempts is the one budget of an incident across recovery
// kinds: as many automatic attempts as the most generous kind allows, so a
// single-kind incident is bounded by its own limit first, and one that
// alternates kinds (a rate limit, then an overflow, then a rate limit…)
// still ends in escalation.
func (p Policy) incidentMaxAttempts() int {
	return max(p.OverflowMaxAttempts, p.RateLimitMaxAttempts, p.AuthMaxAttempts)
}

// rateLimitDelay is the backoff before the continue that follows `attempts`
// earlier ones: base·2^attempts, capped at RateLimitMaxBackoff (no cap when
// that is not positive). Bounded loop and overflow guard: attempts comes from
// persisted data and must never make this spin or wrap negative.
func (p Policy) rateLimitDelay(attempts int) time.Duration {
	d := p.RateLimitBaseBackoff
	if d <= 0 {
		return 0
	}
	capped := p.RateLimitMaxBackoff > 0
	for i := 0; i < attempts; i++ {
		if capped && d >= p.RateLimitMaxBackoff || d > math.MaxInt64/2 {
			break
		}
		d *= 2
	}
	if capped && d > p.RateLimitMaxBackoff {
		d = p.RateLimitMaxBackoff
	}
	return d
}

// Probe is the result of probing a session's agent process this tick.
type Probe struct {
	// Known is false when liveness could not be probed (no pid, an observed
	// session on another user's process, a failed syscall): Reconcile then
	// does not act on liveness at all.
	Known bool
	Alive bool
	// Unreachable: a live session the app did not launch whose source
	// offers no way in (Codex in a terminal, Claude Code older than 2.1.224:
	// no inbox). What recovery would send it (a nudge, a continue, the stall
	// interrupt) escalates at once instead, with the evidence.
	Unreachable bool
	// Offline is true only when the machine can tell it has no network
	// (ProbeConnectivity said ConnOffline): a transient incident is then
	// held without spending retries or its window. Unknown counts as online.
	Offline bool
	// Stderr is the live agent process's last stderr line, sanitized
	// (sessions.StderrLine): why a launch that prints nothing hangs.
	Stderr string
	// TurnEndedAt is when the agent's own record of the session (Claude's
	// transcript) says its last turn ended; zero when nothing was read or
	// the record says the turn goes on. It is read only for a turn
	// LostResultSuspected says may have lost its end.
	TurnEndedAt time.Time
	// Spent is what counts against the budgets (Policy.SessionBudget and
	// DailyBudget), summed by the runtime for this tick; zero while no
	// budget is set.
	Spent Spent
}

// The values of sessions.Supervision.Recovery: what the supervisor is doing
// about the current incident. They are persisted, so they are part of the
// storage contract and must not be renamed.
const (
	// RecoveryOverflow: a compaction was sent after a context overflow; the
	// session is waiting for it to start or finish.
	RecoveryOverflow = "overflow"
	// RecoveryOverflowRetry: the compaction finished and the turn was
	// retried; RecoveryAttempts still counts the compactions of the incident.
	RecoveryOverflowRetry = "overflow_retry"
	// RecoveryRateLimit: holding until a rate-limit reset (or backoff), then
	// continuing the session.
	RecoveryRateLimit = "rate_limit"
	// RecoveryAuth: waiting for refreshed credentials, then resuming.
	RecoveryAuth = "auth"
	// RecoveryStall: the stall interrupt chain; RecoveryAttempts is the step
	// reached (1 interrupt, 2 SIGTERM, 3 SIGKILL, 4 escalated) so no step is
	// ever sent twice.
	RecoveryStall = "stall"
	// RecoveryUserStop: the user's interrupt went unanswered past the
	// interrupt grace and is being enforced; RecoveryAttempts is the step
	// reached, as for the stall chain (2 SIGTERM, 3 SIGKILL, 4 escalated).
	RecoveryUserStop = "user_stop"
)

// Steps of the stall chain, stored in Supervision.RecoveryAttempts while
// Recovery == RecoveryStall.
const (
	stallInterrupted = 1 + iota
	stallTerminated
	stallKilled
	stallEscalated
)
