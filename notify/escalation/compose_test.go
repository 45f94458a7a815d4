package escalation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestCompose(t *testing.T) {
	s := escalated("api-refactor", 3)
	s.Cwd = "/home/ann/src/api"
	s.Nudge.Attempts = 2
	s.Supervision.InterruptSentAt = t0
	s.Evidence = "no output for 150 min; interrupted; ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 rejected"
	perm := waiting("deploy", sessions.WaitPermission)
	perm.Permission = &sessions.Permission{RequestID: "r1", Tool: "Bash", Input: "rm -rf build/"}
	perm.Evidence = "waiting for permission to run Bash"
	for _, tc := range []struct {
		name      string
		push      Push
		title     string
		lines     []string
		urgent    bool
		forbidden []string
	}{
		{"an escalation names the machine, the folder, the state and what was tried",
			Push{Shape: Single, Incidents: []Incident{{Key: "k", Kind: NeedsYou, Session: s, Since: t0}}},
			"api-refactor needs you",
			[]string{"claude · ~/src/api · on devbox", "Already tried: nudged twice, interrupted the stalled turn", "Waiting 12m."},
			true, []string{"sk-ant-api03"}},
		{"a permission request names the tool",
			Push{Shape: Single, Incidents: []Incident{{Key: "k", Kind: Waiting, Session: perm, Since: t0}}},
			"deploy asks for permission",
			[]string{"Bash: rm -rf build/ — allow? (answer on the desktop or in the terminal)"},
			false, nil},
		{"a burst counts and lists",
			Push{Shape: Burst, Incidents: []Incident{{Kind: NeedsYou, Session: escalated("a", 1), Since: t0}, {Kind: Waiting, Session: perm, Since: t0}}},
			"2 sessions need you",
			[]string{"On devbox."},
			true, nil},
		{"a quiet summary says it was held",
			Push{Shape: QuietSummary, Incidents: []Incident{{Kind: NeedsYou, Session: escalated("a", 1), Since: t0}}},
			"a needs you (held during quiet hours)",
			nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Compose(tc.push, "devbox", "/home/ann", t0.Add(12*time.Minute))
			if n.Title != tc.title || n.Urgent != tc.urgent {
				t.Errorf("title %q urgent %v, want %q %v", n.Title, n.Urgent, tc.title, tc.urgent)
			}
			for _, l := range tc.lines {
				if !slices.Contains(n.Lines, l) {
					t.Errorf("no line %q in %q", l, n.Lines)
				}
			}
			for _, f := range tc.forbidden {
				if strings.Contains(n.Title+n.Body(), f) {
					t.Errorf("the note carries %q: %q", f, n.Body())
				}
			}
		})
	}
}
