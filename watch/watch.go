// Package watch adapts fsnotify to the small notification contract the
// external sources use (terminal.Notify): "something changed in one of
// these directories". It keeps the third-party dependency out of sessions/,
// which uses the standard library only.
package watch

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// retryMissing is how often a directory that does not exist yet (Claude's
// sessions directory before its first interactive run) is looked for again.
const retryMissing = 2 * time.Second

// Dirs sends a value after every change in one of dirs. A directory that
// does not exist yet is watched as soon as it appears (its nearest existing
// ancestor is watched meanwhile, and it is looked for again every
// retryMissing while one is missing). The
// channel has room for one pending value: notifications coalesce, which is
// all a rescan needs. It is closed when ctx ends.
func Dirs(ctx context.Context, dirs []string) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("starting a file watcher: %w", err)
	}
	out := make(chan struct{}, 1)
	watched := map[string]bool{}
	add := func() (missing bool) {
		for _, d := range dirs {
			if watched[d] {
				continue
			}
			if err := w.Add(d); err == nil {
				watched[d] = true
				continue
			}
			missing = true
			// Watch the nearest ancestor that exists: its change (the
			// next directory down being created) brings the next add.
			for p := filepath.Dir(d); ; p = filepath.Dir(p) {
				if watched[p] {
					break
				}
				if w.Add(p) == nil {
					watched[p] = true
					break
				}
				if p == filepath.Dir(p) {
					break
				}
			}
		}
		return missing
	}
	missing := add()
	go func() {
		defer close(out)
		defer w.Close()
		// The retry is armed only while a directory is missing: a watch
		// of directories that all exist costs nothing while nothing
		// changes.
		t := time.NewTimer(retryMissing)
		defer t.Stop()
		notify := func() {
			select {
			case out <- struct{}{}:
			default:
			}
		}
		for {
			var retry <-chan time.Time
			if missing {
				t.Reset(retryMissing)
				retry = t.C
			}
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				if missing {
					missing = add()
				}
				notify()
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflow loses events: tell the reader to rescan.
				notify()
			case <-retry:
				if missing {
					if missing = add(); !missing {
						notify()
					}
				}
			}
		}
	}()
	return out, nil
}
