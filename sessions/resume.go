package sessions

import "fmt"

// WhyNotResumable says why s cannot be resumed in the background as a
// managed session ("" when it can): a session the app did not launch, whose
// process is gone, that was interrupted or failed, and whose agent session
// id is known. The runtime refuses with this reason and the views offer
// "Resume in the background" exactly when it is "": one rule for both.
func WhyNotResumable(s Session) string {
	switch {
	case s.Source == Managed:
		return "it was launched by the app: send it a prompt or a nudge instead"
	case s.InTurn || s.ProcessAlive:
		return "its process still runs in its terminal"
	case s.State != Interrupted && s.State != Errored:
		return fmt.Sprintf("it is %s, not interrupted or failed", s.State.Label())
	case s.AgentSessionID == "":
		return "the agent's own session id is unknown"
	case s.SharedWith != "":
		return fmt.Sprintf("its conversation runs in session %s already", ShortID(s.SharedWith))
	}
	return ""
}

// WhyNoHandover says why s cannot be continued in a terminal ("Continue in
// terminal") ("" when it can, as far as the session tells): a session the
// app launched, whose agent session id is known, that no other process
// runs. The runtime refuses with this reason and the views offer the
// action exactly when it is "".
func WhyNoHandover(s Session) string {
	switch {
	case s.Source != Managed:
		return "it runs in a terminal already"
	case s.AgentSessionID == "":
		return "the agent's own session id is not known yet (its first turn has not started)"
	case s.SharedWith != "":
		return fmt.Sprintf("its conversation runs in session %s already", ShortID(s.SharedWith))
	}
	return ""
}
