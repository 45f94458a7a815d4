package requiretool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAny(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "present")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("E2E_REQUIRED", "")
	t.Setenv("CI", "")
	if got := Any(t, "absent", "present"); got != prog {
		t.Errorf("Any = %q, want the first one found, %q", got, prog)
	}
	for _, tc := range []struct {
		name, required  string
		failed, skipped bool
	}{
		{"skips where not required", "", false, true},
		{"fails where required", "1", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("E2E_REQUIRED", tc.required)
			r := &ending{TB: t}
			Any(r, "absent")
			if r.failed != tc.failed || r.skipped != tc.skipped {
				t.Errorf("failed %v skipped %v, want %v %v", r.failed, r.skipped, tc.failed, tc.skipped)
			}
		})
	}
}

// ending records how Any ends its test. The real Fatal and Skip stop the
// test's goroutine; these return, so only the first counts.
type ending struct {
	testing.TB
	failed, skipped bool
}

func (e *ending) Helper() {}

func (e *ending) Fatal(...any) { e.failed = !e.skipped }

func (e *ending) Skip(...any) { e.skipped = !e.failed }
