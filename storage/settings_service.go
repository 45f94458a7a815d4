package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// SettingsService is the settings of the running app: typed and in memory,
// so the loop, the tray, the window and the notifier read them without
// touching SQLite, and changed in one place that validates, clamps, applies
// the cross-key rules, persists and then tells subscribers.
//
// Readers (Get, List) never block: they load an immutable snapshot through
// an atomic pointer. Writers (Update, Reset) are serialised, so snapshots
// are persisted and published in the order the changes were made.
//
// Every write of the running app must go through its service: the service
// does not re-read SQLite, so a row written behind its back (another process
// on the same database) is seen only at the next start. The CLI therefore
// changes settings through the app's local API while the app runs.
type SettingsService struct {
	store *Store

	// mu serialises writers and guards stored and subs.
	mu     sync.Mutex
	stored map[string]string
	subs   map[chan Settings]struct{}

	cur atomic.Pointer[resolved]
}

// SettingChange is one key to set to Raw (as typed, before parsing).
type SettingChange struct {
	Key string
	Raw string
}

// NewSettingsService reads the stored settings once and serves them from
// memory from then on.
func NewSettingsService(ctx context.Context, st *Store) (*SettingsService, error) {
	stored, err := st.storedSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading settings: %w", err)
	}
	s := &SettingsService{store: st, stored: stored, subs: map[chan Settings]struct{}{}}
	r := resolve(stored)
	s.cur.Store(&r)
	return s, nil
}

// Get returns the settings in force. The snapshot is shared: treat its
// AgentCommands map as read-only.
func (s *SettingsService) Get() Settings { return s.cur.Load().settings }

// List returns every setting's row in force, in display order, notes
// included. The slice is the caller's.
func (s *SettingsService) List() []SettingValue { return slices.Clone(s.cur.Load().values) }

// Value returns one setting's row in force.
func (s *SettingsService) Value(key string) (SettingValue, error) {
	if _, err := lookup(key); err != nil {
		return SettingValue{}, err
	}
	for _, v := range s.cur.Load().values {
		if v.Key == key {
			return v, nil
		}
	}
	// Registered after the snapshot was taken: not in force yet.
	return SettingValue{}, fmt.Errorf("%w %q (registered after the app started)", ErrUnknownSetting, key)
}

// Update sets one key; see UpdateMany.
func (s *SettingsService) Update(ctx context.Context, key, raw string) (SetResult, error) {
	res, err := s.UpdateMany(ctx, []SettingChange{{key, raw}})
	if err != nil {
		return SetResult{}, err
	}
	return res[0], nil
}

// UpdateMany validates every change, clamps out-of-range numbers (the
// result's Clamped and Note say so), stores them in one transaction, applies
// the cross-key rules to what is in force (InForce and Note say when a rule
// changed the value) and publishes the new snapshot to subscribers. Any
// invalid value or unknown key refuses the whole change, so half an edit is
// never applied.
func (s *SettingsService) UpdateMany(ctx context.Context, changes []SettingChange) ([]SetResult, error) {
	results := make([]SetResult, len(changes))
	for i, c := range changes {
		res, err := prepareSet(c.Key, c.Raw)
		if err != nil {
			return nil, err
		}
		results[i] = res
	}
	writes := make(map[string]*string, len(changes))
	for i := range results {
		writes[results[i].Key] = &results[i].Value
	}
	r, err := s.commit(ctx, writes)
	if err != nil {
		return nil, err
	}
	for i := range results {
		inForce(&results[i], r)
	}
	return results, nil
}

// Reset removes any stored value for key, so the default applies (subject
// to the cross-key rules, which InForce and Note report).
func (s *SettingsService) Reset(ctx context.Context, key string) (SetResult, error) {
	def, err := lookup(key)
	if err != nil {
		return SetResult{}, err
	}
	r, err := s.commit(ctx, map[string]*string{key: nil})
	if err != nil {
		return SetResult{}, err
	}
	res := SetResult{Key: key, Value: def.Default, Requested: def.Default}
	inForce(&res, r)
	return res, nil
}

// inForce completes res from the snapshot now in force.
func inForce(res *SetResult, r *resolved) {
	for _, v := range r.values {
		if v.Key != res.Key || v.Value == res.Value {
			continue
		}
		res.InForce = v.Value
		res.Note = strings.TrimPrefix(res.Note+"; ", "; ") + v.Note
	}
}

// commit persists writes (nil deletes) and, once they are on disk, swaps
// in and publishes the new snapshot. On a failed write nothing changes.
func (s *SettingsService) commit(ctx context.Context, writes map[string]*string) (*resolved, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.writeSettings(ctx, writes); err != nil {
		return nil, err
	}
	for k, v := range writes {
		if v == nil {
			delete(s.stored, k)
		} else {
			s.stored[k] = *v
		}
	}
	r := resolve(s.stored)
	s.cur.Store(&r)
	for ch := range s.subs {
		publishLatest(ch, r.settings)
	}
	return &r, nil
}

// Subscribe returns a channel that receives the settings in force after
// every change, and a function that ends the subscription (and closes the
// channel). A subscriber that falls behind loses intermediate snapshots,
// never the latest one: publishing never waits for a reader. The runtime
// forwards these to its bus as a settings message.
func (s *SettingsService) Subscribe() (<-chan Settings, func()) {
	ch := make(chan Settings, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, ch)
			s.mu.Unlock()
			close(ch)
		})
	}
}

// publishLatest hands v to a one-slot channel, replacing an unread older
// snapshot. Callers hold s.mu, so this is the channel's only sender and the
// second send cannot find the slot full.
func publishLatest(ch chan Settings, v Settings) {
	select {
	case ch <- v:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	ch <- v
}

// The methods below let the service stand in wherever a settings store was
// used (the local API, the window, the tray), reading memory instead.

// ListSettings is List, for callers written against the Store.
func (s *SettingsService) ListSettings(context.Context) ([]SettingValue, error) { return s.List(), nil }

// LoadSettings is Get, for callers written against the Store.
func (s *SettingsService) LoadSettings(context.Context) (Settings, error) { return s.Get(), nil }

// SetSetting is Update, for callers written against the Store.
func (s *SettingsService) SetSetting(ctx context.Context, key, raw string) (SetResult, error) {
	return s.Update(ctx, key, raw)
}

// ResetSetting is Reset, for callers written against the Store.
func (s *SettingsService) ResetSetting(ctx context.Context, key string) error {
	_, err := s.Reset(ctx, key)
	return err
}
