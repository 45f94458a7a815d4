package supervisor

import (
	"context"
	"log/slog"
	"sync"

	"github.com/session-supervisor/session-supervisor/storage"
)

// batchStore is the optional Store capability to write many changes in one
// transaction. Without it the writer falls back to one write per change.
type batchStore interface {
	SaveBatch(ctx context.Context, items []storage.BatchItem) ([][]int64, error)
}

// writeResult is what a caller waiting on a write learns: the ids assigned
// to its rows, or why they are not on disk yet.
type writeResult struct {
	ids []int64
	err error
}

// writeReq is one submitted change. done, when set, receives the result of
// the first attempt (buffered: the writer never blocks on a caller).
type writeReq struct {
	item storage.BatchItem
	done chan writeResult
}

// writer is the runtime's only path to SQLite for changes. Callers submit
// under the runtime's lock (so changes reach the disk in the order they were
// decided) without ever waiting for the disk there; a goroutine, alive only
// while work is queued, drains everything queued since its last round into
// one transaction. A failed round (a full disk) keeps its items and retries
// them first, at the next submit or kick, so nothing recorded is lost and
// the order holds.
type writer struct {
	store Store
	log   *slog.Logger

	mu      sync.Mutex
	queue   []writeReq
	retry   []writeReq // a failed round, written before anything newer
	idle    *sync.Cond // signalled whenever a round ends
	running bool
	failing bool
}

func newWriter(store Store, log *slog.Logger) *writer {
	w := &writer{store: store, log: log}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// submit queues a change and returns at once. The returned channel (nil
// unless wait) receives the outcome of the first attempt to write it.
func (w *writer) submit(item storage.BatchItem, wait bool) <-chan writeResult {
	var done chan writeResult
	if wait {
		done = make(chan writeResult, 1)
	}
	// A row that cannot be written is a bug in its caller; it must not take
	// the rows of every other session down with it.
	valid := item.Events[:0:0]
	for _, ev := range item.Events {
		if ev.SessionID == "" && item.Session != nil {
			ev.SessionID = item.Session.ID
		}
		if err := ev.Validate(); err != nil {
			w.log.Error("dropping an invalid timeline row", "err", err)
			continue
		}
		valid = append(valid, ev)
	}
	item.Events = valid
	w.mu.Lock()
	w.queue = append(w.queue, writeReq{item: item, done: done})
	w.startLocked()
	w.mu.Unlock()
	return done
}

// kick retries a failed round (the tick calls it).
func (w *writer) kick() {
	w.mu.Lock()
	if len(w.retry) > 0 {
		w.startLocked()
	}
	w.mu.Unlock()
}

func (w *writer) startLocked() {
	if !w.running {
		w.running = true
		go w.drain()
	}
}

// drain writes rounds until nothing is queued, or a round fails.
func (w *writer) drain() {
	ctx := context.Background()
	for {
		w.mu.Lock()
		batch := append(w.retry, w.queue...)
		w.retry, w.queue = nil, nil
		if len(batch) == 0 {
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()

		ids, err := w.write(ctx, batch)

		w.mu.Lock()
		if err != nil {
			if !w.failing {
				w.log.Error("saving to the database failed; keeping the changes in memory and retrying", "changes", len(batch), "err", err)
			}
			w.failing = true
			// Callers learn about the first failure only; the items stay
			// (without their waiters) for the next round, before anything newer.
			kept := make([]writeReq, len(batch))
			for i, r := range batch {
				if r.done != nil {
					r.done <- writeResult{err: err}
				}
				kept[i] = writeReq{item: r.item}
			}
			w.retry = kept
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		if w.failing {
			w.log.Info("saving to the database works again")
		}
		w.failing = false
		for i, r := range batch {
			if r.done != nil {
				r.done <- writeResult{ids: ids[i]}
			}
		}
		w.idle.Broadcast()
		w.mu.Unlock()
	}
}

func (w *writer) write(ctx context.Context, batch []writeReq) ([][]int64, error) {
	items := make([]storage.BatchItem, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	if bs, ok := w.store.(batchStore); ok {
		return bs.SaveBatch(ctx, items)
	}
	// One write per change: the same order, without the shared transaction.
	ids := make([][]int64, len(items))
	for i, it := range items {
		switch {
		case it.Session != nil:
			if err := w.store.SaveSessionWithEvents(ctx, *it.Session, it.Events); err != nil {
				return nil, err
			}
		default:
			for _, ev := range it.Events {
				id, err := w.store.AppendEvent(ctx, ev)
				if err != nil {
					return nil, err
				}
				ids[i] = append(ids[i], id)
			}
		}
		if it.OutcomeID != 0 {
			if err := w.store.SetEventOutcome(ctx, it.OutcomeID, it.Outcome); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// pending counts the changes not on disk yet (a failing disk).
func (w *writer) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) + len(w.retry)
}

// settle waits until everything submitted so far was attempted once.
func (w *writer) settle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.running {
		w.idle.Wait()
	}
}
