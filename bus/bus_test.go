package bus

import "testing"

func TestBusCursorFormatAndParse(t *testing.T) {
	good := []struct {
		in   string
		want Cursor
	}{
		{"a1b2:0", Cursor{"a1b2", 0}},
		{"a1b2:42", Cursor{"a1b2", 42}},
		{"g:18446744073709551615", Cursor{"g", 1<<64 - 1}},
	}
	for _, tc := range good {
		got, err := ParseCursor(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("%+v.String() = %q, want %q", got, s, tc.in)
		}
	}
	for _, in := range []string{"", "a1b2", ":5", "a1b2:", "a1b2:-1", "a1b2:x", "a1b2:1:2", "a1b2:18446744073709551616"} {
		if c, err := ParseCursor(in); err == nil {
			t.Errorf("ParseCursor(%q) = %+v, want an error", in, c)
		}
	}
}
