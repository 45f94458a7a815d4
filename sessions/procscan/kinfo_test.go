package procscan

import (
	"encoding/binary"
	"testing"
	"time"
)

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
	running := func(stamp string, started time.Time) Proc { return Proc{PID: 42, Stamp: stamp, Started: started} }
	cases := []struct {
		name  string
		b     []byte
		want  Proc
		state State
	}{
		{"no such process: an empty answer", nil, Proc{PID: 42}, Gone},
		{"running", kinfo(42, sRun, 1700000000, 250), running("1700000000000250", time.Unix(1700000000, 250_000)), Running},
		{"sleeping", kinfo(42, sSleep, 5, 0), running("5000000", time.Unix(5, 0)), Running},
		{"zombie", kinfo(42, kinfoStatZombie, 5, 0), Proc{PID: 42}, Gone},
		{"another pid answered", kinfo(43, sRun, 5, 0), Proc{PID: 42}, Unknown},
		{"truncated", kinfo(42, sRun, 5, 0)[:20], Proc{PID: 42}, Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, st := parseKinfoProc(tc.b, 42)
			if st != tc.state || got.PID != tc.want.PID || got.Stamp != tc.want.Stamp || !got.Started.Equal(tc.want.Started) {
				t.Errorf("parseKinfoProc = %+v %v, want %+v %v", got, st, tc.want, tc.state)
			}
		})
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{
		Unknown: "unknown", Running: "running", Gone: "gone", State(7): "state(?)",
	} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s.String(), want)
		}
	}
}
