package sessions

import "testing"

func TestFailureKindTransient(t *testing.T) {
	for k, want := range map[FailureKind]bool{
		NoFailure: false, RateLimit: false, Overloaded: true, Network: true,
		ContextOverflow: false, Auth: false, Billing: false, OtherFailure: false,
	} {
		if got := k.Transient(); got != want {
			t.Errorf("%v.Transient() = %v, want %v", k, got, want)
		}
	}
}

// The error lines agent CLIs print for a connection that failed or dropped
// (Claude Code's measured with the fake API; Node's codes), and lines that
// merely look alike.
func TestConnectionErrorText(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"API Error: Unable to connect to API (ECONNRESET)", true},
		{"API Error: Connection to the API was lost (ECONNRESET). This is usually temporary — try again.", true},
		{"API Error: Unable to connect to API (ECONNREFUSED)", true},
		{"connect ETIMEDOUT 160.79.104.10:443", true},
		{"getaddrinfo ENOTFOUND api.anthropic.com", true},
		{"getaddrinfo EAI_AGAIN api.anthropic.com", true},
		{"API Error: Request timed out.", true},
		{"API Error: Connection error.", true},
		{"socket hang up", true},
		{"stream disconnected before completion: error sending request", true},
		{"TypeError: fetch failed", true},
		{"", false},
		{"API Error: 500 Internal server error", false},
		{"Invalid API key · Fix external API key", false},
		{"prompt is too long: 250000 tokens > 200000 maximum", false},
		{"You've hit your session limit · resets 3:45pm", false},
	}
	for _, tt := range tests {
		if got := ConnectionErrorText(tt.text); got != tt.want {
			t.Errorf("ConnectionErrorText(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
