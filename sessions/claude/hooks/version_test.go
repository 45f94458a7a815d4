package hooks

import "testing"

func TestCheckVersion(t *testing.T) {
	cases := []struct {
		out       string
		ok, known bool
	}{
		{"2.1.328 (Claude Code)", true, true},
		{"2.1.122 (Claude Code)", true, true},
		{"2.1.121 (Claude Code)", false, true},
		{"2.0.999", false, true},
		{"3.0.0", true, true},
		{"1.9.0 (Claude Code)\n", false, true},
		{"", true, false},
		{"claude: command not found", true, false},
		{"2.1", true, false},
	}
	for _, tc := range cases {
		ok, known, err := CheckVersion(tc.out)
		if ok != tc.ok || known != tc.known || (err != nil) == ok {
			t.Errorf("%q: ok %v known %v err %v; want %v %v", tc.out, ok, known, err, tc.ok, tc.known)
		}
	}
}
