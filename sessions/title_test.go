package sessions

import (
	"strings"
	"testing"
)

func TestPromptTitle(t *testing.T) {
	cases := []struct{ prompt, want string }{
		{"Shared preamble for every agent.\nYou are the posting rule auditor.\nRead ledger/posting.ts", "the posting rule auditor"},
		{"Shared preamble.\nLane 2 — period boundary regression sweep\nrun the tests", "Lane 2 — period boundary regression sweep"},
		{"Shared preamble.\n# Currency rounding on multi-leg reversals\nfix it", "Currency rounding on multi-leg reversals"},
		{"fix the build", "fix the build"},
		{"", ""},
		{strings.Repeat("a", 100), strings.Repeat("a", 59) + "…"},
	}
	for _, tc := range cases {
		if got := PromptTitle(tc.prompt); got != tc.want {
			t.Errorf("PromptTitle(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one too long", 11, "one too lo…"},
		{"héllo wörld", 6, "héllo…"},
		{"", 3, ""},
	}
	for _, tc := range cases {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
