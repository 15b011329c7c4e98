package checkpoint

import (
	"context"
	"fmt"
)

// Blobs are opaque values kept next to the checkpoints in the same storage
// (the receiver's compile history). Their keys never start with the
// checkpoint prefix, so loading checkpoints skips them. A memory store
// keeps them in memory, which a restart forgets like its checkpoints.

const blobPrefix = "v1/blob/"

// GetBlob returns the blob called name; nil when there is none.
func (s *Store) GetBlob(ctx context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return s.blobs[name], nil
	}
	v, err := s.client.Get(ctx, blobPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return v, nil
}

// PutBlob stores the blob called name, replacing the previous one.
func (s *Store) PutBlob(ctx context.Context, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		if s.blobs == nil {
			s.blobs = map[string][]byte{}
		}
		s.blobs[name] = value
		return nil
	}
	if err := s.client.Set(ctx, blobPrefix+name, value); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
