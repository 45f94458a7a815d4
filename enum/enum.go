// Package enum names the values of the module's typed enums. Each type keeps
// its words in a table indexed by its values (a keyed array literal where
// the type starts at 1), and its String method asks Name, so that a value no
// build names (a corrupt row, a newer peer) reads the same way everywhere:
// the type's name and the number, never an empty word or a panic.
package enum

import "strconv"

// Name returns names[v], or "typ(v)" for a value the table does not name:
// out of its range, or an empty entry (the zero value of a type whose
// values start at 1).
func Name[T ~int](v T, typ string, names []string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}
