// Package watch adapts fsnotify to the small notification contract the
// external sources use (terminal.Notify): "something changed in one of
// these directories". It keeps the third-party dependency out of sessions/,
// which uses the standard library only.
package watch

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Dirs sends a value after every change in one of dirs. A directory that
// does not exist yet is watched as soon as it appears: its nearest
// existing ancestor is watched meanwhile, and each directory created on
// the way down brings the next watch. No timer runs: a watch of
// directories costs nothing while nothing changes in them. The channel has
// room for one pending value: notifications coalesce, which is all a
// rescan needs. It is closed when ctx ends.
func Dirs(ctx context.Context, dirs []string) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("starting a file watcher: %w", err)
	}
	out := make(chan struct{}, 1)
	watched := map[string]bool{}
	add := func() (missing bool) {
		for _, d := range dirs {
			if !watchOrAncestor(w.Add, watched, d) {
				missing = true
			}
		}
		return missing
	}
	missing := add()
	go func() {
		defer close(out)
		defer w.Close()
		notify := func() {
			select {
			case out <- struct{}{}:
			default:
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					// A watched directory removed or moved away has lost
					// its watch: it is missing again, its parent watched
					// for its return.
					if watched[ev.Name] {
						delete(watched, ev.Name)
						missing = true
					}
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
			}
		}
	}()
	return out, nil
}

// watchOrAncestor watches d, else its nearest ancestor that exists, and
// reports whether d itself is watched. A directory created below that
// ancestor before its watch was in place sends no event, so each new watch
// of an ancestor is followed by another look from d down: what the watch
// missed is found then, and what comes later is its event.
func watchOrAncestor(add func(string) error, watched map[string]bool, d string) bool {
	for {
		if watched[d] {
			return true
		}
		if add(d) == nil {
			watched[d] = true
			return true
		}
		added := false
		for p := filepath.Dir(d); !watched[p]; p = filepath.Dir(p) {
			if add(p) == nil {
				watched[p], added = true, true
				break
			}
			if p == filepath.Dir(p) {
				break
			}
		}
		if !added {
			return false
		}
	}
}
