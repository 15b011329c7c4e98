package casscan

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// Store is one configured store cell or pool: a kind (ffi.CASKindNames)
// and a directory, its id (empty: from the store's id file, else
// host-local) and scan mode (ScanModes; empty: always).
type Store struct {
	Kind, Path string
	ID, Scan   string
}

// Options are the scans' settings: the cas block, and what every
// snapshot's resource carries.
type Options struct {
	// Stores are explicit cells, Pools parents of a kind's variant cells.
	Stores, Pools []Store
	// InitialDelay comes before the first scan, ScanInterval between two;
	// Timeout bounds one store set's scan (0: no limit).
	InitialDelay, ScanInterval, Timeout time.Duration
	// MaxThreads bounds threads per cell scan (0: the core's default).
	MaxThreads int
	// AsSpans makes snapshots spans instead of metrics (metrics_as_spans).
	AsSpans               bool
	HostName, ServiceName string
	ResourceAttributes    []ffi.Attribute
	// Holder names this receiver in the leases it holds (host.name and
	// component id); LeaseDuration is how long a lease lasts unrenewed.
	Holder        string
	LeaseDuration time.Duration
}

// Telemetry are the receiver's own instruments the scans record to.
type Telemetry struct {
	ScanDuration metric.Float64Histogram
	ScanErrors   metric.Int64Counter
	Anomalies    metric.Int64Counter
	// LeaseProblems counts lease and store id files that could not be
	// used; LeasesHeld is the number of store leases this receiver holds.
	LeaseProblems metric.Int64Counter
	LeasesHeld    metric.Int64UpDownCounter
}

// Settings are what the scans use of the receiver.
type Settings struct {
	Logger    *zap.Logger
	Now       func() time.Time
	Telemetry Telemetry
	// Consumed lists the signals that have a consumer.
	Consumed func() ffi.Signals
	// Consume hands the wanted signals of a snapshot to their consumers.
	Consume func(ctx context.Context, want ffi.Signals, out ffi.Output) error
}

// Scanner does every scan of one receiver, in turn.
type Scanner struct {
	o   Options
	set Settings
	// entries are the configured stores and pools with their identity and
	// election state.
	entries []*entry
	// failingPools are the pools whose listing failed and was logged,
	// until it works again.
	failingPools map[string]bool
	// warned are the warnings of each variant's last scan, logged once:
	// an unreadable shard stays unreadable scan after scan.
	warned map[string]map[string]bool
}

// New returns the scanner of o; Run starts its schedule.
func New(o Options, set Settings) *Scanner {
	return &Scanner{o: o, set: set, entries: newEntries(o, set.Now), failingPools: map[string]bool{},
		warned: map[string]map[string]bool{}}
}
