package livebuilds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
)

func buildLogs(records, attrLen int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "s")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for range records {
		lrs.AppendEmpty().Attributes().PutStr("ct.source", strings.Repeat("p", attrLen))
	}
	return ld
}

// Issue 22, defect 4: requests stay within both bounds, a build's records
// may span requests, and a refused request drops only its own builds.
func TestRequestsAreBoundedAndARefusalCostsOnlyItsOwnRecords(t *testing.T) {
	var sent []plog.Logs
	refuseNext := false
	tr := &Tracker{o: Options{MaxRequestRecords: 100, MaxRequestBytes: 200 << 10}, set: Settings{Logger: zap.NewNop(),
		ConsumeLogs: func(_ context.Context, ld plog.Logs) error {
			if refuseNext {
				refuseNext = false
				return consumererror.NewPermanent(errors.New("413"))
			}
			sent = append(sent, ld)
			return nil
		}}}
	p := newRequestPacker(tr)
	ctx := context.Background()
	a, b := &pendingBuild{dir: "a"}, &pendingBuild{dir: "b"}
	if err := p.add(ctx, a, buildLogs(250, 10)); err != nil {
		t.Fatal(err)
	}
	if err := p.add(ctx, b, buildLogs(50, 4000)); err != nil { // 200 KiB: two requests by bytes
		t.Fatal(err)
	}
	if err := p.flush(ctx); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ld := range sent {
		n := ld.LogRecordCount()
		total += n
		size := (&plog.ProtoMarshaler{}).LogsSize(ld)
		if n > 100 || size > 200<<10 {
			t.Errorf("request of %d records, %d bytes", n, size)
		}
	}
	if total != 300 || len(p.done) != 2 {
		t.Fatalf("%d records sent, %d builds done", total, len(p.done))
	}

	// A permanent refusal of the request holding c drops c's records but
	// commits; d's records go in the next request.
	sent, p = nil, newRequestPacker(tr)
	c, d := &pendingBuild{dir: "c"}, &pendingBuild{dir: "d"}
	_ = p.add(ctx, c, buildLogs(100, 10))
	refuseNext = true
	_ = p.add(ctx, d, buildLogs(10, 10))
	_ = p.flush(ctx)
	if len(sent) != 1 || sent[0].LogRecordCount() != 10 || len(p.done) != 2 {
		t.Fatalf("after a refusal: %d requests, %d builds done", len(sent), len(p.done))
	}
}

// Issue 22, defect 1: descriptors kept per build and in total stay within
// their bounds; the least recently grown one gives way.
func TestHeldDescriptorsAreBounded(t *testing.T) {
	dir := t.TempDir()
	h := newHeldFiles(2, 3)
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for i, name := range []string{"a1", "a2", "a3"} {
		f := open(name)
		if !h.admit("A", liveFile{path: name}, f, uint64(i+1)) {
			f.Close()
		}
	}
	if h.perBuild["A"] != 2 || h.get("a1") != nil {
		t.Fatalf("per build: %d held, a1 kept %v", h.perBuild["A"], h.get("a1") != nil)
	}
	for _, name := range []string{"b1", "c1"} {
		f := open(name)
		if !h.admit(name[:1], liveFile{path: name}, f, 5) {
			f.Close()
		}
	}
	if h.count() != 3 {
		t.Fatalf("%d held, want the total bound 3", h.count())
	}
	h.closeIdle(5 + idleTicks)
	if h.count() != 0 {
		t.Fatalf("%d idle files still open", h.count())
	}
}
