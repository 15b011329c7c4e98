package ffi

import "go.opentelemetry.io/collector/pdata/plog"

// LiveKind says which growing file the bytes of a LiveRequest come from, or
// which build event to emit (CT_LIVE_* in the header).
type LiveKind uint32

const (
	LiveStatslog   LiveKind = 1 // an auto ccache.statslog
	LiveMakeTiming LiveKind = 2 // .ct-make-timing.<pid>.*.jsonl
	LiveNinjaLog   LiveKind = 3 // .ninja_log
	LiveBuildStart LiveKind = 4 // the ct.build.start record
	LiveBuildEnd   LiveKind = 5 // the ct.build.end record
)

// LiveRequest is one look at a running build: the bytes appended to one of
// its files since the last look, or its start or end.
type LiveRequest struct {
	Kind               LiveKind
	InvocationDir      string
	HostName           string
	ServiceName        string
	ResourceAttributes []Attribute
	// Data holds the bytes appended since the last call (file kinds).
	Data []byte
	// Final: no more bytes will come, so a last line without its newline
	// is a record too.
	Final bool
	// Abandoned (end): the build died without timing.json.
	Abandoned bool
	// LinkTrace (end): the build's trace was delivered; the record carries
	// its trace id and root span id.
	LinkTrace        bool
	ObservedUnixNano uint64
	// MaxRecords caps the records of this call (0: no cap); the bytes of
	// the records left out are not consumed.
	MaxRecords      uint32
	MaxAttributeLen uint32
}

// LiveOutcomes counts the compiles of one call by ccache outcome.
type LiveOutcomes struct {
	DirectHits, PreprocessedHits, Misses, Uncacheable uint64
}

// LiveResult is what one live call returns.
type LiveResult struct {
	Logs    plog.Logs
	HasLogs bool
	// Consumed bytes of Data; the rest is to be passed again next time.
	Consumed uint64
	Records  uint64
	// Skipped lines that were not records.
	Skipped  uint64
	Outcomes LiveOutcomes
	Warnings []string
}
