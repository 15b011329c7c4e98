package compiletoolsreceiver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// failOnCall accepts every traces request except call number failAt (from
// 1), which it refuses once with err; it keeps what it accepted.
type failOnCall struct {
	failAt int
	err    error

	mu       sync.Mutex
	calls    int
	accepted []ptrace.Traces
}

func (f *failOnCall) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f *failOnCall) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == f.failAt {
		return f.err
	}
	f.accepted = append(f.accepted, td)
	return nil
}

func (f *failOnCall) state() (calls int, accepted []ptrace.Traces) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, append([]ptrace.Traces(nil), f.accepted...)
}

// chunkedCase: case 01 (49 spans) in requests of at most 10 spans: 5 requests.
const (
	chunkedMax      = 10
	chunkedRequests = 5
)

func chunkedReceiver(t *testing.T, next *failOnCall) (*compiletoolsReceiver, string, *componenttest.Telemetry) {
	t.Helper()
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	cfg := testConfig(parent)
	cfg.MaxRequestSpans = chunkedMax
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	r, _ := pollableReceiverWith(t, cfg, next, set)
	return r, dir, tel
}

// buildsWithOutcome is the receiver's count of builds with an outcome.
func buildsWithOutcome(t *testing.T, tel *componenttest.Telemetry, outcome string) int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_receiver_compiletools_builds")
	if err != nil {
		return 0
	}
	var total int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value("outcome"); ok && v.AsString() == outcome {
			total += dp.Value
		}
	}
	return total
}

// assertWholeBuild checks that the accepted requests carry the build's
// spans once each, in one trace, every parent among them, root first.
func assertWholeBuild(t *testing.T, accepted []ptrace.Traces) {
	t.Helper()
	want := referenceTraces(t, case01).SpanCount()
	ids := map[pcommon.SpanID]bool{}
	traces := map[pcommon.TraceID]bool{}
	var parents []pcommon.SpanID
	for i, td := range accepted {
		if n := td.SpanCount(); n > chunkedMax {
			t.Errorf("request %d has %d spans, more than max_request_spans %d", i, n, chunkedMax)
		}
		forEachSpan(td, func(s ptrace.Span) {
			if ids[s.SpanID()] {
				t.Errorf("span %s (%s) delivered twice", s.SpanID(), s.Name())
			}
			ids[s.SpanID()] = true
			traces[s.TraceID()] = true
			if !s.ParentSpanID().IsEmpty() {
				parents = append(parents, s.ParentSpanID())
			}
		})
	}
	if len(ids) != want {
		t.Fatalf("%d distinct spans accepted, the build has %d", len(ids), want)
	}
	if len(traces) != 1 {
		t.Errorf("want one trace id, got %d", len(traces))
	}
	for _, p := range parents {
		if !ids[p] {
			t.Errorf("parent %s was never delivered", p)
		}
	}
	if root := accepted[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0); root.Name() != "compiletools.build" {
		t.Errorf("the first request starts with %q, not the root", root.Name())
	}
}

// A retryable error on request k of a build: the build is not checkpointed,
// and the retry sends only the requests not accepted yet.
func TestChunkRefusedRetryablyIsRetriedFromThatChunk(t *testing.T) {
	const failAt = 3
	next := &failOnCall{failAt: failAt, err: errors.New("sending queue is full")}
	r, dir, tel := chunkedReceiver(t, next)
	ctx := context.Background()

	r.poll(ctx)
	calls, accepted := next.state()
	if calls != failAt || len(accepted) != failAt-1 {
		t.Fatalf("first attempt: %d calls, %d accepted; want it to stop at the refused request %d", calls, len(accepted), failAt)
	}
	if rec, ok := r.ledger.store.Get(dir); ok {
		t.Fatalf("the build was checkpointed (%s) though request %d of %d was refused", rec.State, failAt, chunkedRequests)
	}

	time.Sleep(100 * time.Millisecond) // past the retry backoff (10-50 ms in tests)
	r.poll(ctx)
	calls, accepted = next.state()
	if want := chunkedRequests + 1; calls != want {
		t.Fatalf("after the retry: %d calls, want %d (the %d requests once, the refused one twice)", calls, want, chunkedRequests)
	}
	rec, ok := r.ledger.store.Get(dir)
	if !ok || rec.State != checkpoint.Delivered {
		t.Fatalf("after every request was accepted: checkpoint %+v (present %v), want delivered", rec, ok)
	}
	assertWholeBuild(t, accepted)
	spans := int64(referenceTraces(t, case01).SpanCount())
	if got := metricSum(t, tel, "otelcol_receiver_accepted_spans"); got != spans {
		t.Errorf("accepted spans (ObsReport) %d, want each of the %d once", got, spans)
	}
	if got := metricSum(t, tel, "otelcol_receiver_refused_spans"); got != chunkedMax {
		t.Errorf("refused spans (ObsReport) %d, want the %d of the refused request", got, chunkedMax)
	}
	if got := buildsWithOutcome(t, tel, outcomeRetried); got != 1 {
		t.Errorf("builds retried: %d, want 1", got)
	}
	if got := buildsWithOutcome(t, tel, outcomeDelivered); got != 1 {
		t.Errorf("builds delivered: %d, want 1", got)
	}

	r.poll(ctx)
	if again, _ := next.state(); again != calls {
		t.Fatalf("a delivered build was sent again (%d more calls)", again-calls)
	}
}

// A permanent error on request k drops the build, as for one request: it is
// checkpointed as dropped, counted, and not sent again.
func TestChunkRefusedPermanentlyDropsTheBuild(t *testing.T) {
	const failAt = 2
	next := &failOnCall{failAt: failAt, err: consumererror.NewPermanent(errors.New("never"))}
	r, dir, tel := chunkedReceiver(t, next)
	ctx := context.Background()

	r.poll(ctx)
	rec, ok := r.ledger.store.Get(dir)
	if !ok || rec.State != checkpoint.Dropped {
		t.Fatalf("checkpoint %+v (present %v), want dropped", rec, ok)
	}
	calls, _ := next.state()
	if calls != failAt {
		t.Fatalf("%d calls; want the requests after the refused one %d not sent", calls, failAt)
	}
	if got := buildsWithOutcome(t, tel, outcomeDropped); got != 1 {
		t.Errorf("builds dropped: %d, want 1", got)
	}
	time.Sleep(100 * time.Millisecond)
	r.poll(ctx)
	if again, _ := next.state(); again != calls {
		t.Fatalf("a dropped build was sent again (%d more calls)", again-calls)
	}
}
