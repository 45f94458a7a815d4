//go:build linux

package e2e

// The scenarios every managed agent (Claude Code, Codex, Gemini, Copilot,
// OpenCode) runs the same way against its real CLI and its fake model API:
// one description of each agent (e2eAgent: how its fake API and
// environment are set up, how a session is launched, what differs in what
// is measured) and one body of each scenario. The per-agent files keep
// their agent's description and the tests that are truly its own. All of
// it sits on the harness (harness_test.go).

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// e2eReq is the part of a fake API's request record the shared scenarios
// read; each fake API has its own entry type.
type e2eReq struct {
	Status     int
	UserText   string
	ToolOutput string
	At         time.Time
}

// e2eOpts are the per-test choices an agent's setup may need to honour.
type e2eOpts struct {
	// longIdle: the agent's own stream idle timeout is set past the
	// supervisor's stall limits (Codex would otherwise give up first).
	longIdle bool
	// config, when set, is the agent's own fake API configuration (its
	// fakeapi.Config) to start from.
	config any
	// bus, when set, is the session bus the app notifies on (a private
	// one with the test's notification service); none otherwise.
	bus string
	// refusedOK is how many requests the refusing proxy may turn away
	// without failing the test (Copilot with its own API asks
	// api.github.com twice; refused, nothing leaves the machine).
	refusedOK int
}

// e2eAgent describes one managed agent for the shared scenarios.
type e2eAgent struct {
	name string // the agent's name: `new --agent NAME`, agents.NAME.command
	// binary finds the real CLI (skipping the test when there is none).
	binary func(t testing.TB) string
	// setup starts the fake API and the loopback-only proxy, writes the
	// CLI's configuration under h.home and sets h.env; it returns the fake
	// API (for the agent's own tests) and its requests of a scenario (""
	// for every request it received).
	setup func(h *ce2eHarness, o e2eOpts) (api any, requests func(scenario string) []e2eReq)
	// newFlags go on every `new` unless the test chooses its own
	// --permission-mode.
	newFlags []string
	// sessionIDOK tells whether the decoded agent session id is the
	// agent's kind of id.
	sessionIDOK func(id string) bool
	// tool is the name of the open tool a shell command is (waitOpenTool);
	// toolEvidence, when set, is what the evidence says while it runs,
	// checked instead of the tool's name (as each suite measured it).
	tool, toolEvidence string
	// toolRunning and toolDone, when set, are the exact evidence while the
	// command runs and once it finished (pinned where the suite measured
	// them).
	toolRunning, toolDone string
	// slowProc is what the command line of the slowtool scenario's command
	// contains ("sleep 60" when empty).
	slowProc string
	// processPerTurn: every turn runs in a process of its own (Copilot's
	// `-p`), so the process exits after a turn, the next prompt and the
	// nudge after an interrupt run in a new one, and no process is alive
	// between turns to check.
	processPerTurn bool
	// killGroup: the CLI is a wrapper around the native binary in the same
	// process group, so a crash of the agent is the whole group dying.
	killGroup bool
	// nudgeAnywhere: the CLI drops a cancelled turn from the history it
	// sends, so the nudge after a stall or an app restart carries no
	// scenario marker (measured on Gemini) and is looked for in every
	// request.
	nudgeAnywhere bool
	// orphanSurvivesApp: the agent's process outlives the app killed with
	// SIGKILL (the test fails when it does not: nothing would be reaped).
	orphanSurvivesApp bool
	// reapRecorded: the boot decision records that the supervisor stopped
	// the dead app's agent process.
	reapRecorded bool
	// reportsUsage: the agent reports the turn's tokens (on its stream, or
	// Copilot in its events file), so `usage` lists the session with what
	// the fake API counted.
	reportsUsage bool
	// unpinnedTimelines: the suite never pinned the tool and approval
	// timelines for this agent; they are not asserted.
	unpinnedTimelines bool
	// waitPersisted, when set, waits until the CLI's own record of the
	// session holds what (Copilot writes it about a second late, Claude
	// Code may not have saved the session yet: a kill before that loses
	// the turn).
	waitPersisted func(h *agentE2E, sessionID string, what e2eRecord)
	// resumeWithin bounds the wait for a resumed turn to complete (3
	// minutes when zero: gemini.loadDelay may wait for the next minute).
	resumeWithin time.Duration
	// afterPlainReply and afterSecondPrompt, when set, add the agent's own
	// checks to those scenarios.
	afterPlainReply, afterSecondPrompt func(h *agentE2E)
}

// e2eRecord is what a scenario waits for the CLI to have recorded of its
// session before it kills something (e2eAgent.waitPersisted).
type e2eRecord int

const (
	// recordedPrompt: the turn's prompt (the app is killed mid-turn).
	recordedPrompt e2eRecord = iota
	// recordedToolCall: the running command's call (the agent is killed).
	recordedToolCall
)

var e2eRecordNames = [...]string{recordedPrompt: "prompt", recordedToolCall: "tool call"}

func (r e2eRecord) String() string { return enum.Name(r, "e2eRecord", e2eRecordNames[:]) }

// resumeLimit is how long a resumed turn of the agent may take.
func (a *e2eAgent) resumeLimit() time.Duration {
	if a.resumeWithin > 0 {
		return a.resumeWithin
	}
	return 3 * time.Minute
}

// agentE2E is one test's world: the shared harness, the agent and its fake
// API's requests.
type agentE2E struct {
	*ce2eHarness
	agent    *e2eAgent
	api      any // the agent's own fake API server
	requests func(scenario string) []e2eReq
}

// startAgentE2E sets up a test's fake API, the agent's hermetic
// environment and the app, with settings (key, value pairs) applied first.
func startAgentE2E(t *testing.T, a *e2eAgent, o e2eOpts, settings ...string) *agentE2E {
	t.Helper()
	bin := a.binary(t)
	appBin, _ := testBinaries(t)
	data := testdir.Short(t, "sse")
	h := &ce2eHarness{t: t, app: appBin, home: t.TempDir(), data: data, work: t.TempDir()}
	// The app inherits h.env and the CLI inherits the app's.
	api, reqs := a.setup(h, o)
	// No session bus: the notifier must not autolaunch a dbus-daemon
	// under this HOME (it would outlive the app).
	bus := "unix:path=" + filepath.Join(h.home, "no-bus")
	if o.bus != "" {
		bus = o.bus
	}
	h.env = append(h.env, "DBUS_SESSION_BUS_ADDRESS="+bus)
	t.Cleanup(h.cleanup)
	h.mustCLI("settings", "set", "agents."+a.name+".command", bin)
	if len(settings)%2 != 0 {
		t.Fatalf("settings come in key, value pairs: %q", settings)
	}
	for i := 0; i+1 < len(settings); i += 2 {
		h.mustCLI("settings", "set", settings[i], settings[i+1])
	}
	h.startApp()
	return &agentE2E{ce2eHarness: h, agent: a, api: api, requests: reqs}
}

// launch creates a managed session of the agent in the work directory and
// returns its id.
func (h *agentE2E) launch(prompt string, flags ...string) string {
	h.t.Helper()
	args := []string{"new", "--agent", h.agent.name, "--cwd", h.work}
	if !slices.Contains(flags, "--permission-mode") {
		args = append(args, h.agent.newFlags...)
	}
	args = append(args, flags...)
	id := strings.TrimSpace(h.mustCLI(append(args, prompt)...))
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", id)
	}
	return id
}

func (h *agentE2E) statuses(scenario string) []int {
	var out []int
	for _, e := range h.requests(scenario) {
		out = append(out, e.Status)
	}
	return out
}

// expectStatuses checks the fake API's answers to a scenario's requests.
func (h *agentE2E) expectStatuses(scenario string, want ...int) {
	h.t.Helper()
	if got := h.statuses(scenario); !slices.Equal(got, want) {
		h.t.Errorf("the fake API answered %v to %s, want %v", got, scenario, want)
	}
}

// nudged reports whether the fake API received the continuation nudge in a
// request of scenario ("" for any request).
func (h *agentE2E) nudged(scenario string) bool {
	for _, e := range h.requests(scenario) {
		if strings.Contains(e.UserText, core.NudgeText) {
			return true
		}
	}
	return false
}

// nudgedAfterCancel is nudged for a nudge that follows a cancelled turn.
func (h *agentE2E) nudgedAfterCancel(scenario string) bool {
	if h.agent.nudgeAnywhere {
		scenario = ""
	}
	return h.nudged(scenario)
}

func (h *agentE2E) checkIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != h.agent.name || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want %s, managed, %q", s.Agent, s.Source, s.Cwd, h.agent.name, h.work)
	}
	if !h.agent.sessionIDOK(s.AgentSessionID) {
		h.t.Errorf("agent_session_id %q: the agent's session id was not decoded", s.AgentSessionID)
	}
	if s.PID <= 0 || s.Evidence == "" {
		h.t.Errorf("pid %d evidence %q", s.PID, s.Evidence)
	}
}

// checkContinued checks that a turn (what) after first ran in the same
// agent session: on the same live process, or for a process per turn in a
// new one.
func (h *agentE2E) checkContinued(what string, first, s sessions.Session) {
	h.t.Helper()
	perTurn := h.agent.processPerTurn
	if s.AgentSessionID != first.AgentSessionID || perTurn && s.PID == first.PID || !perTurn && (s.PID != first.PID || !s.ProcessAlive) {
		h.t.Errorf("%s ran on pid %d (alive %v) session %s; the turn before on pid %d session %s (a process per turn: %v)",
			what, s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID, perTurn)
	}
}

// checkShowContract checks the documented `show --json` contract (these
// keys are always present) on a session waiting for review, and that `ls
// --json` lists it alone.
func (h *agentE2E) checkShowContract(id string) {
	h.t.Helper()
	var raw map[string]any
	if err := json.Unmarshal([]byte(h.mustCLI("show", id, "--json")), &raw); err != nil {
		h.t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "agent", "agent_session_id", "source", "cwd", "pid", "state",
		"evidence", "wait_reason", "failure", "needs_attention", "turn_generation", "updated_at"} {
		if _, ok := raw[k]; !ok {
			h.t.Errorf("show --json has no %q", k)
		}
	}
	if raw["state"] != "waiting_on_user" || raw["wait_reason"] != "review" {
		h.t.Errorf("state %v wait_reason %v, want waiting_on_user review", raw["state"], raw["wait_reason"])
	}
	if list := h.ls(); len(list) != 1 || list[0].ID != id || list[0].State != sessions.WaitingOnUser {
		h.t.Errorf("ls --json = %+v, want the one session waiting on the user", list)
	}
}

// checkResumed checks that the second process_started row of a timeline
// says it resumed the agent session.
func (h *agentE2E) checkResumed(rows []ce2eRow, agentSession string) {
	h.t.Helper()
	var started []ce2eRow
	for _, r := range rows {
		if r.Kind == "process_started" {
			started = append(started, r)
		}
	}
	if len(started) == 2 && !strings.Contains(started[1].message(), "resumed session "+agentSession) {
		h.t.Errorf("second process_started %q, want a resume of %s", started[1].message(), agentSession)
	}
}

// waitUnderWay waits until the session's turn is under way: its process
// and agent session known, the fake API holding a request of scenario.
func (h *agentE2E) waitUnderWay(id, scenario string) sessions.Session {
	h.t.Helper()
	return h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.PID > 0 && s.AgentSessionID != "" && len(h.requests(scenario)) > 0
	})
}

// startFakeAPI starts an agent's fake model API (its fakeapi.Start), closed
// with the test.
func startFakeAPI[S interface{ Close() }](h *ce2eHarness, start func() (S, error)) S {
	h.t.Helper()
	api, err := start()
	if err != nil {
		h.t.Fatalf("starting the fake API: %v", err)
	}
	h.t.Cleanup(api.Close)
	return api
}

// startFakes starts an agent's fake model API and its loopback proxy that
// refuses every connection (its fakeapi.Start and StartRefusingProxy),
// both closed with the test, and returns the API and the proxy's URL.
func startFakes[S interface{ Close() }](h *ce2eHarness, start func() (S, error), startProxy func() (string, func(), error)) (S, string) {
	h.t.Helper()
	api := startFakeAPI(h, start)
	url, closeProxy, err := startProxy()
	if err != nil {
		h.t.Fatalf("starting the refusing proxy: %v", err)
	}
	h.t.Cleanup(closeProxy)
	return api, url
}

// e2eReqs converts a fake API's request records with conv.
func e2eReqs[E any](entries []E, conv func(E) e2eReq) []e2eReq {
	out := make([]e2eReq, 0, len(entries))
	for _, e := range entries {
		out = append(out, conv(e))
	}
	return out
}

// agentWithAPI is one agent test's world with its fake API as its own
// type (each agent's fakeapi.Server), for the agent's own tests.
type agentWithAPI[S any] struct {
	*agentE2E
	api S
}

// startAgentWithAPI starts a test's world for agent (startAgentE2E) and
// keeps its fake API typed.
func startAgentWithAPI[S any](t *testing.T, agent *e2eAgent, o e2eOpts, settings ...string) *agentWithAPI[S] {
	t.Helper()
	h := startAgentE2E(t, agent, o, settings...)
	return &agentWithAPI[S]{agentE2E: h, api: h.api.(S)}
}

// fakeReqs is what a fake on sessions/fakeserver (every agent's but
// Claude's) recorded, as the scenarios read it.
func fakeReqs(entries []fakeserver.Entry) []e2eReq {
	return e2eReqs(entries, func(e fakeserver.Entry) e2eReq {
		return e2eReq{Status: e.Status, UserText: e.UserText, ToolOutput: e.ToolOutput, At: e.At}
	})
}

// orphanAfterKill records, as orphans for the cleanup, the processes of
// this test other than the app and the killed agent (the command the agent
// ran in a terminal of its own outlives it).
func (h *agentE2E) orphanAfterKill(killed int) {
	for _, pid := range procsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != killed {
			h.orphans = append(h.orphans, pid)
		}
	}
	h.t.Logf("left running by the killed agent: %s", describeProcs(h.orphans))
}

// e2eScenarios are the scenarios every managed agent runs the same way.
var e2eScenarios = []struct {
	name string
	run  func(t *testing.T, a *e2eAgent)
}{
	{"PlainReply", e2ePlainReply},
	{"Tool", e2eTool},
	{"SecondPrompt", e2eSecondPrompt},
	{"StallInterruptNudge", e2eStallInterruptNudge},
	{"AgentKilledMidTool", e2eAgentKilledMidTool},
	{"AppKilledMidTurn", e2eAppKilledMidTurn},
}

// runAgentE2E runs the shared scenarios for one agent, each as a subtest
// with an app and fake API of its own.
func runAgentE2E(t *testing.T, a *e2eAgent) {
	for _, sc := range e2eScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each scenario has its own app, fake API and agent
			sc.run(t, a)
		})
	}
}

// e2ePlainReply: a plain reply ends the turn waiting for review; ack makes
// it idle and the session stays ready for the next prompt (the agent's
// process stays; for a process per turn, the turn's process exiting is not
// the session ending).
func e2ePlainReply(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{})
	id := h.launch("[[scenario:text]] hi", "--name", "plain")
	s := h.waitFor(id, "the reply to be waiting for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.checkIdentity(s)
	if s.Name != "plain" || s.TurnGeneration != 1 || s.InTurn || !s.Failure.IsZero() || s.NeedsAttention || s.SkippedLines != 0 ||
		!a.processPerTurn && !s.ProcessAlive {
		t.Errorf("after the reply: name %q turn %d in_turn %v failure %+v needs_attention %v alive %v skipped %d",
			s.Name, s.TurnGeneration, s.InTurn, s.Failure, s.NeedsAttention, s.ProcessAlive, s.SkippedLines)
	}
	h.checkShowContract(id)
	if a.reportsUsage {
		h.checkUsage(a.name)
	}
	if a.processPerTurn {
		// The turn's process is gone; the session still is not.
		deadline := time.Now().Add(30 * time.Second)
		for pidAlive(s.PID) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	h.mustCLI("ack", id)
	s = h.waitFor(id, "ack to make it idle", ce2eIn(sessions.Idle))
	if !s.ProcessAlive || a.processPerTurn && s.NeedsAttention {
		t.Errorf("after ack: alive %v needs_attention %v; the session stays ready for the next prompt", s.ProcessAlive, s.NeedsAttention)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "acknowledged"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(review)", "acknowledged", "state_changed:idle")
	h.expectStatuses("text", 200)
	if a.afterPlainReply != nil {
		a.afterPlainReply(h)
	}
	h.stopApp()
}

// checkUsage reads `usage --by agent --json` as a user's script would: the
// one session's tokens are counted under its agent and priced, labelled as
// the equivalent API cost.
func (h *agentE2E) checkUsage(agent string) {
	h.t.Helper()
	var rep struct {
		Rows []struct {
			Key      string          `json:"key"`
			Sessions int             `json:"sessions"`
			Tokens   sessions.Tokens `json:"tokens"`
			Cost     struct {
				Label string `json:"label"`
				Total int64  `json:"total_micro_usd"`
			} `json:"equivalent_api_cost"`
		} `json:"rows"`
	}
	// A process-per-turn agent's tokens come when its turn's process has
	// ended (Copilot's, from its events file): shortly after the review.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(h.mustCLI("usage", "--by", "agent", "--json")), &rep); err != nil {
			h.t.Fatal(err)
		}
		if len(rep.Rows) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != agent || rep.Rows[0].Sessions != 1 || rep.Rows[0].Tokens.Input+rep.Rows[0].Tokens.CacheRead <= 0 ||
		rep.Rows[0].Tokens.Output <= 0 || rep.Rows[0].Cost.Total <= 0 || rep.Rows[0].Cost.Label != "equivalent API cost" {
		h.t.Errorf("usage --by agent: %+v", rep.Rows)
	}
	if out := h.mustCLI("usage"); !strings.Contains(out, "EQUIVALENT API COST") || !strings.Contains(out, "not a charge") {
		h.t.Errorf("usage:\n%s", out)
	}
}

// e2eTool: a shell command (tools allowed by the agent's launch flags) is
// an open tool while it runs, then the turn completes with its output sent
// back.
func e2eTool(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{})
	w := h.watch()
	id := h.launch("[[scenario:tool]] run it")
	h.waitFor(id, "the command turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))
	var running, finished bool
	for _, s := range w.sessionStates(id) {
		if s.State == sessions.Working && len(s.OpenTools) == 1 && (a.toolRunning == "" || s.Evidence == a.toolRunning) {
			for _, c := range s.OpenTools {
				if a.toolEvidence != "" && strings.Contains(s.Evidence, a.toolEvidence) ||
					a.toolEvidence == "" && c.Name == a.tool {
					running = true
				}
			}
		}
		if running && s.State == sessions.Working && len(s.OpenTools) == 0 && (a.toolDone == "" || s.Evidence == a.toolDone) {
			finished = true
		}
	}
	if !running || !finished {
		t.Errorf("the stream never showed the %s open and then finished (running %v, finished %v)", a.tool, running, finished)
		for _, s := range w.sessionStates(id) {
			t.Logf("  %s: %s (open %d)", s.State, s.Evidence, len(s.OpenTools))
		}
	}
	reqs := h.requests("tool")
	if len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
		t.Errorf("requests %+v, want the call and then its output hi", reqs)
	}
	if !a.unpinnedTimelines {
		h.expectTimeline(id, []string{"process_started", "prompt_sent"},
			"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	}
	h.stopApp()
}

// e2eSecondPrompt: `send` starts turn 2 in the same agent session, on the
// same process (or, for a process per turn, a new one resuming it).
func e2eSecondPrompt(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{})
	id := h.launch("[[scenario:text]] first")
	first := h.waitFor(id, "the first reply", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.mustCLI("send", id, "second")
	s := h.waitFor(id, "the second reply", ce2eReview(2))
	h.checkContinued("turn 2", first, s)
	reqs := h.requests("text")
	if len(reqs) != 2 || reqs[1].UserText != "second" {
		t.Errorf("requests %+v, want two, the second carrying the prompt", reqs)
	} else if a.afterSecondPrompt != nil {
		a.afterSecondPrompt(h)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)",
		"prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// e2eStallInterruptNudge: a model stream that goes silent is suspect, then
// interrupted (the agent's own cancel), and the nudge in the same agent
// session completes the work: on the live process, or for a process per
// turn in a new one, the interrupted one gone.
func e2eStallInterruptNudge(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{longIdle: true}, ce2eFast...)
	id := h.launch("[[scenario:stall]] go")
	// The short stall limits apply once the model's stream is open (from
	// the next tick): a CLI slow to start on a busy machine is silent too,
	// and is not what this is about.
	h.waitUnderWay(id, "stall")
	h.mustCLI("settings", "set", "supervisor.stall_suspect_minutes", "0.25")
	h.mustCLI("settings", "set", "supervisor.stall_hard_minutes", "0.5")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	if !strings.Contains(first.Evidence, "silent") || !strings.Contains(first.Evidence, "alive") {
		t.Errorf("suspect evidence %q, want how long it was silent and that the pid is alive", first.Evidence)
	}
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	h.checkContinued("the nudge", first, s)
	if s.Nudge.Attempts != 0 || s.NeedsAttention {
		t.Errorf("nudge budget %+v needs_attention %v: a completed turn refills the budget and needs nothing", s.Nudge, s.NeedsAttention)
	}
	if a.processPerTurn && pidAlive(first.PID) {
		t.Errorf("the interrupted turn's process %d still runs", first.PID)
	}
	if !h.nudgedAfterCancel("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "marked_interrupted", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	// The interrupt came no earlier than the hard limit after the last
	// stream event (at the turn's start or later) and the nudge after it.
	start := h.findRow(rows, "state_changed:working").Time
	if d := h.findRow(rows, "stall_interrupt").Time.Sub(start); d < 30*time.Second {
		t.Errorf("interrupted %s after the turn started, before the 30 s hard limit", d)
	}
	h.stopApp()
}

// e2eAgentKilledMidTool: the agent killed with SIGKILL while a command runs
// is interrupted, and the nudge resumes its session in a new process,
// which completes the work.
func e2eAgentKilledMidTool(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{}, ce2eFast...)
	id := h.launch("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, a.tool)
	// In the middle of the tool call: the command runs.
	h.waitProc(cmp.Or(a.slowProc, "sleep 60"))
	if a.waitPersisted != nil {
		// The test is about the resume: kill once the turn is on disk.
		a.waitPersisted(h, before.AgentSessionID, recordedToolCall)
	}
	pid := before.PID
	if a.killGroup {
		pid = -pid
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s %d: %v", a.name, pid, err)
	}
	h.orphanAfterKill(before.PID)
	// The resume may wait for the next minute (gemini.loadDelay: the CLI's
	// session/load defect within the minute the session was recorded in).
	s := h.waitForWithin(id, "the resumed turn to complete", a.resumeLimit(), ce2eReview(2))
	if s.PID == before.PID || s.PID <= 0 || s.AgentSessionID != before.AgentSessionID || !a.processPerTurn && !s.ProcessAlive {
		t.Errorf("after the resume: pid %d (alive %v) session %s; want a new process on session %s (killed pid %d)",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.AgentSessionID, before.PID)
	}
	if !h.nudged("slowtool") {
		t.Errorf("the fake API never received the continuation nudge: %+v", h.requests("slowtool"))
	}
	rows := h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "marked_interrupted", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	if msg := h.findRow(rows, "state_changed:interrupted").message(); !strings.Contains(msg, "SIGKILL") && !strings.Contains(msg, "killed") {
		t.Errorf("interrupted evidence %q does not say the process was killed", msg)
	}
	h.checkResumed(rows, before.AgentSessionID)
	h.stopApp()
}

// e2eAppKilledMidTurn: the app killed with SIGKILL while a turn is in
// flight comes back with the session Interrupted, stops the agent process
// the dead app left behind (where it still runs), resumes the session in a
// new process and nudges it to completion.
func e2eAppKilledMidTurn(t *testing.T, a *e2eAgent) {
	h := startAgentE2E(t, a, e2eOpts{longIdle: true}, ce2eFast...)
	id := h.launch("[[scenario:stall]] go")
	before := h.waitUnderWay(id, "stall")
	if a.waitPersisted != nil {
		a.waitPersisted(h, before.AgentSessionID, recordedPrompt)
	}
	h.killApp()
	orphaned := pidAlive(before.PID)
	if a.orphanSurvivesApp && !orphaned {
		t.Fatalf("the %s process %d died with the app; the test needs it orphaned", a.name, before.PID)
	}
	h.startApp()
	s := h.waitForWithin(id, "the resumed turn to complete", a.resumeLimit(), ce2eReview(2))
	if s.PID == before.PID || s.AgentSessionID != before.AgentSessionID || !a.processPerTurn && !s.ProcessAlive {
		t.Errorf("after the restart: pid %d (alive %v) session %q; before: pid %d session %q",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if pidAlive(before.PID) {
		t.Errorf("the %s process %d of the killed app still runs next to the resumed %d", a.name, before.PID, s.PID)
	}
	if !h.nudgedAfterCancel("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled", "marked_interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	if boot := h.findRow(rows, "boot_reconciled").detail(); boot["from"] != "working" || boot["to"] != "interrupted" {
		t.Errorf("boot_reconciled detail %v, want working → interrupted", boot)
	}
	h.checkResumed(rows, before.AgentSessionID)
	if a.reapRecorded && orphaned {
		// The supervisor, not the CLI, ended the old process: the reap is
		// recorded with the boot decision. (Gemini sometimes exits by
		// itself once the dead app's pipe closes, before the new app
		// boots: then there is nothing to reap, and the check above that
		// it no longer runs is what holds.)
		for _, r := range rows {
			if r.Kind == "boot_reconciled" {
				if o, _ := r.detail()["orphan"].(string); !strings.Contains(o, "was stopped") || !strings.Contains(o, strconv.Itoa(before.PID)) {
					t.Errorf("boot_reconciled %s records no stopped orphan %d", r.Detail, before.PID)
				}
			}
		}
	}
	h.stopApp()
}

// approveWrite: under the permission mode "default" a command that asks
// waits on the user; `approve` answers it and the command runs; a second
// `approve` finds nothing pending. It returns the session while it waited
// for the approval, for the agent's own checks.
func (h *agentE2E) approveWrite() (pending sessions.Session) {
	h.t.Helper()
	id := h.launch("[[scenario:write]] make it", "--permission-mode", "default")
	pending = h.waitFor(id, "the approval request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	if s := pending; s.Permission == nil || s.Permission.Tool != h.agent.tool || !s.InTurn {
		h.t.Fatalf("permission %+v in_turn %v, want a pending %s in a running turn", s.Permission, s.InTurn, h.agent.tool)
	}
	out := filepath.Join(h.work, "build", "out.txt")
	if _, err := os.Stat(out); err == nil {
		h.t.Fatal("build/out.txt exists before the command was approved")
	}
	h.mustCLI("approve", id)
	s := h.waitFor(id, "the approved turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.Permission != nil {
		h.t.Errorf("permission %+v still pending", s.Permission)
	}
	if _, err := os.Stat(out); err != nil {
		h.t.Errorf("the approved command did not run: %v", err)
	}
	if _, errOut, code := h.cli("approve", id); code != 1 || !strings.Contains(errOut, "no pending permission") {
		h.t.Errorf("a second approve: exit %d, %q; want exit 1 saying nothing is pending", code, errOut)
	}
	if !h.agent.unpinnedTimelines {
		h.expectTimeline(id, []string{"process_started", "prompt_sent", "permission_answered"},
			"process_started", "prompt_sent", "state_changed:working",
			"state_changed:waiting_on_user(permission)", "permission_answered", "state_changed:working",
			"state_changed:waiting_on_user(review)")
	}
	h.stopApp()
	return pending
}

// denyWrite: `deny` (with the user's message) declines the command the
// write scenario asks for; it never runs. It returns the session once the
// turn has ended, for the agent's own checks of how it ended.
func (h *agentE2E) denyWrite() (string, sessions.Session) {
	h.t.Helper()
	id := h.launch("[[scenario:write]] make it", "--permission-mode", "default")
	h.waitFor(id, "the approval request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	h.mustCLI("deny", id, "--message", "not now")
	s := h.waitFor(id, "the turn to end", func(s sessions.Session) bool { return !s.InTurn && s.Permission == nil })
	if _, err := os.Stat(filepath.Join(h.work, "build", "out.txt")); err == nil {
		h.t.Error("the denied command ran")
	}
	return id, s
}

// rateLimitDrain: a 429 past the agent's own retries fails the turn with
// rate_limit; the session is held in Recovering with a countdown and
// continued in the same agent session, which completes. It returns the
// held and the completed session for the agent's own checks.
func (h *agentE2E) rateLimitDrain(scenario string, agentRetries bool) (held, done sessions.Session) {
	h.t.Helper()
	id := h.launch("[[scenario:" + scenario + "]] hi")
	held = h.waitForWithin(id, "the drain hold", 3*time.Minute, func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Supervision.NextAttemptAt.IsZero() {
		h.t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	done = h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !done.Failure.IsZero() || done.NeedsAttention || done.AgentSessionID != held.AgentSessionID {
		h.t.Errorf("failure %+v needs_attention %v session %s (was %s) after the continue",
			done.Failure, done.NeedsAttention, done.AgentSessionID, held.AgentSessionID)
	}
	want := []string{"state_changed:working", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)"}
	if agentRetries {
		// Recovering first: the agent's own retries.
		want = slices.Insert(want, 1, "state_changed:recovering")
	}
	h.expectTimeline(id, []string{}, want...)
	return held, done
}

// rateLimitDrainAtReset is rateLimitDrain for a rate limit that names its
// reset, window after the first request (to the second): the hold retries
// at exactly that reset, and the turn is continued then (within a 5 s
// tick).
func (h *agentE2E) rateLimitDrainAtReset(scenario string, window time.Duration) {
	h.t.Helper()
	held, done := h.rateLimitDrain(scenario, false)
	reqs := h.requests(scenario)
	if len(reqs) == 0 {
		h.t.Fatal("no request reached the fake API")
	}
	reset := time.Unix(reqs[0].At.Add(window).Unix(), 0)
	if !held.Failure.RetryAt.Equal(reset) || !held.Supervision.NextAttemptAt.Equal(reset) {
		h.t.Errorf("hold: retry_at %v next attempt %v, want the API's reset %v", held.Failure.RetryAt, held.Supervision.NextAttemptAt, reset)
	}
	var cont ce2eRow
	for _, r := range h.timeline(done.ID) {
		if r.Kind == "rate_limit_drain" {
			cont = r
		}
	}
	if late := cont.Time.Sub(reset); late < 0 || late > 6*time.Second {
		h.t.Errorf("continued %s after the reset, want at the reset (within a 5 s tick)", late)
	}
}

// authEscalated: a 401 is held for an auth resume; with automatic recovery
// switched off it is escalated. The fake API answers statuses (the agent's
// own retries); the timeline is asserted when given. It returns the held
// session for the agent's own checks.
func (h *agentE2E) authEscalated(statuses []int, timeline ...string) sessions.Session {
	h.t.Helper()
	id := h.launch("[[scenario:401]] hi")
	held := h.waitFor(id, "the auth hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Auth || held.NeedsAttention || !strings.Contains(held.Evidence, "resuming at") {
		h.t.Errorf("hold: failure %+v needs_attention %v evidence %q", held.Failure, held.NeedsAttention, held.Evidence)
	}
	h.mustCLI("settings", "set", "supervisor.auto_recover_enabled", "false")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		h.t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	h.expectStatuses("401", statuses...)
	if len(timeline) > 0 {
		h.expectTimeline(id, []string{}, timeline...)
	}
	return held
}

// overflowEscalated: an overflow the agent cannot compact its way out of
// is escalated as errored context_overflow, after a compaction was tried.
// It returns the escalated session for the agent's own checks.
func (h *agentE2E) overflowEscalated(scenario string) sessions.Session {
	h.t.Helper()
	id := h.launch("[[scenario:" + scenario + "]] hi")
	s := h.waitForWithin(id, "the escalation", 3*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.ContextOverflow {
		h.t.Errorf("escalated as %s with %+v, want errored context_overflow", s.State, s.Failure)
	}
	labels := h.labels(id, []string{})
	h.t.Logf("timeline: %s", strings.Join(labels, ", "))
	if !slices.Contains(labels, "state_changed:compacting") || !slices.Contains(labels, "escalated") {
		h.t.Errorf("timeline %s, want a compaction tried and the escalation", strings.Join(labels, ", "))
	}
	return s
}

// overflowRetried waits for session id, whose turn overflows, to be
// compacted and its turn retried to the end (turn generation turns), the
// incident closed with nothing left failed; its timeline is before, then
// the failure and the recovery (compaction, retry). It returns the rows.
func (h *agentE2E) overflowRetried(id string, turns int64, before ...string) []ce2eRow {
	h.t.Helper()
	h.waitFor(id, "the retried turn to complete", ce2eReview(turns))
	// The next tick closes the incident.
	s := h.waitFor(id, "the overflow incident to close", func(s sessions.Session) bool { return s.Supervision.Recovery == "" })
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != turns {
		h.t.Errorf("failure %+v needs_attention %v turn %d after the retry", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
	return h.expectTimeline(id, []string{}, append(before,
		"state_changed:errored", "state_changed:recovering", "overflow_redrive", "state_changed:working",
		"state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:recovering", "overflow_redrive", "state_changed:working", "state_changed:waiting_on_user(review)")...)
}

// e2eAuthRetrySettings shorten the wait between two auth resumes (the
// policy's 5 minutes) to 6 s, for authBudgetSpent.
var e2eAuthRetrySettings = append([]string{"supervisor.auth_retry_minutes", "0.1"}, ce2eFast...)

// authBudgetSpent: a 401 for good spends the whole auth budget, three
// resumes in the same agent session each failing again, then escalates it
// as errored auth (the app started with e2eAuthRetrySettings). The
// escalation may take within.
func (h *agentE2E) authBudgetSpent(within time.Duration) {
	h.t.Helper()
	id := h.launch("[[scenario:401]] hi")
	s := h.waitForWithin(id, "the escalation", within, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		h.t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "escalated")
}

// userInterrupt: `interrupt` stops the turn in flight (the hang scenario,
// which the agent's fake API must stall); a stop the user asked for is a
// review, needing nothing, the agent's process kept (unless it runs a
// process per turn). It returns the session's id.
func (h *agentE2E) userInterrupt() string {
	h.t.Helper()
	id := h.launch("[[scenario:hang]] go")
	h.waitUnderWay(id, "hang")
	h.mustCLI("interrupt", id)
	s := h.waitFor(id, "the stop to be a review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.InTurn || s.NeedsAttention || !h.agent.processPerTurn && !s.ProcessAlive {
		h.t.Errorf("after the interrupt: in_turn %v needs_attention %v alive %v", s.InTurn, s.NeedsAttention, s.ProcessAlive)
	}
	return id
}
