//go:build cgo

package ffi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestLiveRecordsStatslogBlocksAndConsumedBytes(t *testing.T) {
	data := []byte("# /s/a.cpp\ndirect_cache_hit\n# /s/b.cpp\ncache_miss\n# /s/c.cpp\ncache_")
	res, err := LiveRecords(context.Background(), LiveRequest{
		Kind: LiveStatslog, InvocationDir: "/d/20260101T000000-42", HostName: "h", Data: data, ObservedUnixNano: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(len("# /s/a.cpp\ndirect_cache_hit\n# /s/b.cpp\ncache_miss\n")); res.Consumed != want {
		t.Fatalf("consumed %d, want %d", res.Consumed, want)
	}
	if res.Records != 2 || res.Outcomes != (LiveOutcomes{DirectHits: 1, Misses: 1}) {
		t.Fatalf("records %d outcomes %+v", res.Records, res.Outcomes)
	}
	recs := res.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	if recs.Len() != 2 || recs.At(0).EventName() != "ct.rule.finished" {
		t.Fatalf("records: %d, first %q", recs.Len(), recs.At(0).EventName())
	}
	src, _ := recs.At(1).Attributes().Get("ct.source")
	out, _ := recs.At(1).Attributes().Get("ct.ccache.outcome")
	if src.Str() != "/s/b.cpp" || out.Str() != "cache_miss" {
		t.Fatalf("second record: %q %q", src.Str(), out.Str())
	}
	// The cap leaves the second block for the next call.
	capped, err := LiveRecords(context.Background(), LiveRequest{Kind: LiveStatslog, InvocationDir: "/d/x", Data: data, MaxRecords: 1})
	if err != nil || capped.Records != 1 || capped.Consumed != uint64(len("# /s/a.cpp\ndirect_cache_hit\n")) {
		t.Fatalf("capped: %+v %v", capped, err)
	}
}

func TestLiveRecordsEndLinksToTheTrace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20260101T000000-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Case 01's kind of file is not needed: the end only reads the timestamp.
	doc := "{\n  \"version\": 1,\n  \"timestamp\": \"2026-01-01T00:00:00+00:00\",\n  \"phases\": []\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := LiveRecords(context.Background(), LiveRequest{Kind: LiveBuildEnd, InvocationDir: dir, HostName: "build-host-01.example", LinkTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	if rec.EventName() != "ct.build.end" || rec.TraceID().IsEmpty() || rec.SpanID().IsEmpty() {
		t.Fatalf("end record: %q trace %s span %s", rec.EventName(), rec.TraceID(), rec.SpanID())
	}
	abandoned, _ := rec.Attributes().Get("ct.build.abandoned")
	if abandoned.Bool() {
		t.Fatal("a delivered build is not abandoned")
	}
}

func TestLiveRecordsRefusesAnUnknownKind(t *testing.T) {
	_, err := LiveRecords(context.Background(), LiveRequest{Kind: 42, InvocationDir: "/d/x"})
	if CodeOf(err) != CodeInvalidRequest {
		t.Fatalf("err %v", err)
	}
}
