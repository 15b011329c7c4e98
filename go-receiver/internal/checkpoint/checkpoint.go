// Package checkpoint remembers which builds were delivered, so that each
// build reaches the consumers once, across restarts when a storage
// extension is configured.
package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// State is how a build ended up.
type State string

const (
	// Delivered: every consumer accepted the build.
	Delivered State = "delivered"
	// Dropped: a consumer rejected it permanently.
	Dropped State = "dropped"
	// Failed: the build could not be read (malformed, too large, …).
	Failed State = "failed"
	// Skipped: never sent on purpose (start_at: end, max_age).
	Skipped State = "skipped"
)

// Record is what is kept per build. TimingModNs/TimingSize identify the
// timing.json that was handled: discovery sends a different file under the
// same directory name (a host collision on a shared parent) as a new build.
type Record struct {
	State       State  `json:"state"`
	Signals     uint32 `json:"signals,omitempty"`
	TimingModNs int64  `json:"timing_mod_ns"`
	TimingSize  int64  `json:"timing_size"`
	At          int64  `json:"at_unix_ns"`
}

const (
	keyPrefix = "v1/build/"
	indexKey  = "v1/index"
)

// Store holds records keyed by invocation directory. Every method is safe
// for concurrent use.
type Store struct {
	mu      sync.Mutex
	records map[string]Record
	client  storage.Client // nil: memory only
	walker  storage.Walker // nil: the client cannot range, keep an index key
	// unsaved are records kept in memory whose write failed (a full or
	// read-only disk): remembered so this process does not send the build
	// again on every poll, written with the next Put that succeeds.
	unsaved map[string]bool
	// blobs are a memory store's blobs (blob.go); unused with a client.
	blobs map[string][]byte
}

// maxUnsavedPerPut bounds the earlier failed records one Put writes again,
// so a long outage of the disk does not make a single write huge.
const maxUnsavedPerPut = 256

// NewMemory returns a store that forgets everything on restart.
func NewMemory() *Store { return &Store{records: map[string]Record{}} }

// Open loads every record from a storage client.
func Open(ctx context.Context, client storage.Client) (*Store, error) {
	s := &Store{records: map[string]Record{}, client: client}
	if w, ok := client.(storage.Walker); ok {
		s.walker = w
		err := w.Walk(ctx, func(key string, value []byte) ([]*storage.Operation, error) {
			if dir, ok := strings.CutPrefix(key, keyPrefix); ok {
				s.decodeInto(dir, value)
			}
			return nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("loading checkpoints: %w", err)
		}
		return s, nil
	}
	raw, err := client.Get(ctx, indexKey)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint index: %w", err)
	}
	var dirs []string
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &dirs); err != nil {
			return nil, fmt.Errorf("checkpoint index is corrupt: %w", err)
		}
	}
	for _, dir := range dirs {
		value, err := client.Get(ctx, keyPrefix+dir)
		if err != nil {
			return nil, fmt.Errorf("loading checkpoint of %s: %w", dir, err)
		}
		s.decodeInto(dir, value)
	}
	return s, nil
}

func (s *Store) decodeInto(dir string, value []byte) {
	var r Record
	if len(value) > 0 && json.Unmarshal(value, &r) == nil {
		s.records[dir] = r
	}
}

// Len is the number of builds remembered.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// Get returns the record of dir.
func (s *Store) Get(dir string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[dir]
	return r, ok
}

// Dirs lists every remembered directory.
func (s *Store) Dirs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.records))
	for d := range s.records {
		out = append(out, d)
	}
	return out
}

// Put records dir, persisting it before returning when storage is set.
func (s *Store) Put(ctx context.Context, dir string, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, existed := s.records[dir]
	s.records[dir] = r
	if s.client == nil {
		return nil
	}
	retried, err := s.write(ctx, dir, !existed)
	if err != nil {
		if s.unsaved == nil {
			s.unsaved = map[string]bool{}
		}
		s.unsaved[dir] = true
		return fmt.Errorf("writing checkpoint of %s (kept in memory until a write succeeds): %w", dir, err)
	}
	delete(s.unsaved, dir)
	for _, d := range retried {
		delete(s.unsaved, d)
	}
	return nil
}

// write persists the record of dir, and up to maxUnsavedPerPut records
// whose earlier write failed, in one batch; it returns those it retried.
func (s *Store) write(ctx context.Context, dir string, isNew bool) ([]string, error) {
	ops := make([]*storage.Operation, 0, 2)
	var retried []string
	add := func(d string) error {
		value, err := json.Marshal(s.records[d])
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(keyPrefix+d, value))
		return nil
	}
	if err := add(dir); err != nil {
		return nil, err
	}
	for d := range s.unsaved {
		if len(retried) == maxUnsavedPerPut {
			break
		}
		if d != dir {
			if err := add(d); err != nil {
				return nil, err
			}
			retried = append(retried, d)
		}
	}
	if s.walker == nil && (isNew || len(s.unsaved) > 0) {
		idx, err := s.indexWith("", "") // s.records already holds dir
		if err != nil {
			return nil, err
		}
		ops = append(ops, storage.SetOperation(indexKey, idx))
	}
	return retried, s.client.Batch(ctx, ops...)
}

// Forget drops the record of dir (its directory is gone).
func (s *Store) Forget(ctx context.Context, dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[dir]; !ok {
		return nil
	}
	if s.client != nil {
		ops := []*storage.Operation{storage.DeleteOperation(keyPrefix + dir)}
		if s.walker == nil {
			idx, err := s.indexWith("", dir)
			if err != nil {
				return err
			}
			ops = append(ops, storage.SetOperation(indexKey, idx))
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			return fmt.Errorf("deleting checkpoint of %s: %w", dir, err)
		}
	}
	delete(s.records, dir)
	delete(s.unsaved, dir)
	return nil
}

// indexWith encodes the directory list with add added and drop removed.
func (s *Store) indexWith(add, drop string) ([]byte, error) {
	dirs := make([]string, 0, len(s.records)+1)
	for d := range s.records {
		if d != drop {
			dirs = append(dirs, d)
		}
	}
	if add != "" {
		dirs = append(dirs, add)
	}
	return json.Marshal(dirs)
}

// Close releases the storage client.
func (s *Store) Close(ctx context.Context) error {
	if s.client == nil {
		return nil
	}
	return s.client.Close(ctx)
}
