package compiletoolsreceiver

import (
	"fmt"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/livebuilds"
)

// LiveConfig: progress of running builds as log records (issue 16). It is
// active only when the receiver is in a logs pipeline.
type LiveConfig struct {
	// Enabled turns live tracking on (it still needs a logs pipeline).
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often the growing files of running builds are read.
	Interval time.Duration `mapstructure:"interval"`
	// MaxRecordsPerBuild caps the records read from one build per
	// interval; the rest waits for the next one, so a huge burst from one
	// build neither floods the pipeline nor starves the other builds.
	MaxRecordsPerBuild int `mapstructure:"max_records_per_build"`
	// MaxRequestRecords and MaxRequestBytes bound one logs request (a
	// gateway refuses a body over its limit, and every build in it).
	MaxRequestRecords int `mapstructure:"max_request_records"`
	MaxRequestBytes   int `mapstructure:"max_request_bytes"`
	// MaxFilesPerBuild caps the growing files followed per build (its
	// statslogs, make timing logs and ninja log).
	MaxFilesPerBuild int `mapstructure:"max_files_per_build"`
	// MaxOpenFilesPerBuild and MaxOpenFiles bound the descriptors kept
	// open for files ct-cake deletes, per build and in total (never more
	// than a quarter of the process's descriptor limit).
	MaxOpenFilesPerBuild int `mapstructure:"max_open_files_per_build"`
	MaxOpenFiles         int `mapstructure:"max_open_files"`
	// AbandonAfter: a build without timing.json this long after it was
	// first seen is taken as dead.
	AbandonAfter time.Duration `mapstructure:"abandon_after"`
	// AbandonWhenPIDGone: a build whose ct-cake PID (from the directory
	// name) no longer exists on this host is taken as dead. Turn it off
	// when builds run in another PID namespace than the collector.
	AbandonWhenPIDGone bool `mapstructure:"abandon_when_pid_gone"`
	// Files maps builds to the growing files outside their invocation
	// directory (the make backend's timing log, ninja's .ninja_log), whose
	// location depends on the build's working directory.
	Files []LiveFilesMapping `mapstructure:"files"`

	_ struct{}
}

// LiveFilesMapping: builds whose invocation directory matches Include have
// their make timing logs in MakeTimingDir and their ninja log at NinjaLog.
type LiveFilesMapping struct {
	Include       string `mapstructure:"include"`
	MakeTimingDir string `mapstructure:"make_timing_dir"`
	NinjaLog      string `mapstructure:"ninja_log"`

	_ struct{}
}

// Defaults of the logs requests' bounds: a fifth of a gateway's default
// 20 MiB body limit, and records enough for a few builds' reads.
const (
	defaultLiveMaxRequestRecords = 4096
	defaultLiveMaxRequestBytes   = 4 << 20
	// minInterval is the shortest poll_interval and live.interval: below
	// it a receiver does little but stat files (1ns used most of a core).
	minInterval = 10 * time.Millisecond
)

func defaultLiveConfig() LiveConfig {
	return LiveConfig{
		Enabled:              true,
		Interval:             time.Second,
		MaxRecordsPerBuild:   1000,
		MaxRequestRecords:    defaultLiveMaxRequestRecords,
		MaxRequestBytes:      defaultLiveMaxRequestBytes,
		MaxFilesPerBuild:     64,
		MaxOpenFilesPerBuild: 4,
		MaxOpenFiles:         256,
		AbandonAfter:         24 * time.Hour,
		AbandonWhenPIDGone:   true,
	}
}

// trackerFiles is live.files as the live-build follower takes it.
func (l LiveConfig) trackerFiles() []livebuilds.FilesMapping {
	files := make([]livebuilds.FilesMapping, 0, len(l.Files))
	for _, m := range l.Files {
		files = append(files, livebuilds.FilesMapping{Include: m.Include, MakeTimingDir: m.MakeTimingDir, NinjaLog: m.NinjaLog})
	}
	return files
}

func (l LiveConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if l.Interval < minInterval {
		add("live.interval: must be at least %s, got %s", minInterval, l.Interval)
	}
	if l.MaxRequestRecords < 1 {
		add("live.max_request_records: must be at least 1, got %d", l.MaxRequestRecords)
	}
	if l.MaxRequestBytes < 64<<10 {
		add("live.max_request_bytes: must be at least %d (64 KiB), got %d", 64<<10, l.MaxRequestBytes)
	}
	if l.MaxFilesPerBuild < 1 || l.MaxFilesPerBuild > 1<<16 {
		add("live.max_files_per_build: must be 1 to %d, got %d", 1<<16, l.MaxFilesPerBuild)
	}
	if l.MaxOpenFilesPerBuild < 0 {
		add("live.max_open_files_per_build: must not be negative, got %d", l.MaxOpenFilesPerBuild)
	}
	if l.MaxOpenFiles < 0 {
		add("live.max_open_files: must not be negative, got %d", l.MaxOpenFiles)
	}
	if l.MaxRecordsPerBuild < 1 || l.MaxRecordsPerBuild > 1<<20 {
		add("live.max_records_per_build: must be 1 to %d, got %d", 1<<20, l.MaxRecordsPerBuild)
	}
	if l.AbandonAfter <= 0 {
		add("live.abandon_after: must be positive, got %s", l.AbandonAfter)
	}
	for i, m := range l.Files {
		if m.Include == "" || !doublestar.ValidatePathPattern(m.Include) {
			add("live.files[%d].include: invalid glob %q", i, m.Include)
		}
		if m.MakeTimingDir == "" && m.NinjaLog == "" {
			add("live.files[%d]: set make_timing_dir, ninja_log or both", i)
		}
	}
	return errs
}
