package sessions

import (
	"regexp"
	"testing"
)

// The version and variant bits are set, the form is the usual one, and
// two ids differ.
func TestNewUUID(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewUUID()
		if !form.MatchString(id) {
			t.Fatalf("NewUUID() = %q: not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewUUID() returned %q twice", id)
		}
		seen[id] = true
	}
}
