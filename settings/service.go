package settings

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Service is the settings of the running app: typed and in memory,
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
type Service struct {
	reg  *Registry
	rows Rows

	// mu serialises writers and guards stored and subs.
	mu     sync.Mutex
	stored map[string]string
	subs   map[chan Settings]struct{}

	cur atomic.Pointer[resolved]
}

// Rows is where the settings' rows are kept (storage.Store): every value
// as the user set it, by key. A key this build does not know (a newer
// build's, or a typo made by hand) may be among them and is never looked up.
type Rows interface {
	StoredSettings(ctx context.Context) (map[string]string, error)
	// WriteSettings stores (non-nil) or deletes (nil) values in one
	// transaction, so a change of several keys is applied whole or not at all.
	WriteSettings(ctx context.Context, changes map[string]*string) error
}

// Change is one key to set to Raw (as typed, before parsing).
type Change struct {
	Key string
	Raw string
}

// NewService reads the stored settings of reg's keys once and serves them
// from memory from then on.
func NewService(ctx context.Context, reg *Registry, rows Rows) (*Service, error) {
	stored, err := rows.StoredSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading settings: %w", err)
	}
	s := &Service{reg: reg, rows: rows, stored: stored, subs: map[chan Settings]struct{}{}}
	r := reg.resolve(stored)
	s.cur.Store(&r)
	return s, nil
}

// Get returns the settings in force. The snapshot is shared: treat its
// AgentCommands map as read-only.
func (s *Service) Get() Settings { return s.cur.Load().settings }

// List returns every setting's row in force, in display order, notes
// included. The slice is the caller's.
func (s *Service) List() []Value { return slices.Clone(s.cur.Load().values) }

// Value returns one setting's row in force.
func (s *Service) Value(key string) (Value, error) {
	if _, err := s.reg.lookup(key); err != nil {
		return Value{}, err
	}
	for _, v := range s.cur.Load().values {
		if v.Key == key {
			return v, nil
		}
	}
	// Registered after the snapshot was taken: not in force yet.
	return Value{}, fmt.Errorf("%w %q (registered after the app started)", ErrUnknown, key)
}

// Update sets one key; see UpdateMany.
func (s *Service) Update(ctx context.Context, key, raw string) (SetResult, error) {
	res, err := s.UpdateMany(ctx, []Change{{key, raw}})
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
func (s *Service) UpdateMany(ctx context.Context, changes []Change) ([]SetResult, error) {
	results := make([]SetResult, len(changes))
	for i, c := range changes {
		res, err := s.reg.prepareSet(c.Key, c.Raw)
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
		results[i] = s.reg.shown(results[i])
		inForce(&results[i], r)
	}
	return results, nil
}

// Reset removes any stored value for key, so the default applies (subject
// to the cross-key rules, which InForce and Note report).
func (s *Service) Reset(ctx context.Context, key string) (SetResult, error) {
	def, err := s.reg.lookup(key)
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
func (s *Service) commit(ctx context.Context, writes map[string]*string) (*resolved, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rows.WriteSettings(ctx, writes); err != nil {
		return nil, err
	}
	for k, v := range writes {
		if v == nil {
			delete(s.stored, k)
		} else {
			s.stored[k] = *v
		}
	}
	r := s.reg.resolve(s.stored)
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
func (s *Service) Subscribe() (<-chan Settings, func()) {
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

// The methods below let the service stand in wherever a DB was used (the
// local API, the window, the tray), reading memory instead.

// ListSettings is List, for callers written against a DB.
func (s *Service) ListSettings(context.Context) ([]Value, error) { return s.List(), nil }

// LoadSettings is Get, for callers written against a DB.
func (s *Service) LoadSettings(context.Context) (Settings, error) { return s.Get(), nil }

// SetSetting is Update, for callers written against a DB.
func (s *Service) SetSetting(ctx context.Context, key, raw string) (SetResult, error) {
	return s.Update(ctx, key, raw)
}

// ResetSetting is Reset, for callers written against a DB.
func (s *Service) ResetSetting(ctx context.Context, key string) error {
	_, err := s.Reset(ctx, key)
	return err
}

// DB is the settings of rows no running app serves, read and written at
// every call: what the CLI's commands, doctor and the tests use when no
// Service holds them in memory.
type DB struct {
	reg  *Registry
	rows Rows
}

// On returns the settings of rows as r defines them.
func (r *Registry) On(rows Rows) DB { return DB{reg: r, rows: rows} }

// SetSetting validates raw for key and stores it. Out-of-range numbers are
// clamped (Clamped says so); unparseable values and unknown keys are errors
// wrapping ErrInvalid or ErrUnknown that name the key, the value and what is
// allowed. The running app changes settings through its Service, which does
// the same and keeps its memory in step.
func (d DB) SetSetting(ctx context.Context, key, raw string) (SetResult, error) {
	res, err := d.reg.prepareSet(key, raw)
	if err != nil {
		return SetResult{}, err
	}
	if err := d.rows.WriteSettings(ctx, map[string]*string{key: &res.Value}); err != nil {
		return SetResult{}, err
	}
	return d.reg.shown(res), nil
}

// GetSetting returns the value in force for key: the stored value, or the
// default when it is unset or the stored value is invalid, raised by the
// cross-key rules when they apply.
func (d DB) GetSetting(ctx context.Context, key string) (string, error) {
	if _, err := d.reg.lookup(key); err != nil {
		return "", err
	}
	list, err := d.ListSettings(ctx)
	if err != nil {
		return "", err
	}
	for _, v := range list {
		if v.Key == key {
			return v.Value, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknown, key)
}

// ResetSetting removes any stored value for key, so the default applies.
func (d DB) ResetSetting(ctx context.Context, key string) error {
	if _, err := d.reg.lookup(key); err != nil {
		return err
	}
	return d.rows.WriteSettings(ctx, map[string]*string{key: nil})
}

// ListSettings returns every setting's value in force, in display order.
func (d DB) ListSettings(ctx context.Context) ([]Value, error) {
	r, err := d.read(ctx)
	return r.values, err
}

// LoadSettings returns the typed snapshot of the settings in force. Stored
// values that are invalid fall back to their defaults rather than failing.
func (d DB) LoadSettings(ctx context.Context) (Settings, error) {
	r, err := d.read(ctx)
	return r.settings, err
}

func (d DB) read(ctx context.Context) (resolved, error) {
	stored, err := d.rows.StoredSettings(ctx)
	if err != nil {
		return resolved{}, err
	}
	return d.reg.resolve(stored), nil
}
