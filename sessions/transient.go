package sessions

import "strings"

// Transient reports whether a failure of this kind is expected to clear by
// itself with time: the network or the provider's servers, not the request,
// the account or the conversation. The supervisor waits such failures out
// (retrying with backoff over a window) instead of escalating them.
func (k FailureKind) Transient() bool { return k == Network || k == Overloaded }

// connectionMarkers are the phrasings of a connection-level failure in the
// error text agent CLIs print: Node's and libc's error codes, and the
// sentences Claude Code and other CLIs wrap them in. They are matched in
// lower case.
var connectionMarkers = []string{
	"econnreset", "econnrefused", "econnaborted", "etimedout", "enotfound", "eai_again",
	"enetunreach", "enetdown", "ehostunreach", "epipe",
	"unable to connect", "connection to the api was lost", "connection error", "connection reset",
	"connection refused", "connection closed", "network error", "network is unreachable",
	"socket hang up", "timed out",
	"stream disconnected", "stream error", "fetch failed",
}

// ConnectionErrorText reports whether an agent's error text describes a
// failure to reach the API or a connection that dropped (a network outage,
// a stream cut), rather than an answer the API gave. Adapters use it when
// the failure carries no HTTP status.
func ConnectionErrorText(text string) bool {
	lower := strings.ToLower(text)
	for _, m := range connectionMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}
