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

// Issue 22, defect 3 of the brief's list (live.files): a mapping's make
// timing directory and ninja log are opened through no link in any
// component. The build's owner swaps a directory in the middle of the
// configured path for a link to another user's tree: nothing there is
// read; the real path, back in place, is.
func TestLiveFilesMappingIsOpenedThroughNoLink(t *testing.T) {
	root := t.TempDir()
	pid := os.Getpid()
	build := filepath.Join(root, "runs", "20261130T000000-"+strconv.Itoa(pid))
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "alice", "src")
	bindir := filepath.Join(src, "bin", "gcc.debug")
	victimSrc := filepath.Join(root, "bob", "src")
	for _, d := range []string{bindir, filepath.Join(victimSrc, "bin", "gcc.debug")} {
		os.MkdirAll(d, 0o755)
	}
	makeLog := ".ct-make-timing." + strconv.Itoa(pid) + ".1.jsonl"
	line := func(target string) string {
		return `{"target":"` + target + `","start_ns":1796009765464839000,"end_ns":1796009765542899000}` + "\n"
	}
	appendTo(t, filepath.Join(victimSrc, "bin", "gcc.debug", makeLog), line("/SECRET/libkey.a"))
	appendTo(t, filepath.Join(victimSrc, ".ninja_log"), "# ninja log v5\n10\t20\t0\tSECRET/x.o\t1\n")
	// The middle of the configured path becomes a link to the victim's.
	os.Rename(src, src+".old")
	if err := os.Symlink(victimSrc, src); err != nil {
		t.Fatal(err)
	}
	tr, logs := testTracker(t, []FilesMapping{{Include: filepath.Join(root, "runs", "*"), MakeTimingDir: bindir, NinjaLog: filepath.Join(src, ".ninja_log")}})
	ctx := context.Background()
	found, _ := dirfd.OfDir(build)
	tr.takeScan([]string{build}, map[string]dirfd.ID{build: found}, time.Now())
	tr.tick(ctx)
	appendTo(t, filepath.Join(victimSrc, ".ninja_log"), "20\t30\t0\tSECRET/y.o\t2\n")
	tr.tick(ctx)
	if tr.running() != 1 {
		t.Fatalf("the build is not followed: %d", tr.running())
	}
	if logs.contains("SECRET") {
		t.Fatal("a file behind a link in a live.files path was read")
	}
	os.Remove(src)
	os.Rename(src+".old", src)
	appendTo(t, filepath.Join(bindir, makeLog), line("/own/liba.a"))
	tr.tick(ctx)
	if !logs.contains("/own/liba.a") {
		t.Fatal("the mapped make timing log is not read")
	}
}
