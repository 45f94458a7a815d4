package claude

import (
	"encoding/binary"
	"testing"
	"time"
)

func TestLivenessString(t *testing.T) {
	for l, want := range map[liveness]string{
		livenessUnknown: "unknown", livenessRunning: "running", livenessGone: "gone", liveness(7): "liveness(7)",
	} {
		if l.String() != want {
			t.Errorf("%d: %q, want %q", int(l), l.String(), want)
		}
	}
}

// TestJudge: what Alive answers for a sequence of observations. Unknown is
// never "alive"; gone is unknown for exitGrace (the exit event is due),
// then known dead; the same pid with another start time is someone else's.
func TestJudge(t *testing.T) {
	type step struct {
		at           time.Duration
		obs          probe
		alive, known bool
	}
	running := func(ident uint64) probe { return probe{state: livenessRunning, ident: ident} }
	gone := probe{state: livenessGone}
	cases := []struct {
		name  string
		steps []step
	}{
		{"running", []step{{0, running(10), true, true}, {time.Minute, running(10), true, true}}},
		{"running without identity", []step{{0, running(0), true, true}}},
		{"unknown is never alive", []step{{0, probe{}, false, false}, {time.Hour, probe{}, false, false}}},
		{"gone: grace, then dead", []step{
			{0, running(10), true, true},
			{time.Second, gone, false, false},
			{time.Second + exitGrace - time.Millisecond, gone, false, false},
			{time.Second + exitGrace, gone, false, true},
		}},
		{"back from gone resets the grace", []step{
			{0, gone, false, false},
			{time.Second, running(0), true, true},
			{exitGrace + time.Second, gone, false, false},
		}},
		{"unknown between gone keeps the grace clock", []step{
			{0, gone, false, false},
			{time.Second, probe{}, false, false},
			{exitGrace, gone, false, true},
		}},
		{"pid reused by another process", []step{
			{0, running(10), true, true},
			{time.Second, running(99), false, false},
			{time.Second + exitGrace, running(99), false, true},
		}},
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Process{}
			for i, s := range tc.steps {
				alive, known := p.judge(s.obs, base.Add(s.at))
				if alive != s.alive || known != s.known {
					t.Fatalf("step %d (%v at %v): Alive = %v, %v; want %v, %v", i, s.obs.state, s.at, alive, known, s.alive, s.known)
				}
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	// Fields after the name: state, ppid, pgrp, session, tty, tpgid, flags,
	// minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime,
	// priority, nice, threads, itrealvalue, starttime, ...
	tail := " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 8192 100"
	cases := []struct {
		name, line string
		want       probe
	}{
		{"sleeping", "42 (claude) S" + tail, probe{livenessRunning, 123456}},
		{"running", "42 (node) R" + tail, probe{livenessRunning, 123456}},
		{"zombie", "42 (claude) Z" + tail, probe{state: livenessGone}},
		{"dead", "42 (claude) X" + tail, probe{state: livenessGone}},
		{"name with parentheses and spaces", "42 (a) Z (b) S" + tail, probe{livenessRunning, 123456}},
		{"short line", "42 (claude) S 1", probe{state: livenessRunning}},
		{"no name", "garbage", probe{}},
		{"no state", "42 (claude)", probe{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseProcStat([]byte(tc.line)); got != tc.want {
				t.Errorf("parseProcStat(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
}

func TestParseKinfoProc(t *testing.T) {
	kinfo := func(pid int32, stat byte, sec uint64, usec uint32) []byte {
		b := make([]byte, kinfoProcSize)
		binary.LittleEndian.PutUint64(b[kinfoStartSecOff:], sec)
		binary.LittleEndian.PutUint32(b[kinfoStartUsecOff:], usec)
		b[kinfoStatOff] = stat
		binary.LittleEndian.PutUint32(b[kinfoPIDOff:], uint32(pid))
		return b
	}
	const sRun, sSleep = 2, 3
	cases := []struct {
		name string
		b    []byte
		want probe
	}{
		{"no such process: an empty answer", nil, probe{state: livenessGone}},
		{"running", kinfo(42, sRun, 1700000000, 250), probe{livenessRunning, 1700000000_000250}},
		{"sleeping", kinfo(42, sSleep, 5, 0), probe{livenessRunning, 5_000000}},
		{"zombie", kinfo(42, kinfoStatZombie, 5, 0), probe{state: livenessGone}},
		{"another pid answered", kinfo(43, sRun, 5, 0), probe{}},
		{"truncated", kinfo(42, sRun, 5, 0)[:20], probe{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseKinfoProc(tc.b, 42); got != tc.want {
				t.Errorf("parseKinfoProc = %+v, want %+v", got, tc.want)
			}
		})
	}
}
