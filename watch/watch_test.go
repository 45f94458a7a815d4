package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func expect(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatalf("no notification within a second after %s", what)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// A directory that does not exist yet is watched once it appears (Claude's
// sessions directory before the first interactive run), and a change in it
// is reported within a second.
func TestDirsWatchesADirectoryThatAppearsLater(t *testing.T) {
	root := t.TempDir()
	// Two levels missing, as ~/.claude/sessions before Claude's first run.
	dir := filepath.Join(root, ".claude", "sessions")
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := Dirs(ctx, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "the directory was created")
	drain(ch)
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "0.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "a file was written in the new directory")
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("the new directory was watched only after %s", d)
	}
	drain(ch)
	if err := os.WriteFile(filepath.Join(dir, "1.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "a file was written in it")
	drain(ch)
	os.Remove(filepath.Join(dir, "1.json"))
	expect(t, ch, "a file was removed")
	cancel()
	for range ch {
	}
}
