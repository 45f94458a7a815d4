//go:build benchusage && linux

package claudeterm

// make bench-usage: the cold scan of a gigabyte of generated transcripts
// against ccusage 17.2.1 on the same directory in the same run, each in a
// process of its own so its time and peak RSS are its alone. Not in make
// test: generating the directory takes a minute and ccusage two.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// scanChildEnv names the directory a re-executed test binary scans.
const scanChildEnv = "USAGE_SCAN_CHILD_DIR"

// TestMain is the scan's own process when re-executed by the benchmark:
// only the scan runs in it, its result on stdout.
func TestMain(m *testing.M) {
	if dir := os.Getenv(scanChildEnv); dir != "" {
		paths, err := TranscriptFiles(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		tally, st := ScanUsage(paths, runtime.NumCPU())
		json.NewEncoder(os.Stdout).Encode(scanResult{Usage: tally.Usage, Messages: tally.Messages, Stats: st})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type scanResult struct {
	Usage    sessions.Usage
	Messages int
	Stats    ScanStats
}

// measured is one process's wall time and peak RSS.
type measured struct {
	wall time.Duration
	cpu  time.Duration // user and system
	rss  float64       // MB
	out  []byte
}

func measure(t *testing.T, cmd *exec.Cmd) measured {
	t.Helper()
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return measured{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss: float64(ru.Maxrss) / 1024, out: out}
}

// ccusageDaily is the part of `ccusage daily --json` compared.
type ccusageDaily struct {
	Daily []struct {
		ModelBreakdowns []struct {
			ModelName           string `json:"modelName"`
			InputTokens         int64  `json:"inputTokens"`
			OutputTokens        int64  `json:"outputTokens"`
			CacheCreationTokens int64  `json:"cacheCreationTokens"`
			CacheReadTokens     int64  `json:"cacheReadTokens"`
		} `json:"modelBreakdowns"`
	} `json:"daily"`
}

func TestBenchUsageColdScan(t *testing.T) {
	files, total := 1000, int64(1<<30)
	if v, err := strconv.Atoi(os.Getenv("BENCH_USAGE_MB")); err == nil && v > 0 {
		total = int64(v) << 20
	}
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ccusage := filepath.Join(root, ".cache", "ccusage-ref", "node_modules", "ccusage", "dist", "index.js")
	if _, err := os.Stat(ccusage); err != nil {
		t.Fatalf("ccusage 17.2.1 is not installed (make bench-usage installs it): %v", err)
	}
	dir := t.TempDir()
	start := time.Now()
	truth, err := generateTranscripts(dir, files, total, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d transcripts, %.0f MB, %d lines, %d messages in %s", truth.Files, float64(truth.Bytes)/(1<<20), truth.Lines, truth.Messages, time.Since(start).Round(time.Millisecond))

	self, _ := os.Executable()
	scan := exec.Command(self)
	scan.Env = append(os.Environ(), scanChildEnv+"="+dir)
	ours := measure(t, scan)
	var res scanResult
	if err := json.Unmarshal(ours.out, &res); err != nil {
		t.Fatalf("the scan's output: %v", err)
	}

	cc := exec.Command("node", ccusage, "daily", "--json", "--offline")
	cc.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+dir)
	theirs := measure(t, cc)
	var daily ccusageDaily
	if err := json.Unmarshal(theirs.out, &daily); err != nil {
		t.Fatalf("ccusage's output: %v", err)
	}
	ccUsage := sessions.Usage{}
	for _, d := range daily.Daily {
		for _, b := range d.ModelBreakdowns {
			ccUsage = ccUsage.Add(b.ModelName, sessions.Tokens{Input: b.InputTokens, Output: b.OutputTokens, CacheWrite: b.CacheCreationTokens, CacheRead: b.CacheReadTokens})
		}
	}

	t.Logf("cold scan: %s (CPU %s), peak RSS %.1f MB (%d files, %d huge lines, %d malformed, %d failed)",
		ours.wall.Round(time.Millisecond), ours.cpu.Round(time.Millisecond), ours.rss, res.Stats.Files, res.Stats.Huge, res.Stats.Malformed, res.Stats.Failed)
	t.Logf("ccusage 17.2.1 daily --json --offline: %s (CPU %s), peak RSS %.1f MB", theirs.wall.Round(time.Millisecond), theirs.cpu.Round(time.Millisecond), theirs.rss)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average during the run: %s", load)
	}
	for _, m := range truth.Final.Models() {
		t.Logf("%-28s ours %+v", m, res.Usage[m])
		t.Logf("%-28s ccusage %+v", "", ccUsage[m])
	}
	if !usageEqual(res.Usage, truth.Final) || res.Messages != truth.Messages {
		t.Errorf("the scan counted %v in %d messages, the generator wrote %v in %d", res.Usage, res.Messages, truth.Final, truth.Messages)
	}
	// ccusage keeps each message's first line: the same input and cache
	// counts, and the output of the first line of a streamed message.
	if !usageEqual(ccUsage, truth.FirstLine) {
		t.Errorf("ccusage counted %v, its first-line rule gives %v", ccUsage, truth.FirstLine)
	}
	var outOurs, outTheirs int64
	for m, tk := range res.Usage {
		outOurs += tk.Output
		outTheirs += ccUsage[m].Output
	}
	t.Logf("output tokens: ours %d, ccusage %d (%.1f%% lower: streamed messages' first lines)", outOurs, outTheirs, 100*(1-float64(outTheirs)/float64(outOurs)))
	if total == 1<<30 {
		if ours.wall > 1500*time.Millisecond || ours.rss > 80 {
			t.Errorf("the cold scan took %s and %.1f MB, over 1.5 s or 80 MB", ours.wall, ours.rss)
		}
	}
	if ours.wall >= theirs.wall {
		t.Errorf("the cold scan (%s) is not faster than ccusage (%s)", ours.wall, theirs.wall)
	}
}
