package compiletoolsreceiver

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configretry"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/casscan"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// Root span kinds of the deprecated `root_span_kind` (semconv_root_span
// replaces it: `server` is semconv_root_span: true).
const (
	RootSpanInternal = "internal"
	RootSpanServer   = "server"
)

// Temporalities of the metric series the host's builds share
// (`metrics_temporality`).
const (
	MetricsTemporalityCumulative = "cumulative"
	MetricsTemporalityDelta      = "delta"
)

// Start positions for builds that exist when the receiver first starts
// without checkpoints (filelog's vocabulary).
const (
	StartAtEnd       = "end"
	StartAtBeginning = "beginning"
)

// Config is the receiver's configuration (README.md documents every key).
type Config struct {
	// Include lists doublestar globs of diagnostics parents (directories that
	// hold invocation directories) or of invocation directories themselves.
	Include []string `mapstructure:"include"`
	// Exclude lists doublestar globs of invocation directories to ignore.
	Exclude []string `mapstructure:"exclude"`
	// PollInterval is how often the include globs are scanned.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// SettleTimeout bounds how long a finished build waits while ct-cake's
	// post-processing files (rule_outcomes.log, an auto ccache.statslog)
	// still sit next to timing.json.
	SettleTimeout time.Duration `mapstructure:"settle_timeout"`
	// StartAt decides what happens to builds already on disk at the first
	// start without checkpoints: "end" skips them, "beginning" sends them.
	StartAt string `mapstructure:"start_at"`
	// MaxAge skips builds whose timing.json is older than this (0: no limit).
	MaxAge time.Duration `mapstructure:"max_age"`
	// Storage names a storage extension that keeps per-build checkpoints
	// across restarts; without it, sent builds are remembered in memory.
	Storage *component.ID `mapstructure:"storage"`
	// MaxConcurrentBuilds bounds builds parsed at once.
	MaxConcurrentBuilds int `mapstructure:"max_concurrent_builds"`
	// MaxBuildsPerPoll bounds builds started per poll; the rest wait.
	MaxBuildsPerPoll int `mapstructure:"max_builds_per_poll"`
	// RetryOnFailure paces redelivery of a build after a retryable consumer
	// error. max_elapsed_time 0 (the default here) retries for as long as the
	// build is on disk; with retries disabled a failed build is dropped.
	RetryOnFailure configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// MaxRequestSpans bounds the spans of one traces request: a build's
	// trace goes to the consumer as several requests of at most this many.
	MaxRequestSpans int `mapstructure:"max_request_spans"`
	// Limits bound what the parser reads from one build.
	Limits LimitsConfig `mapstructure:"limits"`
	// HostName is `host.name` (and part of the trace id); default: os.Hostname().
	HostName string `mapstructure:"host_name"`
	// ServiceName is `service.name`.
	ServiceName string `mapstructure:"service_name"`
	// ResourceAttributes are added to every build's resource; built-in keys
	// win. Deprecated spelling of Resource; after Unmarshal it holds the
	// effective value of either key.
	ResourceAttributes map[string]string `mapstructure:"resource_attributes"`
	// Resource is filelog's word for ResourceAttributes.
	Resource map[string]string `mapstructure:"resource"`
	// ExcludeOlderThan is filelog's word for MaxAge; after Unmarshal MaxAge
	// holds the effective value of either key.
	ExcludeOlderThan time.Duration `mapstructure:"exclude_older_than"`
	// PipelineName is `cicd.pipeline.name`; default: the git work tree's
	// directory name, else the diagnostics directory holding the build.
	PipelineName string `mapstructure:"pipeline_name"`
	// SemconvRootSpan makes the root span the CI/CD conventions' pipeline
	// run span: named `{action} {pipeline}` (`BUILD geom`) and of kind
	// SERVER, instead of ct-cake's `compiletools.build`, INTERNAL.
	SemconvRootSpan bool `mapstructure:"semconv_root_span"`
	// RootSpanKind is the deprecated spelling: "server" is
	// SemconvRootSpan, "internal" its default (config_aliases.go).
	RootSpanKind string `mapstructure:"root_span_kind"`
	// MetricsAsSpans emits ccache snapshots as spans instead of metrics.
	MetricsAsSpans bool `mapstructure:"metrics_as_spans"`
	// Metrics are mdatagen's per-metric switches
	// (`metrics: {<name>: {enabled: false}}`, metadata.yaml).
	Metrics metadata.MetricsConfig `mapstructure:"metrics"`
	// ResourceAttributeSwitches are mdatagen's resource attribute switches,
	// written `resource_attributes: {<key>: {enabled: false}}` (a map of
	// strings under that key is the deprecated spelling of `resource`);
	// decoded by Unmarshal (config_switches.go).
	ResourceAttributeSwitches metadata.ResourceAttributesConfig `mapstructure:"-"`
	// PerBuildMetricIdentity makes every build's metrics their own series,
	// as ct-cake sends them (the compatibility switch); by default the
	// host's builds share series.
	PerBuildMetricIdentity bool `mapstructure:"per_build_metric_identity"`
	// MetricsTemporality is how shared series leave the receiver:
	// "cumulative" (summed over the builds since the receiver started) or
	// "delta" (each build's own numbers).
	MetricsTemporality string `mapstructure:"metrics_temporality"`
	// GitCommit controls `git.commit.sha`.
	GitCommit GitCommitConfig `mapstructure:"git_commit"`
	// Capture keeps ct-cake's transient files of running builds.
	Capture CaptureConfig `mapstructure:"capture"`
	// CAS configures periodic scans of compiletools' CAS stores.
	CAS CASConfig `mapstructure:"cas"`
	// History keeps per-target compile times across builds (config_history.go).
	History HistoryConfig `mapstructure:"history"`
	// Live sends the progress of running builds as log records.
	Live LiveConfig `mapstructure:"live"`
	// Analytics configures the build analytics.
	Analytics AnalyticsConfig `mapstructure:"analytics"`
	// TimeTrace reads clang's -ftime-trace files (config_time_trace.go).
	TimeTrace TimeTraceConfig `mapstructure:"time_trace"`

	// deprecatedKeys are the deprecated spellings the configuration used,
	// each with its replacement, for the receiver to warn about.
	deprecatedKeys [][2]string
	// aliasConflicts are keys given under both spellings.
	aliasConflicts []error
	// keysGiven are the renamed keys given under their new spelling, for
	// the messages (cas.collection_interval, not cas.scan_interval).
	keysGiven map[string]bool

	// prevent unkeyed literal initialization
	_ struct{}
}

// LimitsConfig bounds untrusted input; 0 keeps the core's default.
type LimitsConfig struct {
	MaxFileSize        int64 `mapstructure:"max_file_size"`
	MaxEvents          int64 `mapstructure:"max_events"`
	MaxDepth           int   `mapstructure:"max_depth"`
	MaxAttributeLength int   `mapstructure:"max_attribute_length"`
	// MaxParseBytesInFlight bounds the input bytes (timing.json plus side
	// files) of the builds parsed at once; see parseBudget.
	MaxParseBytesInFlight int64 `mapstructure:"max_parse_bytes_in_flight"`

	_ struct{}
}

// GitCommitConfig: the source tree's HEAD is only the build's commit shortly
// after the build; later it may have moved, and a guess is worse than nothing.
type GitCommitConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// MaxLag is the longest time after the build's end at which HEAD is
	// still trusted to be the build's commit.
	MaxLag time.Duration `mapstructure:"max_lag"`

	_ struct{}
}

// CaptureConfig: ct-cake deletes an auto ccache.statslog and
// rule_outcomes.log right after writing timing.json; capturing them while
// the build runs keeps their data for that build.
type CaptureConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Directory holds captured files; on the builds' filesystem a capture is
	// a hard link (no copy). Default: <os temp dir>/otelcol-compiletools-capture.
	Directory string `mapstructure:"directory"`
	// Statslogs maps builds to explicit-path ccache statslogs
	// (`--ccache-statslog=PATH`) that live outside the invocation directory.
	Statslogs []StatslogMapping `mapstructure:"statslogs"`

	_ struct{}
}

// StatslogMapping: builds whose invocation directory matches Include use
// the statslog at Path.
type StatslogMapping struct {
	Include string `mapstructure:"include"`
	Path    string `mapstructure:"path"`

	_ struct{}
}

// AnalyticsConfig: where the dependency graph of a build is, for an exact
// critical path (ninja and make backends); without it the path is estimated.
type AnalyticsConfig struct {
	// BuildGraphs maps builds to their generated build.ninja or Makefile.
	BuildGraphs []BuildGraphMapping `mapstructure:"build_graphs"`

	_ struct{}
}

// BuildGraphMapping: builds whose invocation directory matches Include
// have their dependency graph in Path ("{variant}" stands for the build's
// variant, e.g. <ws>/bin/{variant}/Makefile).
type BuildGraphMapping struct {
	Include string `mapstructure:"include"`
	Path    string `mapstructure:"path"`

	_ struct{}
}

// CASConfig: store health like `ct-cache-report`, scraped on a schedule.
type CASConfig struct {
	// Stores are explicit cells (one variant's directory of one kind); a
	// missing one reports zeros, as ct-cache-report does for a given flag.
	Stores []CASStore `mapstructure:"stores"`
	// Pools are a kind's parent directories whose variant cells are all
	// scanned, as `ct-cache-report --all-variants` enumerates them.
	Pools []CASStore `mapstructure:"pools"`
	// ScanInterval is the time between scans; scans never overlap.
	// Deprecated spelling of CollectionInterval; after Unmarshal it holds
	// the effective value of either key.
	ScanInterval time.Duration `mapstructure:"scan_interval"`
	// CollectionInterval is the scraper word for ScanInterval.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// Timeout bounds one store set's scan (0: no limit), as a scraper's.
	Timeout time.Duration `mapstructure:"timeout"`
	// InitialDelay is the time before the first scan after start.
	InitialDelay time.Duration `mapstructure:"initial_delay"`
	// MaxThreads bounds threads per cell scan (0: the core's default).
	MaxThreads int `mapstructure:"max_threads"`
	// LeaseDuration is how long a `scan: elect` lease lasts unrenewed
	// (0: three collection intervals); the holder renews it every cycle.
	LeaseDuration time.Duration `mapstructure:"lease_duration"`

	_ struct{}
}

// CASStore is one configured store cell or pool.
type CASStore struct {
	// Kind is a store kind: obj, pch, pcm or exe (ffi.CASKindNames).
	Kind string `mapstructure:"kind"`
	Path string `mapstructure:"path"`
	// ID is the store's identity, ct.cas.store.id: the same on every host
	// that mounts the store (empty: the store's id file, else host-local).
	ID string `mapstructure:"id"`
	// Scan is who scans it: always (every receiver that has it, the
	// default), never, or elect (the one receiver holding its lease).
	Scan string `mapstructure:"scan"`

	_ struct{}
}

// leaseDuration is the effective cas.lease_duration.
func (c CASConfig) leaseDuration() time.Duration {
	if c.LeaseDuration > 0 {
		return c.LeaseDuration
	}
	return 3 * c.ScanInterval
}

// defaultMaxRequestSpans keeps a traces request under half of a default
// gRPC hop's 4 MiB even when every span is as large as ct-cake's rules can
// make one under the default limits (~13 KB: three path attributes cut at
// 4096 bytes); typical spans (~0.5 KB) make ~70 KB requests. README, Large
// builds.
const defaultMaxRequestSpans = 128

// Upper bounds Validate enforces. The core takes depth, attribute length
// and thread count as 32-bit numbers: without a bound, 2^32+5 would reach it
// as 5. Each bound is far above any real need.
const (
	// serde_json stops at 128 nested containers, two per event level, so
	// no timing.json gets near this depth.
	maxMaxDepth = 1024
	// Larger than any attribute a gRPC hop (4 MiB per request) would carry.
	maxMaxAttributeLength = 16 << 20
	// A scan is bound by the disk and the kernel; more threads only queue.
	maxCASThreads = 256
	// The core reads a file whole and peaks at about twice its size, with
	// the pdata of its output on top: beyond this, one build could take
	// gigabytes outside the memory_limiter's sight.
	maxMaxFileSize = 1 << 30
)

func createDefaultConfig() *Config {
	retry := configretry.NewDefaultBackOffConfig()
	// A full exporter queue is the usual retryable error: come back soon,
	// and for as long as the build is on disk.
	retry.InitialInterval = time.Second
	retry.MaxElapsedTime = 0
	return &Config{
		RetryOnFailure:      retry,
		PollInterval:        5 * time.Second,
		SettleTimeout:       30 * time.Second,
		StartAt:             StartAtEnd,
		MaxConcurrentBuilds: 2,
		MaxBuildsPerPoll:    100,
		MaxRequestSpans:     defaultMaxRequestSpans,
		ServiceName:         "compiletools",
		Metrics:             metadata.DefaultMetricsConfig(),
		MetricsTemporality:  MetricsTemporalityCumulative,
		GitCommit:           GitCommitConfig{Enabled: true, MaxLag: 30 * time.Second},
		Capture:             CaptureConfig{Enabled: true},
		CAS:                 CASConfig{ScanInterval: 5 * time.Minute, InitialDelay: 10 * time.Second},
		History:             defaultHistoryConfig(),
		TimeTrace:           defaultTimeTraceConfig(),

		ResourceAttributeSwitches: metadata.DefaultResourceAttributesConfig(),
		Live:                      defaultLiveConfig(),
	}
}

// defaultMaxFileSize is the core's limits.max_file_size default.
const defaultMaxFileSize = 256 << 20

// maxFileSize is limits.max_file_size in effect.
func (c *Config) maxFileSize() int64 {
	if c.Limits.MaxFileSize > 0 {
		return c.Limits.MaxFileSize
	}
	return defaultMaxFileSize
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Include) == 0 {
		errs = append(errs, errors.New("include: at least one glob of a diagnostics directory is required"))
	}
	checkGlobs := func(key string, patterns []string) {
		for i, p := range patterns {
			if p == "" {
				add("%s[%d]: empty pattern", key, i)
			} else if !doublestar.ValidatePathPattern(p) {
				add("%s[%d]: invalid glob %q", key, i, p)
			}
		}
	}
	checkGlobs("include", c.Include)
	checkGlobs("exclude", c.Exclude)
	if c.PollInterval < minInterval {
		add("poll_interval: must be at least %s, got %s", minInterval, c.PollInterval)
	}
	if c.SettleTimeout < 0 {
		add("settle_timeout: must not be negative, got %s", c.SettleTimeout)
	}
	if c.StartAt != StartAtEnd && c.StartAt != StartAtBeginning {
		add("start_at: must be %q or %q, got %q", StartAtEnd, StartAtBeginning, c.StartAt)
	}
	if c.MaxAge < 0 {
		add("max_age: must not be negative, got %s", c.MaxAge)
	}
	if c.MaxConcurrentBuilds < 1 {
		add("max_concurrent_builds: must be at least 1, got %d", c.MaxConcurrentBuilds)
	}
	if c.MaxBuildsPerPoll < 1 {
		add("max_builds_per_poll: must be at least 1, got %d", c.MaxBuildsPerPoll)
	}
	if c.MaxRequestSpans < 1 {
		add("max_request_spans: must be at least 1, got %d", c.MaxRequestSpans)
	}
	if c.Limits.MaxFileSize < 0 || c.Limits.MaxEvents < 0 || c.Limits.MaxDepth < 0 || c.Limits.MaxAttributeLength < 0 {
		add("limits: values must not be negative (0 keeps the default)")
	}
	if c.Limits.MaxFileSize > maxMaxFileSize {
		add("limits.max_file_size: at most %d (1 GiB), got %d", maxMaxFileSize, c.Limits.MaxFileSize)
	}
	if c.Limits.MaxParseBytesInFlight < 0 {
		add("limits.max_parse_bytes_in_flight: must not be negative (0 keeps the default), got %d", c.Limits.MaxParseBytesInFlight)
	}
	if c.Limits.MaxDepth > maxMaxDepth {
		add("limits.max_depth: at most %d, got %d", maxMaxDepth, c.Limits.MaxDepth)
	}
	if c.Limits.MaxAttributeLength > maxMaxAttributeLength {
		add("limits.max_attribute_length: at most %d, got %d", maxMaxAttributeLength, c.Limits.MaxAttributeLength)
	}
	if c.ServiceName == "" {
		add("service_name: must not be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(c.ResourceAttributes)) {
		// The core receives them as key\0value\0…: a NUL inside would
		// shift every later pair (or fail every build on an odd count).
		if strings.ContainsRune(k, 0) || strings.ContainsRune(c.ResourceAttributes[k], 0) {
			add("resource_attributes: %q: keys and values must not contain NUL bytes", k)
		}
	}
	if c.MetricsTemporality != MetricsTemporalityCumulative && c.MetricsTemporality != MetricsTemporalityDelta {
		add("metrics_temporality: must be %q or %q, got %q", MetricsTemporalityCumulative, MetricsTemporalityDelta, c.MetricsTemporality)
	}
	if c.RootSpanKind != "" && c.RootSpanKind != RootSpanInternal && c.RootSpanKind != RootSpanServer {
		add("root_span_kind (deprecated: semconv_root_span): must be %q or %q, got %q", RootSpanInternal, RootSpanServer, c.RootSpanKind)
	}
	errs = append(errs, c.aliasConflicts...)
	if c.GitCommit.MaxLag < 0 {
		add("git_commit.max_lag: must not be negative, got %s", c.GitCommit.MaxLag)
	}
	for i, m := range c.Capture.Statslogs {
		if m.Include == "" || !doublestar.ValidatePathPattern(m.Include) {
			add("capture.statslogs[%d].include: invalid glob %q", i, m.Include)
		}
		if m.Path == "" {
			add("capture.statslogs[%d].path: must not be empty", i)
		}
	}
	for i, m := range c.Analytics.BuildGraphs {
		if m.Include == "" || !doublestar.ValidatePathPattern(m.Include) {
			add("analytics.build_graphs[%d].include: invalid glob %q", i, m.Include)
		}
		if m.Path == "" || strings.ContainsRune(m.Path, 0) {
			add("analytics.build_graphs[%d].path: must be a non-empty path", i)
		} else if !filepath.IsAbs(m.Path) {
			// Relative to the collector's working directory, never a build's.
			add("analytics.build_graphs[%d].path: must be an absolute path, got %q", i, m.Path)
		}
	}
	elect := false
	checkStores := func(key string, stores []CASStore) {
		for i, st := range stores {
			if _, ok := ffi.ParseCASKind(st.Kind); !ok {
				add("%s[%d].kind: must be one of %s; got %q", key, i, strings.Join(ffi.CASKindNames(), ", "), st.Kind)
			}
			if st.Path == "" {
				add("%s[%d].path: must not be empty", key, i)
			}
			if st.ID != "" && !casscan.ValidStoreID(st.ID) {
				add("%s[%d].id: must be 1 to 128 characters of letters, digits and . _ : / - starting with a letter or digit; got %q", key, i, st.ID)
			}
			if st.Scan != "" && !slices.Contains(casscan.ScanModes(), st.Scan) {
				add("%s[%d].scan: must be one of %s; got %q", key, i, strings.Join(casscan.ScanModes(), ", "), st.Scan)
			}
			if st.Scan == casscan.ScanElect {
				elect = true
			}
		}
	}
	checkStores("cas.stores", c.CAS.Stores)
	checkStores("cas.pools", c.CAS.Pools)
	if c.CAS.LeaseDuration < 0 {
		add("cas.lease_duration: must not be negative, got %s", c.CAS.LeaseDuration)
	} else if elect && c.CAS.ScanInterval > 0 && c.CAS.leaseDuration() < 2*c.CAS.ScanInterval {
		// A holder renews once per cycle: a shorter lease would expire
		// between two renewals and be taken over from a live holder.
		add("cas.lease_duration: must be at least twice %s (%s), got %s", c.spelled("cas.scan_interval", "cas.collection_interval"),
			c.CAS.ScanInterval, c.CAS.LeaseDuration)
	} else if elect && c.CAS.Timeout > 0 && c.CAS.leaseDuration() <= c.CAS.Timeout {
		// Renewed between store sets only: a lease shorter than one set's
		// scan would be taken over from a holder still scanning.
		add("cas.lease_duration: must be longer than cas.timeout (%s), got %s", c.CAS.Timeout, c.CAS.leaseDuration())
	}
	if len(c.CAS.Stores)+len(c.CAS.Pools) > 0 && c.CAS.ScanInterval <= 0 {
		add("%s: must be positive, got %s", c.spelled("cas.scan_interval", "cas.collection_interval"), c.CAS.ScanInterval)
	}
	if c.CAS.InitialDelay < 0 {
		add("cas.initial_delay: must not be negative, got %s", c.CAS.InitialDelay)
	}
	if c.CAS.Timeout < 0 {
		add("cas.timeout: must not be negative, got %s", c.CAS.Timeout)
	}
	if c.CAS.MaxThreads < 0 || c.CAS.MaxThreads > maxCASThreads {
		add("cas.max_threads: must be 0 (the default) to %d, got %d", maxCASThreads, c.CAS.MaxThreads)
	}
	errs = append(errs, c.History.validate()...)
	errs = append(errs, c.TimeTrace.validate()...)
	errs = append(errs, c.Live.validate()...)
	return errors.Join(errs...)
}
