package livebuilds

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// recordedLogs keeps every string attribute value the tracker sent.
type recordedLogs struct {
	mu     sync.Mutex
	values []string
}

func (r *recordedLogs) consume(_ context.Context, ld plog.Logs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range ld.ResourceLogs().Len() {
		sl := ld.ResourceLogs().At(i).ScopeLogs()
		for j := range sl.Len() {
			lr := sl.At(j).LogRecords()
			for k := range lr.Len() {
				for _, v := range lr.At(k).Attributes().All() {
					r.values = append(r.values, v.AsString())
				}
			}
		}
	}
	return nil
}

func (r *recordedLogs) contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.values {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

func testTracker(t *testing.T, files []FilesMapping) (*Tracker, *recordedLogs) {
	t.Helper()
	logs := &recordedLogs{}
	tr, err := New(context.Background(), nil, Options{
		Interval:           time.Second,
		MaxRecordsPerBuild: 1000,
		AbandonAfter:       24 * time.Hour,
		HostName:           "test",
		ServiceName:        "compiletools",
		Files:              files,
	}, Settings{
		Logger:           zap.NewNop(),
		Now:              time.Now,
		Checkpoints:      checkpoint.NewMemory(),
		ExplicitStatslog: func(string) string { return "" },
		ConsumeLogs:      logs.consume,
		ConsumeMetrics:   func(context.Context, pmetric.Metrics) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr, logs
}

func appendTo(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// Issue 22, defect 2: the diagnostics directory above a running build is
// swapped for a link to another user's between discovery and the
// follower's first open. The path then names the victim's real build
// directory (a link nowhere in its last component), so only discovery's
// identity tells it apart: it is not followed, and none of its records
// are sent; the directory discovery found, back in place, is followed.
func TestSwapBetweenDiscoveryAndFollowIsRefused(t *testing.T) {
	root := t.TempDir()
	name := "20261130T000000-" + strconv.Itoa(os.Getpid())
	own := filepath.Join(root, "alice", "diagnostics")
	build := filepath.Join(own, name)
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "bob", "diagnostics")
	os.MkdirAll(filepath.Join(victim, name), 0o700)
	appendTo(t, filepath.Join(victim, name, "ccache.statslog"), "# /SECRET/key0.cpp\ncache_miss\n")
	found, err := dirfd.OfDir(build)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(own, own+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, own); err != nil {
		t.Fatal(err)
	}
	tr, logs := testTracker(t, nil)
	ctx := context.Background()
	tr.takeScan([]string{build}, map[string]dirfd.ID{build: found}, time.Now())
	tr.tick(ctx)
	tr.tick(ctx)
	if tr.running() != 0 || logs.contains("/SECRET/") {
		t.Fatalf("the victim's build was followed (%d running, secret sent: %v)", tr.running(), logs.contains("/SECRET/"))
	}
	os.Remove(own)
	os.Rename(own+".old", own)
	appendTo(t, filepath.Join(build, "ccache.statslog"), "# /own.cpp\ncache_miss\n")
	tr.takeScan([]string{build}, map[string]dirfd.ID{build: found}, time.Now())
	tr.tick(ctx)
	if tr.running() != 1 || !logs.contains("/own.cpp") {
		t.Fatalf("the directory discovery found is not followed: %d running", tr.running())
	}
}


