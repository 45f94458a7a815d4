package doctor

import "fmt"

// Machine is what asking another machine's supervisor found: its name and
// ssh target, and either its answer (version, loop health, sessions) or
// the error and what to do about it.
type Machine struct {
	Name, Target string
	Version      string
	Health       string
	Sessions     int
	Err, Fix     string
}

// CheckMachine is one machine's line. A machine that cannot be reached
// warns: this machine's supervisor is fine, and the other may only be
// asleep.
func CheckMachine(m Machine) Check {
	ch := Check{Name: "machine " + m.Name}
	switch {
	case m.Err != "":
		ch.Status, ch.Detail, ch.Fix = Warn, fmt.Sprintf("%s: %s", m.Target, m.Err), m.Fix
	case m.Health != "" && m.Health != "ok":
		ch.Status = Warn
		ch.Detail = fmt.Sprintf("%s: app %s answers, but its supervisor loop is %s", m.Target, m.Version, m.Health)
		ch.Fix = fmt.Sprintf("run doctor on %s", m.Name)
	default:
		ch.Status = OK
		ch.Detail = fmt.Sprintf("%s: app %s, supervisor healthy, %s", m.Target, m.Version, plural(m.Sessions, "session"))
	}
	return ch
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
