package settings

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/storage"
)

// TestEveryNumericKeyClampsNeverRefuses is the README's promise for every
// number: out of range (0 and negatives included) is clamped to the nearest
// bound and the result says so; it is never an error.
func TestEveryNumericKeyClampsNeverRefuses(t *testing.T) {
	tests := []struct {
		key              string
		low, lowWant     string
		high, highWant   string
		zeroWant         string // what "0" becomes
		zeroClamped      bool
		negative, negWnt string
	}{
		{"supervisor.tick_seconds", "4", "5", "61", "60", "5", true, "-1", "5"},
		{"supervisor.stall_suspect_minutes", "0.001", "0.01", "1441", "1440", "0.01", true, "-3", "0.01"},
		{"supervisor.stall_tool_suspect_minutes", "0.001", "0.01", "1441", "1440", "0.01", true, "-3", "0.01"},
		{"supervisor.stall_hard_minutes", "0.001", "0.01", "10081", "10080", "0.01", true, "-3", "0.01"},
		{"supervisor.nudge_max_attempts", "-1", "0", "11", "10", "0", false, "-7", "0"},
		// 0 is a legitimate cooldown (no wait beyond the next tick).
		{"supervisor.nudge_cooldown_minutes", "-0.5", "0", "1441", "1440", "0", false, "-3", "0"},
		{"supervisor.auth_retry_minutes", "0.001", "0.01", "1441", "1440", "0.01", true, "-3", "0.01"},
		{"supervisor.transient_window_minutes", "0.001", "0.01", "1441", "1440", "0.01", true, "-3", "0.01"},
		{"supervisor.snapshot_interval_seconds", "4", "5", "3601", "3600", "5", true, "-1", "5"},
		{"context_overflow.compact_timeout_seconds", "59", "60", "7201", "7200", "60", true, "-1", "60"},
		{"timeline.retention_days", "29", "30", "3651", "3650", "30", true, "-1", "30"},
		// 0 is legitimate: never archive.
		{"sessions.archive_after_days", "-1", "0", "3651", "3650", "0", false, "-3", "0"},
		// 0 is legitimate: push at once.
		{"notify.push_after_minutes", "-1", "0", "1441", "1440", "0", false, "-3", "0"},
		// 0 is legitimate for every budget: no limit.
		{"budget.session_tokens", "-1", "0", "1000000000001", "1000000000000", "0", false, "-3", "0"},
		{"budget.session_recoveries_per_day", "-1", "0", "10001", "10000", "0", false, "-3", "0"},
		{"budget.daily_tokens", "-1", "0", "1000000000001", "1000000000000", "0", false, "-3", "0"},
		{"budget.daily_recoveries", "-1", "0", "10001", "10000", "0", false, "-3", "0"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.key] = true
	}
	for _, d := range testReg.Defs() {
		if (d.Kind == KindInt || d.Kind == KindMinutes) != covered[d.Key] {
			t.Errorf("%s (%s) is numeric=%v but covered=%v by this table", d.Key, d.Kind, !covered[d.Key], covered[d.Key])
		}
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			s, _ := openTemp(t)
			svc, err := NewService(context.Background(), testReg, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				raw, want string
				clamped   bool
			}{
				{tt.low, tt.lowWant, true},
				{tt.high, tt.highWant, true},
				{"0", tt.zeroWant, tt.zeroClamped},
				{tt.negative, tt.negWnt, true},
			} {
				res, err := svc.Update(context.Background(), tt.key, c.raw)
				if err != nil {
					t.Fatalf("Update(%s) refused: %v", c.raw, err)
				}
				if res.Value != c.want || res.Clamped != c.clamped {
					t.Errorf("Update(%s) = %+v, want %s clamped=%v", c.raw, res, c.want, c.clamped)
				}
				if c.clamped && !strings.Contains(res.Note, "nearest allowed value") {
					t.Errorf("Update(%s): note %q does not say it was clamped", c.raw, res.Note)
				}
				if v, _ := s.GetSetting(context.Background(), tt.key); v != c.want && res.InForce == "" {
					t.Errorf("stored %q, want %q", v, c.want)
				}
			}
		})
	}
}

func TestNudgeCooldownZeroMeansNoCooldown(t *testing.T) {
	s, _ := openTemp(t)
	res, err := s.SetSetting(context.Background(), "supervisor.nudge_cooldown_minutes", "0")
	if err != nil || res.Clamped || res.Value != "0" {
		t.Fatalf("SetSetting(0) = %+v, %v; want 0 stored as given", res, err)
	}
	got, _ := s.LoadSettings(context.Background())
	if got.NudgeCooldown != 0 {
		t.Errorf("NudgeCooldown = %v, want 0", got.NudgeCooldown)
	}
}

// TestCrossKeyFloors: a hard (or tool) stall threshold below the suspect
// threshold is raised to it in force, whatever order the keys were set in,
// and the row's note says why; the stored value stays what was asked.
func TestCrossKeyFloors(t *testing.T) {
	const (
		suspect = "supervisor.stall_suspect_minutes"
		tool    = "supervisor.stall_tool_suspect_minutes"
		hard    = "supervisor.stall_hard_minutes"
	)
	tests := []struct {
		name               string
		sets               [][2]string
		wantHard, wantTool time.Duration
		noteOn             []string
	}{
		{"defaults are consistent", nil, 150 * time.Minute, 30 * time.Minute, nil},
		{"hard below suspect", [][2]string{{hard, "5"}}, 10 * time.Minute, 30 * time.Minute, []string{hard}},
		{"suspect raised above hard and tool", [][2]string{{suspect, "200"}}, 200 * time.Minute, 200 * time.Minute, []string{hard, tool}},
		{"hard first, then suspect lowered", [][2]string{{hard, "0.5"}, {suspect, "0.25"}}, 30 * time.Second, 30 * time.Minute, nil},
		{"suspect first, then hard", [][2]string{{suspect, "0.25"}, {hard, "0.5"}}, 30 * time.Second, 30 * time.Minute, nil},
		{"equal is fine", [][2]string{{hard, "10"}, {tool, "10"}}, 10 * time.Minute, 10 * time.Minute, nil},
	}
	// resolve compares the rules' values as minutes: both sides must be
	// registered minutes settings.
	for _, r := range floorRules {
		for _, k := range []string{r.key, r.floor} {
			if d, err := testReg.lookup(k); err != nil || d.Kind != KindMinutes {
				t.Errorf("floor rule %+v: %s is %v (%v), want a minutes setting", r, k, d.Kind, err)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTemp(t)
			ctx := context.Background()
			svc, err := NewService(ctx, testReg, s)
			if err != nil {
				t.Fatal(err)
			}
			var last SetResult
			for _, kv := range tt.sets {
				if last, err = svc.Update(ctx, kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			got := svc.Get()
			if got.StallHard != tt.wantHard || got.StallToolSuspect != tt.wantTool {
				t.Errorf("in force hard=%v tool=%v, want %v %v", got.StallHard, got.StallToolSuspect, tt.wantHard, tt.wantTool)
			}
			// The store's own reading agrees with the service.
			if fromDisk, _ := s.LoadSettings(ctx); fromDisk.StallHard != got.StallHard || fromDisk.StallToolSuspect != got.StallToolSuspect {
				t.Errorf("LoadSettings disagrees with the service: %+v", fromDisk)
			}
			want := map[string]bool{}
			for _, k := range tt.noteOn {
				want[k] = true
			}
			for _, v := range svc.List() {
				if v.Key != hard && v.Key != tool {
					continue
				}
				hasNote := strings.Contains(v.Note, "is below "+suspect)
				if hasNote != want[v.Key] {
					t.Errorf("%s note %q; want a floor note: %v", v.Key, v.Note, want[v.Key])
				}
			}
			if tt.name == "hard below suspect" {
				if last.Value != "5" || last.InForce != "10" || !strings.Contains(last.Note, "10 is in force") {
					t.Errorf("Update result %+v, want stored 5, in force 10 and a note", last)
				}
			}
		})
	}
}

func TestSettingsServicePersistsAndPublishes(t *testing.T) {
	s, dir := openTemp(t)
	ctx := context.Background()
	svc, err := NewService(ctx, testReg, s)
	if err != nil {
		t.Fatal(err)
	}
	updates, cancel := svc.Subscribe()
	if _, err := svc.Update(ctx, "supervisor.tick_seconds", "30"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Update(ctx, "supervisor.enabled", "off"); err != nil {
		t.Fatal(err)
	}
	// A slow subscriber gets the latest snapshot, not a queue of old ones.
	got := <-updates
	if got.Tick != 30*time.Second || got.Enabled {
		t.Errorf("published %+v, want the latest (tick 30s, disabled)", got)
	}
	select {
	case extra := <-updates:
		t.Errorf("a second, stale snapshot was queued: %+v", extra)
	default:
	}
	if g := svc.Get(); g.Tick != 30*time.Second || g.Enabled {
		t.Errorf("Get = %+v", g)
	}
	cancel()
	if _, ok := <-updates; ok {
		t.Error("channel still open after cancel")
	}
	cancel() // idempotent
	if _, err := svc.Update(ctx, "supervisor.tick_seconds", "20"); err != nil {
		t.Fatalf("Update after a subscriber left: %v", err)
	}

	// Persisted: a new process (a new store and service) sees it.
	s.Close()
	s2, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	svc2, err := NewService(ctx, testReg, s2)
	if err != nil {
		t.Fatal(err)
	}
	if g := svc2.Get(); g.Tick != 20*time.Second || g.Enabled {
		t.Errorf("after reopening: %+v", g)
	}
	res, err := svc2.Reset(ctx, "supervisor.tick_seconds")
	if err != nil || res.Value != "15" || svc2.Get().Tick != 15*time.Second {
		t.Errorf("Reset = %+v, %v; tick %v", res, err, svc2.Get().Tick)
	}
}

// TestSettingsServiceAllOrNothing: one bad value refuses the whole change,
// and a failed write changes nothing in memory.
func TestSettingsServiceAllOrNothing(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	svc, err := NewService(ctx, testReg, s)
	if err != nil {
		t.Fatal(err)
	}
	updates, cancel := svc.Subscribe()
	defer cancel()
	_, err = svc.UpdateMany(ctx, []Change{{"supervisor.tick_seconds", "30"}, {"supervisor.enabled", "maybe"}})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("UpdateMany with a bad value = %v, want ErrInvalid", err)
	}
	if _, err := svc.Update(ctx, "no.such_key", "1"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown key: %v", err)
	}
	if v, _ := s.GetSetting(ctx, "supervisor.tick_seconds"); v != "15" || svc.Get().Tick != 15*time.Second {
		t.Errorf("tick after a refused change: stored %s, in memory %v", v, svc.Get().Tick)
	}
	s.Close() // every write now fails
	if _, err := svc.Update(ctx, "supervisor.tick_seconds", "30"); err == nil {
		t.Fatal("Update on a closed store succeeded")
	}
	if svc.Get().Tick != 15*time.Second {
		t.Errorf("memory changed although the write failed: %v", svc.Get().Tick)
	}
	select {
	case u := <-updates:
		t.Errorf("published %+v for a change that was not stored", u)
	default:
	}
}

// TestSettingsServiceReadersDuringWrites runs readers against writers under
// the race detector: Get and List never see a torn snapshot.
func TestSettingsServiceReadersDuringWrites(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	svc, err := NewService(ctx, testReg, s)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				g := svc.Get()
				// Both keys are always set together below.
				if g.Tick/time.Second != time.Duration(g.NudgeMaxAttempts)+10 && g.Tick != 15*time.Second {
					t.Errorf("torn snapshot: tick %v attempts %d", g.Tick, g.NudgeMaxAttempts)
					return
				}
				_ = g.AgentCommand("claude")
				_ = svc.List()
			}
		}()
	}
	for i := range 10 {
		if _, err := svc.UpdateMany(ctx, []Change{
			{"supervisor.tick_seconds", strconv.Itoa(10 + i)}, {"supervisor.nudge_max_attempts", strconv.Itoa(i)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestNewRegistryAgents(t *testing.T) {
	for _, bad := range [][]Agent{
		{{Name: ""}},
		{{Name: "a.b", DefaultCommand: "x"}},
		{{Name: "x", DefaultCommand: "x"}, {Name: "x", DefaultCommand: "y"}},
		{{Name: "x", DefaultCommand: ""}},
	} {
		if _, err := NewRegistry(bad...); err == nil {
			t.Errorf("NewRegistry(%+v) accepted", bad)
		}
	}
	reg, err := NewRegistry(Agent{"one", "Agent One", "one-cli"}, Agent{"two", "Agent Two", "/opt/two"})
	if err != nil {
		t.Fatal(err)
	}
	keys := reg.Defs()
	n := len(keys)
	if keys[n-2].Key != "agents.one.command" || keys[n-1].Key != "agents.two.command" || keys[n-1].Default != "/opt/two" ||
		!strings.Contains(keys[n-2].Description, "Agent One") {
		t.Errorf("agent keys = %+v", keys[n-2:])
	}
	d := reg.Defaults()
	if d.AgentCommand("one") != "one-cli" || d.AgentCommand("two") != "/opt/two" || d.AgentCommand("claude") != "" {
		t.Errorf("AgentCommands = %v", d.AgentCommands)
	}
}
