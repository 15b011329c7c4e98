package ffi

import (
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// CASKind is a CAS store kind (CT_CAS_KIND_*).
type CASKind uint32

const (
	CASObj CASKind = 0
	CASPch CASKind = 1
	CASPcm CASKind = 2
	CASExe CASKind = 3
)

// ParseCASKind maps "obj", "pch", "pcm", "exe" to a kind.
func ParseCASKind(s string) (CASKind, bool) {
	switch s {
	case "obj":
		return CASObj, true
	case "pch":
		return CASPch, true
	case "pcm":
		return CASPcm, true
	case "exe":
		return CASExe, true
	}
	return 0, false
}

// CASCell is one store cell to scan.
type CASCell struct {
	Kind CASKind
	Path string
	// Explicit cells report zeros when missing; discovered ones are skipped.
	Explicit bool
}

// CASRequest is one scan of a store set (one variant's cells).
type CASRequest struct {
	Cells              []CASCell
	HostName           string
	ServiceName        string
	Variant            string
	ResourceAttributes []Attribute
	TimeUnixNano       uint64
	AsSpans            bool
	MaxThreads         uint32
}

// CASResult is one scan as pdata.
type CASResult struct {
	Metrics      pmetric.Metrics
	HasMetrics   bool
	Traces       ptrace.Traces
	HasTraces    bool
	CellsScanned uint32
	Points       uint64
	Anomalies    uint64
	Warnings     []string
}
