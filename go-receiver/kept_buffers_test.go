package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// writeManyRuleBuild writes a finished build of n compile rules under
// parent: large enough (n ≥ ~20k) for the core to keep its buffers.
func writeManyRuleBuild(t *testing.T, parent string, n int) {
	t.Helper()
	dir := filepath.Join(parent, "20261130T000000-9")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"version": 1, "timestamp": "2026-11-30T03:00:00+00:00", "total_elapsed_s": 100.0, "variant": "gcc.debug", "backend": "shake", "start_s": 1000.0, "phases": [{"name": "build_execution", "elapsed_s": 99.0, "start_s": 1000.5, "end_s": 1099.5, "rules": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name": "f%d.cpp", "elapsed_s": 0.5, "rule_type": "compile", "target": "/p/obj/%d/f%d.o", "source": "/p/src/d%d/f%d.cpp", "metadata": {"cas.hit": false}, "start_s": 1001.0, "end_s": 1001.5}`, i, i%256, i, i%100, i)
	}
	b.WriteString(`]}]}`)
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The core keeps a large build's buffers for the next one; a poll with
// nothing to send gives them back, so an idle collector holds none.
func TestIdlePollFreesTheBuffersKeptBetweenBuilds(t *testing.T) {
	parent := t.TempDir()
	const rules = 30_000
	writeManyRuleBuild(t, parent, rules)
	sink := new(consumertest.TracesSink)
	r, _ := pollableReceiver(t, testConfig(parent), sink)
	ctx := context.Background()
	ffi.ReleaseKeptBuffers() // whatever earlier tests left

	r.poll(ctx)
	if got := sink.SpanCount(); got < rules {
		t.Fatalf("the build's trace has %d spans, want at least %d", got, rules)
	}
	r.poll(ctx) // nothing left to send
	if kept := ffi.ReleaseKeptBuffers(); kept != 0 {
		t.Fatalf("%d bytes still kept after a poll with nothing to send", kept)
	}
}
