package ffi

// CASKind is a CAS store kind, a CT_CAS_KIND_* value of the core's header.
type CASKind uint32

// casKindName pairs a configuration name with its kind. The one table of
// them, casKinds, lives beside the cgo binding, where its values are the
// header's own constants.
type casKindName struct {
	name string
	kind CASKind
}

// ParseCASKind maps a configured kind name ("obj", …) to its kind.
func ParseCASKind(s string) (CASKind, bool) {
	for _, k := range casKinds {
		if k.name == s {
			return k.kind, true
		}
	}
	return 0, false
}

// CASKindNames lists the valid kind names in the core's order.
func CASKindNames() []string {
	names := make([]string, len(casKinds))
	for i, k := range casKinds {
		names[i] = k.name
	}
	return names
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
	Output
	CellsScanned uint32
	Points       uint64
	Anomalies    uint64
}

// CASCacheFootprint is the size of a CASCache: cells and shards kept,
// distinct bucket keys over them, and the estimated heap bytes held.
type CASCacheFootprint struct {
	Cells, Shards, Buckets, Bytes uint64
}
