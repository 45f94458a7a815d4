package agentkit

// SkipReason says why a line (or a server-sent event) produced no events.
// Every adapter's decoder reports it in its line or event info.
type SkipReason string

// The skip reasons. SkipNone is the zero value: the line was decoded.
const (
	SkipNone      SkipReason = ""
	SkipEmpty     SkipReason = "empty"
	SkipMalformed SkipReason = "malformed"
	SkipUnknown   SkipReason = "unknown"
	SkipOversize  SkipReason = "oversize"
)
