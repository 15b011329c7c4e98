package livebuilds

import (
	"context"
	"encoding/json"
	"maps"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// liveStateKey holds every followed build's live state in one value: a
// host runs tens of builds at once, so the value stays small, and one
// write per interval is cheaper than a key per build and an index.
const liveStateKey = "v1/live/builds"

// liveBuildState is what survives a restart of one followed build: whether
// its start and end records were delivered, and up to where each of its
// files was delivered as records.
type liveBuildState struct {
	Started bool `json:"started,omitempty"`
	// Ended: the end record was delivered. Kept only for abandoned builds,
	// which stay "running" on disk; a settled build is never followed again.
	Ended       bool             `json:"ended,omitempty"`
	FirstSeenNs int64            `json:"first_seen_ns"`
	Offsets     map[string]int64 `json:"offsets,omitempty"`
	// Dir is the invocation directory's identity when it was first seen:
	// a directory deleted and made again under the same name is another
	// build (issue 22, defect 5). Zero in states saved before it existed.
	Dir dirfd.ID `json:"dir,omitzero"`
}

// liveStateStore keeps the live states in the receiver's storage extension
// (client name "live", beside the build checkpoints), or in memory only.
type liveStateStore struct {
	client storage.Client // nil: memory only
	saved  map[string]liveBuildState
}

// openStateStore reads the states saved in client (nil: memory only).
func openStateStore(ctx context.Context, client storage.Client, logger *zap.Logger) (*liveStateStore, error) {
	s := &liveStateStore{saved: map[string]liveBuildState{}}
	if client == nil {
		return s, nil
	}
	raw, err := client.Get(ctx, liveStateKey)
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s.saved); err != nil {
			// A damaged value costs at most duplicates of progress records
			// and the end records of the builds followed then: start over.
			logger.Warn("live build state unreadable; starting without it")
			s.saved = map[string]liveBuildState{}
		}
	}
	s.client = client
	return s, nil
}

// load returns the saved states.
func (s *liveStateStore) load() map[string]liveBuildState { return maps.Clone(s.saved) }

// save writes states when they differ from what was saved last.
func (s *liveStateStore) save(ctx context.Context, states map[string]liveBuildState) error {
	if equalStates(s.saved, states) {
		return nil
	}
	if s.client != nil {
		raw, err := json.Marshal(states)
		if err != nil {
			return err
		}
		if err := s.client.Set(ctx, liveStateKey, raw); err != nil {
			return err
		}
	}
	s.saved = cloneStates(states)
	return nil
}

func (s *liveStateStore) close(ctx context.Context) error {
	if s == nil || s.client == nil {
		return nil
	}
	return s.client.Close(ctx)
}

func cloneStates(in map[string]liveBuildState) map[string]liveBuildState {
	out := make(map[string]liveBuildState, len(in))
	for k, v := range in {
		v.Offsets = maps.Clone(v.Offsets)
		out[k] = v
	}
	return out
}

func cloneState(v liveBuildState) liveBuildState {
	v.Offsets = maps.Clone(v.Offsets)
	return v
}

func equalStates(a, b map[string]liveBuildState) bool {
	return maps.EqualFunc(a, b, func(x, y liveBuildState) bool {
		return x.Started == y.Started && x.Ended == y.Ended && x.FirstSeenNs == y.FirstSeenNs && x.Dir == y.Dir &&
			maps.Equal(x.Offsets, y.Offsets)
	})
}
