package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
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
	return []receivertest.UniqueIDAttrVal{receivertest.UniqueIDAttrVal(strconv.FormatInt(5000+i, 10))}
}

// buildTag is the contract checker's test_id of a build: the PID of its
// invocation id, which both signals carry in service.instance.id
// (<host>:<pid>); ccache metrics carry the trace id as ct.invocation_id.
func buildTag(res pcommon.Map) string {
	v, _ := res.Get("service.instance.id")
	s := v.Str()
	return s[strings.LastIndexByte(s, ':')+1:]
}

// taggingTraces marks every span with the contract checker's test_id.
type taggingTraces struct{ next consumer.Traces }

func (c taggingTraces) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (c taggingTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		id := buildTag(rss.At(i).Resource().Attributes())
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				spans.At(k).Attributes().PutStr(receivertest.UniqueIDAttrName, id)
			}
		}
	}
	return c.next.ConsumeTraces(ctx, td)
}

// taggingMetrics marks every data point with the contract checker's test_id.
type taggingMetrics struct{ next consumer.Metrics }

func (c taggingMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (c taggingMetrics) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		id := buildTag(rms.At(i).Resource().Attributes())
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeHistogram:
					for _, p := range m.Histogram().DataPoints().All() {
						p.Attributes().PutStr(receivertest.UniqueIDAttrName, id)
					}
					continue
				default:
					continue
				}
				for d := 0; d < dps.Len(); d++ {
					dps.At(d).Attributes().PutStr(receivertest.UniqueIDAttrName, id)
				}
			}
		}
	}
	return c.next.ConsumeMetrics(ctx, md)
}

// taggingFactory is the real factory with the tagging consumers in front of
// the checker's consumers.
type taggingFactory struct{ receiver.Factory }

func (f taggingFactory) CreateTraces(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	return f.Factory.CreateTraces(ctx, set, cfg, taggingTraces{next: next})
}

func (f taggingFactory) CreateMetrics(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	return f.Factory.CreateMetrics(ctx, set, cfg, taggingMetrics{next: next})
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

func TestConsumeContractMetrics(t *testing.T) {
	parent := t.TempDir()
	// Every build reads one explicit-path statslog, as with --ccache-statslog=PATH.
	statslog := filepath.Join(t.TempDir(), "ccache.statslog")
	data, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", case01, "ccache.statslog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statslog, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(parent)
	cfg.PollInterval = 10 * time.Millisecond
	cfg.MaxBuildsPerPoll = 1000
	cfg.Capture.Statslogs = []StatslogMapping{{Include: filepath.Join(parent, "*"), Path: statslog}}
	// Each build its own series (service.instance.id names the build), so
	// every point belongs to one generated build.
	cfg.PerBuildMetricIdentity = true
	receivertest.CheckConsumeContract(receivertest.CheckConsumeContractParams{
		T:             t,
		Factory:       taggingFactory{NewFactory()},
		Signal:        pipeline.SignalMetrics,
		Config:        cfg,
		Generator:     &buildGenerator{parent: parent, data: caseTiming(t)},
		GenerateCount: 40,
	})
}
