package checkpoint

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// mapClient is a storage client without Walker, so the index path is used.
type mapClient struct {
	mu   sync.Mutex
	m    map[string][]byte
	full bool // every Batch fails, as on a full or read-only disk
}

func (c *mapClient) Get(_ context.Context, k string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k], nil
}

func (c *mapClient) Set(_ context.Context, k string, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
	return nil
}

func (c *mapClient) Delete(_ context.Context, k string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
	return nil
}

func (c *mapClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	full := c.full
	c.mu.Unlock()
	if full {
		return syscall.ENOSPC
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Set:
			_ = c.Set(ctx, op.Key, op.Value)
		case storage.Delete:
			_ = c.Delete(ctx, op.Key)
		case storage.Get:
			op.Value, _ = c.Get(ctx, op.Key)
		}
	}
	return nil
}

func (c *mapClient) Close(context.Context) error { return nil }

func TestRecordsSurviveReopenWithIndex(t *testing.T) {
	ctx := context.Background()
	client := &mapClient{m: map[string][]byte{}}
	s, err := Open(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/a/1", "/a/2", "/a/3"} {
		if err := s.Put(ctx, d, Record{State: Delivered, TimingModNs: 7, TimingSize: 9}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Forget(ctx, "/a/2"); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 2 {
		t.Fatalf("want 2 records after reopen, got %d", again.Len())
	}
	r, ok := again.Get("/a/3")
	if !ok || r.State != Delivered || r.TimingModNs != 7 || r.TimingSize != 9 {
		t.Fatalf("record not kept: %+v", r)
	}
	if _, ok := again.Get("/a/2"); ok {
		t.Fatal("a forgotten record came back")
	}
}

func TestMemoryStore(t *testing.T) {
	s := NewMemory()
	if err := s.Put(context.Background(), "/x", Record{State: Skipped}); err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Get("/x"); !ok || r.State != Skipped {
		t.Fatal("memory store lost a record")
	}
}

// A write that fails (disk full) keeps the record in memory, so the build is
// not sent again on every poll, and the next write that succeeds persists it.
func TestFailedWriteIsKeptAndRetried(t *testing.T) {
	ctx := context.Background()
	client := &mapClient{m: map[string][]byte{}}
	s, err := Open(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	client.full = true
	if err := s.Put(ctx, "/a/1", Record{State: Delivered, TimingSize: 1}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want the disk's error, got %v", err)
	}
	if _, ok := s.Get("/a/1"); !ok {
		t.Fatal("a record whose write failed is forgotten: the build would be sent on every poll")
	}
	if again, _ := Open(ctx, client); again.Len() != 0 {
		t.Fatal("nothing can have been written while the disk was full")
	}
	client.full = false
	if err := s.Put(ctx, "/a/2", Record{State: Delivered, TimingSize: 2}); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/a/1", "/a/2"} {
		if r, ok := again.Get(d); !ok || r.State != Delivered {
			t.Fatalf("%s not persisted once the disk had room: %+v", d, r)
		}
	}
}
