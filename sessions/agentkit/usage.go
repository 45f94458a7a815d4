package agentkit

import "github.com/session-supervisor/session-supervisor/sessions"

// UsageOnce counts each message's usage once when an agent prints it again
// and again (Claude once per content block, OpenCode at each update of the
// message), whatever other messages' lines come between: it remembers what
// each recent message id counted so far. The zero value is ready to use.
type UsageOnce struct {
	counted map[string]sessions.Tokens
}

// Delta turns a message's usage report (the message's usage so far) into
// what it adds to that message's earlier reports, as a sessions.UsageDelta;
// nil when it adds nothing. A report without a message id is returned as
// it is.
func (o *UsageOnce) Delta(r *sessions.UsageReport) *sessions.UsageReport {
	if r == nil || r.MessageID == "" {
		return r
	}
	prev := o.counted[r.MessageID]
	grown := r.Tokens.Sub(prev)
	if grown.IsZero() {
		return nil
	}
	o.counted = Remember(o.counted, r.MessageID, prev.Add(grown))
	r.Tokens, r.Mode = grown, sessions.UsageDelta
	return r
}
