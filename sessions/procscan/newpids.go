package procscan

// MaxNewProbe is the most ids NewProcess looks at one by one; more handed
// out since the last look and a caller lists the table instead.
const MaxNewProbe = 64

// newProcessIn tells whether an id in (from, to] names a process (leader
// tells, for one id, whether it is a process's own pid and not one of its
// threads'), known false when it cannot tell: the ids wrapped around (the
// kernel starts again above its reserved ids, not at from+1) or more than
// limit were handed out.
func newProcessIn(from, to, limit int, leader func(id int) bool) (found, known bool) {
	if from <= 0 || to < from || to-from > limit {
		return false, false
	}
	for id := from + 1; id <= to; id++ {
		if leader(id) {
			return true, true
		}
	}
	return false, true
}
