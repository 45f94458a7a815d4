package doctor

import (
	"strings"
	"testing"
)

func TestCheckMachine(t *testing.T) {
	tests := []struct {
		name   string
		m      Machine
		status Status
		detail string
		fix    string
	}{
		{"answers", Machine{Name: "dev", Target: "me@dev", Version: "1.2", Health: "ok", Sessions: 3}, OK, "me@dev: app 1.2, supervisor healthy, 3 sessions", ""},
		{"one session", Machine{Name: "dev", Target: "dev", Version: "1.2", Health: "ok", Sessions: 1}, OK, "1 session", ""},
		{"stalled", Machine{Name: "dev", Target: "dev", Version: "1.2", Health: "stalled"}, Warn, "loop is stalled", "run doctor on dev"},
		{"unreachable", Machine{Name: "dev", Target: "dev", Err: "machine dev: Permission denied (publickey).", Fix: "make 'ssh dev true' work"}, Warn, "Permission denied", "make 'ssh dev true' work"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := CheckMachine(tt.m)
			if ch.Name != "machine "+tt.m.Name || ch.Status != tt.status || !strings.Contains(ch.Detail, tt.detail) || ch.Fix != tt.fix {
				t.Errorf("CheckMachine = %+v; want status %v, detail with %q, fix %q", ch, tt.status, tt.detail, tt.fix)
			}
		})
	}
}
