package compiletoolsreceiver

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far:
// with it a benchmark on a shared machine reports what the work cost,
// which another process's load changes far less than the wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
