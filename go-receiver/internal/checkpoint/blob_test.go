package checkpoint

import (
	"context"
	"testing"
)

// Blobs live beside the records without becoming records, in memory and
// through a client, and survive a reopen of the client's data.
func TestBlobsBesideCheckpoints(t *testing.T) {
	ctx := context.Background()
	c := &mapClient{m: map[string][]byte{}}
	for _, s := range []*Store{NewMemory(), mustOpen(t, c)} {
		if v, err := s.GetBlob(ctx, "h"); err != nil || v != nil {
			t.Fatalf("empty store has blob %q, %v", v, err)
		}
		if err := s.Put(ctx, "/a/1", Record{State: Delivered}); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"one", "two"} {
			if err := s.PutBlob(ctx, "h", []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := s.GetBlob(ctx, "h"); string(v) != "two" {
			t.Fatalf("blob = %q", v)
		}
	}
	again := mustOpen(t, c)
	if again.Len() != 1 {
		t.Fatalf("the blob became a record: %d records", again.Len())
	}
	if v, _ := again.GetBlob(ctx, "h"); string(v) != "two" {
		t.Fatalf("after reopen blob = %q", v)
	}
}

func mustOpen(t *testing.T, c *mapClient) *Store {
	t.Helper()
	s, err := Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
