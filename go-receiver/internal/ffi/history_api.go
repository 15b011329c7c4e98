package ffi

// HistoryFootprint is what a compile History holds.
type HistoryFootprint struct {
	Targets, Compiles uint64
	// Bytes is the core's estimate of the heap the targets take.
	Bytes uint64
	// StagedBuilds were processed and not committed yet.
	StagedBuilds uint64
	// Evicted targets were forgotten to stay within the size limit.
	Evicted uint64
}
