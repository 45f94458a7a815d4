package codexterm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// benchRollout is every real rollout in testdata, then command rounds
// whose outputs are 256 KB each (a rollout keeps every command's output).
func benchRollout(b *testing.B, rounds int) [][]byte {
	b.Helper()
	return observetest.WithRounds(b, rounds, func(i int, big []byte) [][]byte {
		return [][]byte{
			[]byte(`{"timestamp":"2026-11-30T10:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}`),
			[]byte(fmt.Sprintf(`{"timestamp":"2026-11-30T10:00:00.100Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"make\"}","call_id":"c%d"}}`, i)),
			[]byte(fmt.Sprintf(`{"timestamp":"2026-11-30T10:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":%s}}`, i, big)),
			[]byte(`{"timestamp":"2026-11-30T10:00:05.100Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":12.0,"window_minutes":300,"resets_at":1796076633}}}}`),
			[]byte(`{"timestamp":"2026-11-30T10:00:06.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t","last_agent_message":"ok"}}`),
		}
	})
}

func benchFeed(b *testing.B, rounds int) {
	observetest.BenchFeed(b, benchRollout(b, rounds), func(s *Summary) int { return s.Skipped })
}

// BenchmarkRolloutFeed: the real rollouts plus sixteen 256 KB outputs.
func BenchmarkRolloutFeed(b *testing.B) { benchFeed(b, 16) }

// BenchmarkRolloutFeedSmall is the real rollouts alone: the per-line cost
// of ordinary records (each session_meta carries ~30 KB of instructions).
func BenchmarkRolloutFeedSmall(b *testing.B) { benchFeed(b, 0) }

// BenchmarkDiscovery: a day directory of 1,000 rollouts (each with a real
// ~30 KB session_meta) and live processes to pair; cold is the first scan
// (every meta read), warm a rescan (metas cached, only the directory
// listed).
func BenchmarkDiscovery(b *testing.B) {
	meta := readLines(b, "tui_tool.jsonl")[0]
	for _, live := range []int{1, 20} {
		home := b.TempDir()
		src := &Source{CodexHome: home}
		day := src.today()
		os.MkdirAll(day, 0o755)
		now := time.Now()
		var procs []Proc
		for i := range 1000 {
			id := fmt.Sprintf("01a22e80-0000-0000-0000-%012d", i)
			cwd := fmt.Sprintf("/home/u/p%d", i)
			var rec map[string]any
			if err := json.Unmarshal(meta, &rec); err != nil {
				b.Fatal(err)
			}
			p := rec["payload"].(map[string]any)
			p["id"], p["cwd"], p["timestamp"] = id, cwd, now.UTC().Format(time.RFC3339Nano)
			m, _ := json.Marshal(rec)
			os.WriteFile(filepath.Join(day, "rollout-x-"+id+".jsonl"), append(m, '\n'), 0o644)
			if i < live {
				procs = append(procs, Proc{Proc: observe.Proc{PID: 1000 + i, Cwd: cwd, Started: now.Add(-time.Second)}})
			}
		}
		src.Procs = func() ([]Proc, error) { return procs, nil }
		check := func(b *testing.B) {
			_, pairs, err := src.scan()
			if err != nil || len(pairs) != live {
				b.Fatalf("paired %d of %d: %v", len(pairs), live, err)
			}
		}
		b.Run(fmt.Sprintf("cold/live=%d", live), func(b *testing.B) {
			for b.Loop() {
				src.metas = nil
				src.Rescan()
				check(b)
			}
		})
		b.Run(fmt.Sprintf("warm/live=%d", live), func(b *testing.B) {
			for b.Loop() {
				src.Rescan()
				check(b)
			}
		})
	}
}
