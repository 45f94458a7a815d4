package escalation

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
)

// Note is what a push says, before a channel shapes it. Every text has
// passed the timeline's sanitizer.
type Note struct {
	Title string
	// Lines are the body, one fact per line.
	Lines []string
	// Urgent: an escalation (nothing automatic is left), not a wait.
	Urgent bool
	// Session is the one session a single push is about (empty for a
	// burst or a summary).
	Session sessions.Session
	// Incident is the single push's incident key.
	Incident string
	// Machine names the machine the sessions run on.
	Machine string
}

// Body is the lines joined.
func (n Note) Body() string { return strings.Join(n.Lines, "\n") }

// maxListed bounds the sessions a burst names.
const maxListed = 5

// Compose writes the note for push. machine names this machine; home is
// the user's home directory, shown as "~" in folders.
func Compose(p Push, machine, home string, now time.Time) Note {
	urgent := false
	for _, in := range p.Incidents {
		urgent = urgent || in.Kind == NeedsYou
	}
	if p.Shape == Single && len(p.Incidents) == 1 {
		in := p.Incidents[0]
		s := in.Session
		n := Note{Title: clean(s.DisplayName()) + " " + headline(in), Urgent: urgent, Session: s, Incident: in.Key, Machine: machine}
		n.Lines = append(n.Lines, clean(strings.Join(nonEmpty(agentName(s), folder(s.Cwd, home), on(machine)), " · ")))
		n.Lines = append(n.Lines, stateLine(s))
		if p := permissionLine(s); p != "" {
			n.Lines = append(n.Lines, p)
		}
		if t := tried(s); t != "" {
			n.Lines = append(n.Lines, "Already tried: "+t)
		}
		n.Lines = append(n.Lines, "Waiting "+sessions.Age(now, in.Since)+".")
		return n
	}
	title := fmt.Sprintf("%d sessions need you", len(p.Incidents))
	if !urgent {
		title = fmt.Sprintf("%d sessions wait for you", len(p.Incidents))
	}
	if p.Shape == QuietSummary {
		title += " (held during quiet hours)"
		if len(p.Incidents) == 1 {
			title = clean(p.Incidents[0].Session.DisplayName()) + " " + headline(p.Incidents[0]) + " (held during quiet hours)"
		}
	}
	n := Note{Title: title, Urgent: urgent, Machine: machine}
	for i, in := range p.Incidents {
		if i == maxListed {
			n.Lines = append(n.Lines, fmt.Sprintf("…and %d more", len(p.Incidents)-maxListed))
			break
		}
		n.Lines = append(n.Lines, clean(in.Session.DisplayName())+": "+stateLine(in.Session)+" ("+sessions.Age(now, in.Since)+")")
	}
	if machine != "" {
		n.Lines = append(n.Lines, "On "+clean(machine)+".")
	}
	return n
}

func headline(in Incident) string {
	if in.Kind == NeedsYou {
		return "needs you"
	}
	return in.Session.WaitReason.Asks()
}

// stateLine is the state and its reason in one line.
func stateLine(s sessions.Session) string {
	ev := clip(sessions.SanitizeMessage(s.Evidence), 160)
	if ev == "" {
		return s.State.String()
	}
	return s.State.String() + ": " + ev
}

func permissionLine(s sessions.Session) string {
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitPermission || s.Permission == nil || s.Permission.Tool == "" {
		return ""
	}
	return sessions.PermissionQuestion(*s.Permission) + " (answer on the desktop or in the terminal)"
}

// tried says what the supervisor already did this incident: "nudged
// twice, interrupted once".
func tried(s sessions.Session) string {
	var parts []string
	if n := s.Nudge.Attempts; n > 0 {
		parts = append(parts, "nudged "+times(n))
	}
	if !s.Supervision.InterruptSentAt.IsZero() {
		parts = append(parts, "interrupted the stalled turn")
	}
	if n := s.Supervision.RecoveryAttempts; n > 0 && s.Supervision.Recovery != "" {
		parts = append(parts, strings.ReplaceAll(s.Supervision.Recovery, "_", " ")+" recovery "+times(n))
	}
	return strings.Join(parts, ", ")
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func agentName(s sessions.Session) string { return s.Agent }

// folder is the session's directory, the home directory shown as "~".
func folder(cwd, home string) string {
	if cwd == "" {
		return ""
	}
	if home != "" {
		if rel, err := filepath.Rel(home, cwd); err == nil && !strings.HasPrefix(rel, "..") {
			if rel == "." {
				return "~"
			}
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return cwd
}

func on(machine string) string {
	if machine == "" {
		return ""
	}
	return "on " + machine
}

func nonEmpty(parts ...string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// clean makes a name safe to show: sanitized, no control characters.
func clean(s string) string { return textsafe.Clean(sessions.SanitizeMessage(s)) }

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
