package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// terminalNow is the instant of the terminal-session cases: noon, UTC.
var terminalNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// terminalPolicy is recovery on with short stall thresholds and a
// one-minute cooldown, so one tick can reach every rule.
func terminalPolicy() Policy {
	p := BasePolicy()
	p.Enabled, p.AutoRecover, p.NudgeEnabled, p.NudgeMaxAttempts = true, true, true, 2
	p.StallSuspect, p.StallHard = time.Minute, 2*time.Minute
	p.NudgeCooldown = time.Minute
	return p
}

// Reconcile's rules for a session the app did not launch: its stall chain
// ends in escalation after the urgent nudge (never SIGTERM or SIGKILL), an
// overflow escalates (no /compact can be typed), and a dead process is
// escalated rather than nudged.
func TestReconcileObservedActions(t *testing.T) {
	now, p := terminalNow, terminalPolicy()
	stalled := func(src sessions.Source) sessions.Session {
		return sessions.Session{ID: "s", Source: src, State: sessions.Suspect, InTurn: true, TurnGeneration: 3, PID: 7,
			ProcessAlive: true, Evidence: "silent", LastEventAt: now.Add(-10 * time.Minute),
			Supervision: sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: stallInterrupted,
				InterruptSentAt: now.Add(-time.Minute), NextAttemptAt: now.Add(-30 * time.Second)}}
	}
	dead := func(st sessions.State, f sessions.FailureKind) sessions.Session {
		return sessions.Session{ID: "s", Source: sessions.Observed, State: st, TurnGeneration: 3, Evidence: "x",
			Failure: sessions.Failure{Kind: f}}
	}
	alive := func(st sessions.State, f sessions.FailureKind) sessions.Session {
		s := dead(st, f)
		s.ProcessAlive = true
		return s
	}
	cases := []struct {
		name     string
		s        sessions.Session
		probe    Probe
		want     []ActionKind
		escalate bool
	}{
		{"managed stall past grace: SIGTERM", stalled(sessions.Managed), Probe{Known: true, Alive: true}, []ActionKind{ActTerminate}, false},
		{"observed stall past grace: escalate, no signal", stalled(sessions.Observed), Probe{Known: true, Alive: true}, []ActionKind{ActEscalate}, true},
		{"observed overflow: escalate", alive(sessions.Errored, sessions.ContextOverflow), Probe{Known: true, Alive: true}, []ActionKind{ActEscalate}, true},
		{"observed interrupted, process gone: escalate", dead(sessions.Interrupted, 0), Probe{Known: true}, []ActionKind{ActEscalate}, true},
		{"observed rate limit, process gone: escalate", dead(sessions.Errored, sessions.RateLimit), Probe{Known: true}, []ActionKind{ActEscalate}, true},
		{"observed interrupted, process alive: nudge", alive(sessions.Interrupted, 0), Probe{Known: true, Alive: true}, []ActionKind{ActNudge}, false},
		{"observed interrupted, no inbox: escalate", alive(sessions.Interrupted, 0), Probe{Known: true, Alive: true, Unreachable: true}, []ActionKind{ActEscalate}, true},
		{"observed rate limit, no inbox: escalate", alive(sessions.Errored, sessions.RateLimit), Probe{Known: true, Alive: true, Unreachable: true}, []ActionKind{ActEscalate}, true},
		{"observed hard stall, no inbox: escalate, no interrupt", func() sessions.Session {
			s := stalled(sessions.Observed)
			s.Supervision = sessions.Supervision{}
			return s
		}(), Probe{Known: true, Alive: true, Unreachable: true}, []ActionKind{ActEscalate}, true},
		{"observed hard stall: the urgent nudge", func() sessions.Session {
			s := stalled(sessions.Observed)
			s.Supervision = sessions.Supervision{}
			return s
		}(), Probe{Known: true, Alive: true}, []ActionKind{ActInterrupt}, false},
		{"managed, unreachable means nothing: nudge", func() sessions.Session {
			s := alive(sessions.Interrupted, 0)
			s.Source = sessions.Managed
			return s
		}(), Probe{Known: true, Alive: true, Unreachable: true}, []ActionKind{ActNudge}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, acts := reconcile(t, tc.s, now, p, tc.probe)
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || n.NeedsAttention != tc.escalate {
				t.Fatalf("actions %v needs attention %v (%s); want %v %v", got, n.NeedsAttention, n.Evidence, tc.want, tc.escalate)
			}
		})
	}
}

// With supervisor.resume_terminal_sessions, a terminal session whose
// process is gone mid-turn is resumed in the background (ActResume) within
// the nudge's budget, cooldown and switches; otherwise, or when it cannot
// be resumed, it is escalated as before. Only Interrupted is resumed: a
// failure the turn died on is the user's to judge.
func TestReconcileResumeTerminal(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := func(pol func(*Policy)) Policy {
		p := BasePolicy()
		p.Enabled, p.AutoRecover, p.NudgeEnabled, p.NudgeMaxAttempts, p.ResumeTerminal = true, true, true, 2, true
		p.NudgeCooldown = 10 * time.Minute
		if pol != nil {
			pol(&p)
		}
		return p
	}
	gone := func(mod func(*sessions.Session)) sessions.Session {
		s := sessions.Session{ID: "s", Agent: "claude", AgentSessionID: "sid-1", Source: sessions.Observed, State: sessions.Interrupted,
			TurnGeneration: 3, PID: 7, Evidence: "process 7 is gone mid-turn"}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	cases := []struct {
		name     string
		s        sessions.Session
		pol      func(*Policy)
		probe    Probe
		want     []ActionKind
		escalate bool
		attempts int
		evidence string
	}{
		{name: "setting on: resume", s: gone(nil), probe: Probe{Known: true}, want: []ActionKind{ActResume}, attempts: 1,
			evidence: "process 7 is gone mid-turn — resume 1/2 in the background at 12:00:00; next resume not before 12:10:00"},
		{name: "setting off: escalate", s: gone(nil), pol: func(p *Policy) { p.ResumeTerminal = false }, probe: Probe{Known: true},
			want: []ActionKind{ActEscalate}, escalate: true},
		{name: "codex too: the rule names no agent", s: gone(func(s *sessions.Session) { s.Agent, s.AgentSessionID = "codex", "thread-9" }),
			probe: Probe{Known: true}, want: []ActionKind{ActResume}, attempts: 1},
		{name: "no agent session id: escalate", s: gone(func(s *sessions.Session) { s.AgentSessionID = "" }), probe: Probe{Known: true},
			want: []ActionKind{ActEscalate}, escalate: true},
		{name: "auto-recovery off: escalate", s: gone(nil), pol: func(p *Policy) { p.AutoRecover = false }, probe: Probe{Known: true},
			want: []ActionKind{ActEscalate}, escalate: true},
		{name: "nudge off: escalate", s: gone(nil), pol: func(p *Policy) { p.NudgeEnabled = false }, probe: Probe{Known: true},
			want: []ActionKind{ActEscalate}, escalate: true},
		{name: "zero budget: escalate", s: gone(nil), pol: func(p *Policy) { p.NudgeMaxAttempts = 0 }, probe: Probe{Known: true},
			want: []ActionKind{ActEscalate}, escalate: true},
		{name: "cooling down after a failed resume: wait", s: gone(func(s *sessions.Session) {
			s.Nudge = sessions.NudgeBudget{Attempts: 1, LastNudge: now.Add(-time.Minute)}
		}), probe: Probe{Known: true}, attempts: 1},
		{name: "cooled: second resume", s: gone(func(s *sessions.Session) {
			s.Nudge = sessions.NudgeBudget{Attempts: 1, LastNudge: now.Add(-10 * time.Minute)}
		}), probe: Probe{Known: true}, want: []ActionKind{ActResume}, attempts: 2},
		{name: "budget spent: escalate", s: gone(func(s *sessions.Session) {
			s.Nudge = sessions.NudgeBudget{Attempts: 2, LastNudge: now.Add(-10 * time.Minute)}
		}), probe: Probe{Known: true}, want: []ActionKind{ActEscalate}, escalate: true, attempts: 2},
		{name: "already escalated: nothing", s: gone(func(s *sessions.Session) {
			s.NeedsAttention, s.Supervision.EscalatedGeneration = true, 3
		}), probe: Probe{Known: true}, escalate: true},
		{name: "errored, process gone: escalate", s: gone(func(s *sessions.Session) {
			s.State, s.Failure = sessions.Errored, sessions.Failure{Kind: sessions.RateLimit}
		}), probe: Probe{Known: true}, want: []ActionKind{ActEscalate}, escalate: true},
		{name: "process alive: the inbox nudge, not a resume", s: gone(func(s *sessions.Session) { s.ProcessAlive = true }),
			probe: Probe{Known: true, Alive: true}, want: []ActionKind{ActNudge}, attempts: 1},
		{name: "managed: the ordinary nudge", s: gone(func(s *sessions.Session) { s.Source = sessions.Managed }),
			probe: Probe{Known: true}, want: []ActionKind{ActNudge}, attempts: 1},
		{name: "a turn in flight dies now: interrupted and resumed in one tick", s: gone(func(s *sessions.Session) {
			s.State, s.InTurn, s.ProcessAlive = sessions.Working, true, true
		}), probe: Probe{Known: true}, want: []ActionKind{ActResume}, attempts: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, acts := reconcile(t, tc.s, now, base(tc.pol), tc.probe)
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
				if a.Kind == ActResume && (a.TimelineKind != TimelineBackgroundResume || !strings.Contains(a.Detail, n.AgentSessionID) ||
					a.TurnGeneration != 3 || Stale(a, n)) {
					t.Errorf("resume action %+v", a)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || n.NeedsAttention != tc.escalate || n.Nudge.Attempts != tc.attempts {
				t.Fatalf("actions %v needs attention %v attempts %d (%s); want %v %v %d", got, n.NeedsAttention, n.Nudge.Attempts, n.Evidence,
					tc.want, tc.escalate, tc.attempts)
			}
			if tc.evidence != "" && n.Evidence != tc.evidence {
				t.Fatalf("evidence %q", n.Evidence)
			}
		})
	}
}

// A terminal session its source cannot reach (Codex: no inbox): what
// recovery would send it escalates instead, with the evidence; a managed
// session, or one that can be reached, is acted on as before.
func TestReconcileUnreachableEscalates(t *testing.T) {
	now, p := terminalNow, terminalPolicy()
	interrupted := func(src sessions.Source) sessions.Session {
		return sessions.Session{ID: "s", Source: src, State: sessions.Interrupted, TurnGeneration: 3, PID: 7,
			ProcessAlive: true, Evidence: "you stopped", StateChangedAt: now.Add(-time.Hour), LastEventAt: now.Add(-time.Hour)}
	}
	stalled := sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Suspect, InTurn: true, TurnGeneration: 3, PID: 7,
		ProcessAlive: true, Evidence: "silent", LastEventAt: now.Add(-10 * time.Minute), StateChangedAt: now.Add(-9 * time.Minute)}
	limited := sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Recovering, TurnGeneration: 3, PID: 7,
		ProcessAlive: true, Evidence: "rate limited; continuing at 11:59", StateChangedAt: now.Add(-time.Hour), LastEventAt: now.Add(-time.Hour),
		Failure:     sessions.Failure{Kind: sessions.RateLimit, RetryAt: now.Add(-time.Second)},
		Supervision: sessions.Supervision{Recovery: RecoveryRateLimit, NextAttemptAt: now.Add(-time.Second), IncidentStarted: now.Add(-time.Hour)}}
	reach := Probe{Known: true, Alive: true}
	none := Probe{Known: true, Alive: true, Unreachable: true}
	for _, tc := range []struct {
		name     string
		s        sessions.Session
		probe    Probe
		want     ActionKind
		escalate bool
	}{
		{"reachable: nudged", interrupted(sessions.Observed), reach, ActNudge, false},
		{"no way in: escalated instead of the nudge", interrupted(sessions.Observed), none, ActEscalate, true},
		{"managed: the flag means nothing", interrupted(sessions.Managed), none, ActNudge, false},
		{"hard stall, no way in: escalated instead of the interrupt", stalled, none, ActEscalate, true},
		{"usage limit over, reachable: continued", limited, reach, ActContinue, false},
		{"usage limit over, no way in: escalated instead of the continue", limited, none, ActEscalate, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not through reconcile: its invariants reject the escalated
			// usage-limit hold (Recovering, its recovery cleared), a case
			// the next tick repairs; only the change flag is checked here.
			n, _, acts, changed := Reconcile(tc.s, now, p, tc.probe)
			if msg := changeMisreported(tc.s, n, changed); msg != "" {
				t.Fatal(msg)
			}
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
			}
			if len(got) != 1 || got[0] != tc.want || n.NeedsAttention != tc.escalate {
				t.Fatalf("actions %v needs attention %v (%s); want %v", got, n.NeedsAttention, n.Evidence, tc.want)
			}
			if tc.escalate && !strings.Contains(n.Evidence, "offers no way in") {
				t.Errorf("evidence %q does not say why", n.Evidence)
			}
		})
	}
}

// A terminal session's hard-stall interrupt is the continuation nudge
// typed into the user's session: it obeys auto_recover_enabled and
// nudge_enabled, spends the nudge budget and waits out its cooldown; when
// it may not be sent the session is escalated, never typed into.
func TestReconcileTerminalStallInterruptIsANudge(t *testing.T) {
	now, base := terminalNow, terminalPolicy()
	stalled := func(attempts int, last time.Duration) sessions.Session {
		s := sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Suspect, InTurn: true, TurnGeneration: 3, PID: 7,
			ProcessAlive: true, Evidence: "silent", LastEventAt: now.Add(-base.StallHard - time.Minute), StateChangedAt: now.Add(-time.Hour)}
		s.Nudge.Attempts = attempts
		if last > 0 {
			s.Nudge.LastNudge = now.Add(-last)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		s        sessions.Session
		policy   func(*Policy)
		want     []ActionKind
		attempts int
		says     string
	}{
		{"allowed: the interrupt spends a nudge", stalled(0, 0), nil, []ActionKind{ActInterrupt}, 1, "interrupting it"},
		{"the nudge switched off: escalated", stalled(0, 0), func(p *Policy) { p.NudgeEnabled = false }, []ActionKind{ActEscalate}, 0, "the continuation nudge is off"},
		{"automatic recovery off: escalated", stalled(0, 0), func(p *Policy) { p.AutoRecover = false }, []ActionKind{ActEscalate}, 0, "automatic recovery is off"},
		{"the budget spent: escalated", stalled(2, time.Hour), nil, []ActionKind{ActEscalate}, 2, "2 of 2 continuation nudges spent"},
		{"the cooldown runs: it waits", stalled(1, time.Minute), nil, nil, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.NudgeMaxAttempts = 2
			p.NudgeCooldown = 10 * time.Minute
			if tc.policy != nil {
				tc.policy(&p)
			}
			n, _, acts, changed := Reconcile(tc.s, now, p, Probe{Known: true, Alive: true})
			if msg := changeMisreported(tc.s, n, changed); msg != "" {
				t.Fatal(msg)
			}
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
			}
			if !slices.Equal(got, tc.want) || n.Nudge.Attempts != tc.attempts {
				t.Fatalf("actions %v, nudges %d (%s); want %v, %d", got, n.Nudge.Attempts, n.Evidence, tc.want, tc.attempts)
			}
			if tc.says != "" && !strings.Contains(n.Evidence+acts[0].Detail, tc.says) {
				t.Errorf("evidence %q / %q does not say %q", n.Evidence, acts[0].Detail, tc.says)
			}
		})
	}
}
