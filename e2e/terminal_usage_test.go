//go:build linux

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// A session started in a terminal shows what it used: the real interactive
// CLI, on the fake API answering a tool call and a reply with known token
// counts under a model id no pricing table knows, writes them to its
// transcript; `show --json` has the two replies' sum under that id, priced
// on the fallback and flagged. The app restarted, the same transcript read
// again from its first line adds nothing.
func TestTerminalRealCLIUsage(t *testing.T) {
	t.Parallel()
	w := startPTYWorld(t)
	w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
	time.Sleep(time.Second) // the prompt box is drawn
	w.typeLine("[[scenario:usage_unknown]] run it")

	tok := func(u fakeapi.Usage) sessions.Tokens {
		return sessions.Tokens{Input: int64(u.Input), Output: int64(u.Output), CacheWrite: int64(u.CacheWrite), CacheRead: int64(u.CacheRead)}
	}
	want := tok(fakeapi.UsageToolCall).Add(tok(fakeapi.UsageAnswer))
	model := fakeapi.UsageUnknownModel
	counted := func(s sessions.Session) bool { return s.Usage.Total[model] == want }
	s := w.observed(60*time.Second, "in review with the turn's usage", func(s sessions.Session) bool { return ce2eReview(1)(s) && counted(s) })

	show := func() (sessions.Usage, showCost) {
		t.Helper()
		var got struct {
			Usage sessions.SessionUsage `json:"usage"`
			Cost  showCost              `json:"equivalent_api_cost"`
		}
		if err := json.Unmarshal([]byte(w.h.mustCLI("show", s.ID, "--json")), &got); err != nil {
			t.Fatal(err)
		}
		return got.Usage.Total, got.Cost
	}
	u, cost := show()
	if len(u) != 1 || u[model] != want {
		w.fail("show --json: usage %+v, want %s: %+v", u, model, want)
	}
	if !cost.Unknown || len(cost.Models) != 1 || cost.Models[0].Known || cost.Total <= 0 || cost.Label != "equivalent API cost" {
		w.fail("show --json: the unknown model is not priced on the fallback and flagged: %+v", cost)
	}

	// `usage --by model` sums it with every other session's.
	var rep struct {
		Rows []struct {
			Key    string          `json:"key"`
			Tokens sessions.Tokens `json:"tokens"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(w.h.mustCLI("usage", "--by", "model", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != model || rep.Rows[0].Tokens != want {
		w.fail("usage --by model: %+v, want %s: %+v", rep.Rows, model, want)
	}

	// Quit and start again: the session is followed again, its transcript
	// read from the top, and nothing is counted twice.
	if code := w.h.interrupt(); code != 0 {
		t.Fatalf("the app quit with %d", code)
	}
	w.h.start()
	w.observed(30*time.Second, "followed again", func(s sessions.Session) bool { return s.ProcessAlive && counted(s) })
	time.Sleep(2 * time.Second) // the transcript's first read and a tick
	if u, _ := show(); len(u) != 1 || u[model] != want {
		w.fail("after a restart: usage %+v, want %s: %+v", u, model, want)
	}
}

// showCost is the part of `show --json`'s equivalent_api_cost checked.
type showCost struct {
	Label   string `json:"label"`
	Total   int64  `json:"total_micro_usd"`
	Unknown bool   `json:"unknown"`
	Models  []struct {
		Model string `json:"model"`
		Known bool   `json:"known"`
	} `json:"models"`
}
