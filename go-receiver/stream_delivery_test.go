package compiletoolsreceiver

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// assertNoOpenStreams fails when the core still holds a build stream: every
// path through processBuild must close the one it opened.
func assertNoOpenStreams(t *testing.T) {
	t.Helper()
	if n := ffi.OpenStreams(); n != 0 {
		t.Fatalf("%d build streams left open in the core", n)
	}
}

// The core's chunks are exactly the cut splitTraces makes of the whole
// trace (same spans, same order, resource and scope in every request),
// and a re-read gives the same bytes chunk by chunk.
func TestStreamChunksAreTheCutOfTheWholeTrace(t *testing.T) {
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	cfg := testConfig(parent)
	r, _ := pollableReceiver(t, cfg, consumertest.NewNop())
	req := r.request(context.Background(), discovery.Build{Dir: dir}, ffi.SignalTraces, openBuild{})
	whole, err := ffi.Process(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	marshal := func(td ptrace.Traces) string {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, max := range []int{1, 7, 10, 48, 49, 128} {
		want := splitTraces(whole.Traces, max)
		wantBytes := make([]string, len(want))
		for i, td := range want {
			wantBytes[i] = marshal(td)
		}
		// splitTraces consumed the whole trace: read it again.
		whole, _ = ffi.Process(context.Background(), req)
		for round := 0; round < 2; round++ {
			_, stream, err := ffi.Open(context.Background(), req, max)
			if err != nil {
				t.Fatal(err)
			}
			if stream.Info.Chunks != len(want) || stream.Info.Spans != uint64(whole.Traces.SpanCount()) {
				t.Fatalf("max %d: info %+v, want %d chunks of %d spans", max, stream.Info, len(want), whole.Traces.SpanCount())
			}
			for k := range want {
				td, err := stream.Chunk(context.Background(), k)
				if err != nil {
					t.Fatal(err)
				}
				if got := marshal(td); got != wantBytes[k] {
					t.Fatalf("max %d, round %d: chunk %d differs from the cut of the whole trace", max, round, k)
				}
			}
			stream.Close()
		}
	}
	assertNoOpenStreams(t)
}

// cancelAfter accepts n requests, then cancels the delivery's context and
// refuses the rest.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	calls  int
}

func (c *cancelAfter) ConsumeTraces(ctx context.Context, _ ptrace.Traces) error {
	c.calls++
	if c.calls > c.n {
		c.cancel()
		return ctx.Err()
	}
	return nil
}

// Cancelled in the middle of a stream (a shutdown): the delivery stops,
// the encoder goroutine ends and frees what it made, the stream closes.
func TestCancelInTheMiddleOfAStream(t *testing.T) {
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	cfg := testConfig(parent)
	cfg.MaxRequestSpans = 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := &cancelAfter{n: 2, cancel: cancel}
	sink, err := consumer.NewTraces(next.ConsumeTraces)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := pollableReceiver(t, cfg, sink)
	req := r.request(ctx, discovery.Build{Dir: dir}, ffi.SignalTraces, openBuild{})
	_, stream, err := ffi.Open(ctx, req, cfg.MaxRequestSpans)
	if err != nil {
		t.Fatal(err)
	}
	progress, err := r.consumeTraceStream(ctx, stream, traceProgress{})
	if !errors.Is(err, context.Canceled) || progress.requests != 2 {
		t.Fatalf("progress %+v, err %v; want 2 requests and the cancellation", progress, err)
	}
	stream.Close()
	assertNoOpenStreams(t)
}

// Every way through processBuild closes its stream: delivered, retried
// after a retryable error on request 3, dropped after a permanent one,
// unreadable, shut down.
func TestEveryPathClosesTheStream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		next  *failOnCall
		state checkpoint.State // "": retried
	}{
		{"delivered", &failOnCall{}, checkpoint.Delivered},
		{"retryable", &failOnCall{failAt: 3, err: errors.New("queue full")}, ""},
		{"permanent", &failOnCall{failAt: 3, err: consumererror.NewPermanent(errors.New("no"))}, checkpoint.Dropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, dir, _ := chunkedReceiver(t, tc.next)
			done := r.processBuild(context.Background(), discovery.Build{Dir: dir})
			assertNoOpenStreams(t)
			calls, _ := tc.next.state()
			if tc.state == "" {
				if done || calls != 3 {
					t.Fatalf("retryable: done %v after %d calls", done, calls)
				}
				// The retry asks the core only for the chunks not accepted.
				if !r.processBuild(context.Background(), discovery.Build{Dir: dir}) {
					t.Fatal("retry not done")
				}
				assertNoOpenStreams(t)
				calls, accepted := tc.next.state()
				if calls != chunkedRequests+1 || len(accepted) != chunkedRequests {
					t.Fatalf("retry: %d calls, %d accepted", calls, len(accepted))
				}
				return
			}
			rec, ok := r.ledger.store.Get(dir)
			if !ok || rec.State != tc.state {
				t.Fatalf("checkpoint %+v (found %v), want state %v", rec, ok, tc.state)
			}
		})
	}
	// Unreadable and shut down.
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	r, _ := pollableReceiver(t, testConfig(parent), consumertest.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.processBuild(ctx, discovery.Build{Dir: dir})
	assertNoOpenStreams(t)
	bad := t.TempDir()
	r.processBuild(context.Background(), discovery.Build{Dir: bad})
	assertNoOpenStreams(t)
}
