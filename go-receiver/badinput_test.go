package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// badBuild writes an invocation directory whose timing.json is broken in
// one way; it returns the path a warning must name.
type badBuild struct {
	name   string
	make   func(t *testing.T, parent string) string
	metric string // self-metric that must count it
}

func writeBuild(t *testing.T, parent, id string, content []byte) string {
	t.Helper()
	dir := filepath.Join(parent, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "timing.json")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func caseTiming(t *testing.T) []byte {
	t.Helper()
	src := filepath.Join(corpusDir(t), "cases", case01, "diagnostics")
	entries, _ := os.ReadDir(src)
	data, err := os.ReadFile(filepath.Join(src, entries[0].Name(), "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBadInputWarnsCountsAndKeepsOtherBuilds(t *testing.T) {
	cases := []badBuild{
		{"malformed json", func(t *testing.T, p string) string {
			return writeBuild(t, p, "20261130T000001-1", []byte("{not json"))
		}, "otelcol_receiver_compiletools_parse_failures"},
		{"truncated file", func(t *testing.T, p string) string {
			data := caseTiming(t)
			return writeBuild(t, p, "20261130T000002-2", data[:len(data)/2])
		}, "otelcol_receiver_compiletools_parse_failures"},
		{"over the size limit", func(t *testing.T, p string) string {
			data := caseTiming(t)
			pad := strings.Repeat(" ", 64*1024)
			return writeBuild(t, p, "20261130T000003-3", append(data, pad...))
		}, "otelcol_receiver_compiletools_parse_failures"},
		{"permission denied", func(t *testing.T, p string) string {
			dir := filepath.Join(p, "20261130T000004-4")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "timing.json")
			if os.Geteuid() == 0 {
				// root reads any mode; a timing.json that is a directory
				// fails to open the same way.
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				return path
			}
			if err := os.WriteFile(path, caseTiming(t), 0o000); err != nil {
				t.Fatal(err)
			}
			return path
		}, "otelcol_receiver_compiletools_path_problems"},
		{"symlink loop", func(t *testing.T, p string) string {
			dir := filepath.Join(p, "20261130T000005-5")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "timing.json")
			if err := os.Symlink(path, path); err != nil {
				t.Fatal(err)
			}
			return path
		}, "otelcol_receiver_compiletools_path_problems"},
		{"timing.json symlinked out of the roots", func(t *testing.T, p string) string {
			// A valid build elsewhere: following the link would send it.
			outside := writeBuild(t, t.TempDir(), "20261130T000007-7", caseTiming(t))
			dir := filepath.Join(p, "20261130T000007-7")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "timing.json")
			if err := os.Symlink(outside, path); err != nil {
				t.Fatal(err)
			}
			return path
		}, "otelcol_receiver_compiletools_symlinks_refused"},
		{"invocation directory symlinked out of the roots", func(t *testing.T, p string) string {
			outside := filepath.Dir(writeBuild(t, t.TempDir(), "20261130T000008-8", caseTiming(t)))
			link := filepath.Join(p, "20261130T000008-8")
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "otelcol_receiver_compiletools_symlinks_refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			copyCaseBuild(t, case01, parent)
			badPath := c.make(t, parent)
			// A leftover temp file of a killed ct-cake, and a build still running.
			leftover := filepath.Join(parent, "20261130T000006-6")
			os.MkdirAll(leftover, 0o755)
			os.WriteFile(filepath.Join(leftover, ".tmp.timing.json.abcdefgh.6"), []byte("{"), 0o644)

			cfg := testConfig(parent)
			if c.name == "over the size limit" {
				cfg.Limits.MaxFileSize = int64(len(caseTiming(t)) + 1024)
			}
			tel := componenttest.NewTelemetry()
			t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
			core, logs := observer.New(zapcore.WarnLevel)
			set := receivertest.NewNopSettings(metadata.Type)
			set.TelemetrySettings = tel.NewTelemetrySettings()
			set.Logger = zap.New(core)
			sink := new(consumertest.TracesSink)
			r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
			runUntilCleanup(t, r, err)

			want := referenceTraces(t, case01).SpanCount()
			waitFor(t, "the good build", func() bool { return sink.SpanCount() >= want })
			waitFor(t, "a warning naming "+badPath, func() bool {
				for _, e := range logs.All() {
					if e.ContextMap()["path"] == badPath {
						return true
					}
				}
				return false
			})
			waitFor(t, c.metric, func() bool { return metricSum(t, tel, c.metric) >= 1 })
			time.Sleep(100 * time.Millisecond)
			if len(sink.AllTraces()) != 1 {
				t.Fatalf("want only the good build, got %d deliveries", len(sink.AllTraces()))
			}
		})
	}
}

// metricSum adds up every data point of a counter in the test telemetry.
func metricSum(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var total int64
	if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
		for _, dp := range sum.DataPoints {
			total += dp.Value
		}
	}
	return total
}

func TestVanishingDirectoryMidScanIsHarmless(t *testing.T) {
	parent := t.TempDir()
	makeBuilds(t, parent, 20)
	sink := new(consumertest.TracesSink)
	startTraces(t, testConfig(parent), sink)
	// Remove builds while the receiver works through them.
	entries, _ := os.ReadDir(parent)
	for i, e := range entries {
		if i%2 == 0 {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
	copyCaseBuild(t, case01, parent)
	want := referenceTraces(t, case01).SpanCount()
	waitFor(t, "the build added after the removals", func() bool {
		for _, td := range sink.AllTraces() {
			res := td.ResourceSpans().At(0).Resource().Attributes()
			if v, ok := res.Get("ct.invocation_id"); ok && v.Str() == "20261130T034340-24175" && td.SpanCount() == want {
				return true
			}
		}
		return false
	})
}

// A side file in the invocation directory that is a symbolic link is not
// followed: the build goes out without it, with one warning and a count.
func TestSymlinkedSideFileIsRefused(t *testing.T) {
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	outside := filepath.Join(t.TempDir(), "stats")
	if err := os.WriteFile(outside, []byte("# /s/a.cpp\ndirect_cache_hit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "ccache.statslog")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(parent)
	cfg.SettleTimeout = time.Millisecond // the link never goes away
	// Metric points would then come from the statslog only.
	disableBuildMetrics(cfg)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	core, logs := observer.New(zapcore.WarnLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	sink := new(consumertest.MetricsSink)
	traces := new(consumertest.TracesSink)
	f := NewFactory()
	rt, err := f.CreateTraces(context.Background(), set, cfg, traces)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := f.CreateMetrics(context.Background(), set, cfg, sink)
	runUntilCleanup(t, rt, nil)
	runUntilCleanup(t, rm, err)
	waitFor(t, "the build", func() bool { return len(traces.AllTraces()) == 1 })
	waitFor(t, "the count", func() bool {
		return metricSum(t, tel, "otelcol_receiver_compiletools_symlinks_refused") == 1
	})
	warned := 0
	for _, e := range logs.All() {
		if e.ContextMap()["path"] == link {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("want one warning naming %s, got %d: %v", link, warned, logs.All())
	}
	if sink.DataPointCount() != 0 {
		t.Fatalf("the linked statslog was read: %d metric points", sink.DataPointCount())
	}
}
