package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// buildGenerator writes finished builds, one id per build (its invocation id).
type buildGenerator struct {
	parent string
	data   []byte
	next   atomic.Int64
}

func (g *buildGenerator) Start() {}

// Stop runs after the scenario's receiver shut down: the next scenario's
// receiver must not see this one's builds.
func (g *buildGenerator) Stop() {
	entries, _ := os.ReadDir(g.parent)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(g.parent, e.Name()))
	}
}

func (g *buildGenerator) Generate() []receivertest.UniqueIDAttrVal {
	i := g.next.Add(1)
	id := fmt.Sprintf("20261130T%06d-%d", 120000+i, 5000+i)
	dir := filepath.Join(g.parent, id)
	tmp := filepath.Join(g.parent, "."+id)
	// Build the directory aside and rename it in, so no poll sees half of it.
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "timing.json"), g.data, 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		panic(err)
	}
	return []receivertest.UniqueIDAttrVal{receivertest.UniqueIDAttrVal(id)}
}

// taggingTraces marks every span with the contract checker's test_id: the
// build's invocation id, which the receiver puts on the resource.
type taggingTraces struct{ next consumer.Traces }

func (c taggingTraces) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (c taggingTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		id, _ := rss.At(i).Resource().Attributes().Get("ct.invocation_id")
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				spans.At(k).Attributes().PutStr(receivertest.UniqueIDAttrName, id.Str())
			}
		}
	}
	return c.next.ConsumeTraces(ctx, td)
}

// taggingFactory is the real factory with the tagging consumer in front of
// the checker's consumer.
type taggingFactory struct{ receiver.Factory }

func (f taggingFactory) CreateTraces(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	return f.Factory.CreateTraces(ctx, set, cfg, taggingTraces{next: next})
}

func TestConsumeContractTraces(t *testing.T) {
	parent := t.TempDir()
	cfg := testConfig(parent)
	cfg.PollInterval = 10 * time.Millisecond
	cfg.MaxBuildsPerPoll = 1000
	receivertest.CheckConsumeContract(receivertest.CheckConsumeContractParams{
		T:             t,
		Factory:       taggingFactory{NewFactory()},
		Signal:        pipeline.SignalTraces,
		Config:        cfg,
		Generator:     &buildGenerator{parent: parent, data: caseTiming(t)},
		GenerateCount: 40,
	})
}
