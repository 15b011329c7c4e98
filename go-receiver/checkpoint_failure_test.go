package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// fullDiskStorage is a storage extension whose writes fail with ENOSPC
// while full is set, as file_storage's do on a full disk.
type fullDiskStorage struct {
	mu   sync.Mutex
	full bool
	kv   map[string][]byte
}

func (s *fullDiskStorage) Start(context.Context, component.Host) error { return nil }
func (s *fullDiskStorage) Shutdown(context.Context) error              { return nil }
func (s *fullDiskStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return s, nil
}

func (s *fullDiskStorage) setFull(full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.full = full
}

// persisted counts the build records written.
func (s *fullDiskStorage) persisted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.kv {
		if strings.HasPrefix(k, "v1/build/") {
			n++
		}
	}
	return n
}

func (s *fullDiskStorage) Get(_ context.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv[k], nil
}

func (s *fullDiskStorage) Set(ctx context.Context, k string, v []byte) error {
	return s.Batch(ctx, storage.SetOperation(k, v))
}

func (s *fullDiskStorage) Delete(ctx context.Context, k string) error {
	return s.Batch(ctx, storage.DeleteOperation(k))
}

func (s *fullDiskStorage) Batch(_ context.Context, ops ...*storage.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		return syscall.ENOSPC
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Set:
			s.kv[op.Key] = op.Value
		case storage.Delete:
			delete(s.kv, op.Key)
		case storage.Get:
			op.Value = s.kv[op.Key]
		}
	}
	return nil
}

func (s *fullDiskStorage) Close(context.Context) error { return nil }

// A checkpoint write that fails is counted once per build, the build is not
// sent again while the disk stays full, and the next write that succeeds
// persists the checkpoints kept in memory.
func TestCheckpointWriteFailuresAreCounted(t *testing.T) {
	const metric = "otelcol_receiver_compiletools_checkpoint_write_failures"
	parent := t.TempDir()
	data := caseTiming(t)
	writeBuild(t, parent, "20261130T000001-1", data)
	writeBuild(t, parent, "20261130T000002-2", data)

	disk := &fullDiskStorage{full: true, kv: map[string][]byte{}}
	storageID := component.MustNewID("file_storage")
	cfg := testConfig(parent)
	cfg.Storage = &storageID
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	sink := &traceRecorder{seen: map[string]int{}}
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	host := hostWith{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{storageID: disk}}
	if err := r.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})

	waitFor(t, "both builds", func() bool { return len(sink.snapshot()) == 2 })
	waitFor(t, "a failure counted per build", func() bool { return metricSum(t, tel, metric) == 2 })
	time.Sleep(10 * cfg.PollInterval) // polls while the disk stays full
	for id, n := range sink.snapshot() {
		if n != 1 {
			t.Fatalf("trace %s sent %d times while the disk was full: the checkpoint was not kept in memory", id, n)
		}
	}
	if got := metricSum(t, tel, metric); got != 2 {
		t.Fatalf("%s = %d after more polls, want 2 (one per build, not per poll)", metric, got)
	}
	if disk.persisted() != 0 {
		t.Fatal("a checkpoint was written to a full disk")
	}

	disk.setFull(false)
	// Renamed in whole: a poll must not read a half-written timing.json.
	staged := filepath.Dir(writeBuild(t, t.TempDir(), "20261130T000003-3", data))
	if err := os.Rename(staged, filepath.Join(parent, "20261130T000003-3")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the third build and every checkpoint written", func() bool {
		return len(sink.snapshot()) == 3 && disk.persisted() == 3
	})
	if got := metricSum(t, tel, metric); got != 2 {
		t.Fatalf("%s = %d after a successful write, want still 2", metric, got)
	}
}
