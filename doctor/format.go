package doctor

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Print writes the report for people: a heading, one aligned line per
// check with its fix under each that is not ok, and a one-line summary.
func Print(w io.Writer, rep Report) {
	failed, warned := rep.Counts()
	fmt.Fprintf(w, "Session Supervisor %s, data directory %s\n\n", rep.Version, rep.DataDir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ch := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Status, ch.Name, ch.Detail)
		if ch.Fix != "" && ch.Status != OK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", ch.Fix)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	switch {
	case failed > 0:
		fmt.Fprintf(w, "%d check(s) failed and %d warning(s): run the fix under each failed check.\n", failed, warned)
	case warned > 0:
		fmt.Fprintf(w, "Nothing is broken; %d warning(s) above.\n", warned)
	default:
		fmt.Fprintln(w, "Everything is in order.")
	}
}
