package enum

import "testing"

type color int

const (
	red color = iota + 1
	green
)

var colorNames = []string{red: "red", green: "green"}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		v    color
		want string
	}{
		{red, "red"},
		{green, "green"},
		{0, "color(0)"},   // the empty entry of a type that starts at 1
		{3, "color(3)"},   // past the table
		{-1, "color(-1)"}, // before it
	} {
		if got := Name(tc.v, "color", colorNames); got != tc.want {
			t.Errorf("Name(%d) = %q, want %q", int(tc.v), got, tc.want)
		}
	}
}
