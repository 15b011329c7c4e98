package livebuilds

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// Options are the tracker's settings: the live block, and what its
// records and metrics carry.
type Options struct {
	// Interval is how often the growing files of running builds are read.
	Interval time.Duration
	// MaxRecordsPerBuild caps the records read from one build per interval.
	MaxRecordsPerBuild int
	// MaxRequestRecords and MaxRequestBytes bound one logs request.
	MaxRequestRecords, MaxRequestBytes int
	// MaxFilesPerBuild caps the growing files followed per build;
	// MaxOpenFilesPerBuild and MaxOpenFiles the descriptors kept open for
	// them, per build and in total (held.go).
	MaxFilesPerBuild, MaxOpenFilesPerBuild, MaxOpenFiles int
	// AbandonAfter: a build without timing.json this long after it was
	// first seen is taken as dead; with AbandonWhenPIDGone, so is one
	// whose ct-cake PID no longer exists.
	AbandonAfter       time.Duration
	AbandonWhenPIDGone bool
	// Files maps builds to their growing files outside their directory.
	Files []FilesMapping
	// Exclude are the receiver's exclude globs: a build the file watches
	// saw appear is not followed when one matches it.
	Exclude []string

	HostName, ServiceName string
	// ResourceAttributes are the configured ones, in key order.
	ResourceAttributes []ffi.Attribute
	MaxAttributeLen    uint32
	// MetricsEvery is the longest time between two sends of the live
	// metrics (poll_interval): a gauge needs points to stay visible.
	MetricsEvery time.Duration
	// PipelineName is a build's cicd.pipeline.name, as its trace will
	// carry it (nil: none).
	PipelineName func(invocationDir string) string
}

// FilesMapping: builds whose invocation directory matches Include have
// their make timing logs in MakeTimingDir and their ninja log at NinjaLog.
type FilesMapping struct {
	Include, MakeTimingDir, NinjaLog string
}

// Settings are what the tracker uses of the receiver.
type Settings struct {
	Logger *zap.Logger
	Now    func() time.Time
	// Capturer holds the captured transient files (nil: capture disabled).
	Capturer *capture.Capturer
	// Checkpoints tell whether, and how, a finished build was settled.
	Checkpoints Checkpoints
	// ExplicitStatslog is the statslog capture.statslogs maps a build's
	// directory to ("": none).
	ExplicitStatslog func(dir string) string
	// ConsumeLogs sends live records to the logs consumer.
	ConsumeLogs func(context.Context, plog.Logs) error
	// ConsumeMetrics sends the live metrics (nil: no metrics consumer).
	ConsumeMetrics func(context.Context, pmetric.Metrics) error
}

// Checkpoints are the receiver's build checkpoints, as the tracker reads
// them: a build's end record waits for its delivery.
type Checkpoints interface {
	Get(dir string) (checkpoint.Record, bool)
}
