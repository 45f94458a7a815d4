package procscan

import "testing"

// newProcessIn over ids handed out: a process among them is found, threads
// and gone ids are not, and what it cannot tell (a wrap, too many ids, an
// unknown start) it says so.
func TestNewProcessIn(t *testing.T) {
	procs := map[int]bool{105: true}
	leader := func(id int) bool { return procs[id] }
	cases := []struct {
		name         string
		from, to     int
		found, known bool
	}{
		{"nothing handed out", 100, 100, false, true},
		{"threads or gone processes", 105, 110, false, true},
		{"a process among them", 100, 110, true, true},
		{"the last id is the process", 104, 105, true, true},
		{"as many as the limit", 100, 100 + 64, true, true},
		{"more than the limit", 100, 100 + 65, false, false},
		{"wrapped around", 32000, 301, false, false},
		{"no start", 0, 110, false, false},
	}
	for _, c := range cases {
		found, known := newProcessIn(c.from, c.to, 64, leader)
		if found != c.found || known != c.known {
			t.Errorf("%s: newProcessIn(%d, %d) = %v, %v; want %v, %v", c.name, c.from, c.to, found, known, c.found, c.known)
		}
	}
}
