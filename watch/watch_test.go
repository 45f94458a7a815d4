package watch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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

// A watched directory removed and made again is watched again: its
// parent's watch brings it back, with no timer looking for it.
func TestDirsWatchesADirectoryMadeAgain(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := Dirs(ctx, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "the directory was removed")
	drain(ch)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "the directory was made again")
	drain(ch)
	if err := os.WriteFile(filepath.Join(dir, "0.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "a file was written in the directory made again")
}

// watchOrAncestor, with the directories that exist as a set: a directory
// made below an ancestor just before that ancestor's watch was in place
// (no event will come for it) is found by the look that follows.
func TestWatchOrAncestor(t *testing.T) {
	cases := []struct {
		name    string
		exists  []string
		appears map[string]string // a watch of key makes value exist (the race)
		want    bool
		watched []string
	}{
		{name: "exists", exists: []string{"/", "/h", "/h/.c", "/h/.c/s"}, want: true, watched: []string{"/h/.c/s"}},
		{name: "two levels missing", exists: []string{"/", "/h"}, want: false, watched: []string{"/h"}},
		{name: "made while the parent's watch was added", exists: []string{"/", "/h", "/h/.c"},
			appears: map[string]string{"/h/.c": "/h/.c/s"}, want: true, watched: []string{"/h/.c", "/h/.c/s"}},
		{name: "both made on the way", exists: []string{"/", "/h"},
			appears: map[string]string{"/h": "/h/.c", "/h/.c": "/h/.c/s"}, want: true, watched: []string{"/h", "/h/.c", "/h/.c/s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exists := map[string]bool{}
			for _, d := range c.exists {
				exists[d] = true
			}
			add := func(d string) error {
				if !exists[d] {
					return os.ErrNotExist
				}
				if next, ok := c.appears[d]; ok {
					exists[next] = true
				}
				return nil
			}
			watched := map[string]bool{}
			if got := watchOrAncestor(add, watched, "/h/.c/s"); got != c.want {
				t.Fatalf("watched itself: %v, want %v", got, c.want)
			}
			var got []string
			for d := range watched {
				got = append(got, d)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.watched) {
				t.Fatalf("watched %v, want %v", got, c.watched)
			}
		})
	}
}
