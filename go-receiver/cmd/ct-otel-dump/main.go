// Command ct-otel-dump prints what the compiletools receiver makes of one
// build, as OTLP/JSON in the form the collector's file exporter writes: one
// line per signal, {"resourceSpans":[…]} then {"resourceMetrics":[…]}.
// It reads the build through the same Rust core and with the same request
// the receiver builds (host name, pipeline name, git HEAD within its lag),
// so with the collector's host_name the trace and span IDs are the ones the
// collector sends. For debugging a build and for documentation; it sends
// nothing and remembers nothing.
//
//	ct-otel-dump [flags] DIR
//	ct-otel-dump diff [flags] OLD_DIR NEW_DIR
//
// DIR is an invocation directory (YYYYMMDDTHHMMSS-PID) or a diagnostics
// directory holding some, of which the newest finished one is shown.
// `diff` compares two builds: why each translation unit was compiled,
// slower and faster rules, cache hits, the critical path (diff.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/gitsha"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/pipelinename"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// options are the receiver settings that change what a build becomes.
type options struct {
	hostName, serviceName, pipelineName string
	traces, metrics, metricsAsSpans     bool
	semconvRootSpan, buildMetrics       bool
	gitMaxLag                           time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("ct-otel-dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ct-otel-dump [flags] DIR\n       ct-otel-dump diff [flags] OLD_DIR NEW_DIR\n\n"+
			"Prints one build's OTLP as JSON lines (traces, then metrics), as the collector's file exporter writes them.\n"+
			"DIR: an invocation directory, or a diagnostics directory (its newest finished build).\n\nflags:")
		fs.PrintDefaults()
	}
	host, _ := os.Hostname()
	var o options
	var rootKind, signals string
	fs.BoolVar(&o.semconvRootSpan, "semconv-root-span", false, "as the receiver's semconv_root_span: the root span named `BUILD <pipeline>`, kind SERVER")
	fs.BoolVar(&o.buildMetrics, "build-metrics", true, "with metrics, also the build metrics (cicd.pipeline.run.*, ct.rule.duration, …), as the receiver sends them by default")
	fs.StringVar(&o.hostName, "host-name", host, "host.name, as the receiver's host_name (part of the trace id)")
	fs.StringVar(&o.serviceName, "service-name", "compiletools", "service.name, as the receiver's service_name")
	fs.StringVar(&o.pipelineName, "pipeline-name", "", "cicd.pipeline.name (default as the receiver: the git work tree's directory name, else the project's or the diagnostics directory's name)")
	fs.StringVar(&signals, "signals", "traces,metrics", "signals to print: traces, metrics or both")
	fs.BoolVar(&o.metricsAsSpans, "metrics-as-spans", false, "as the receiver's metrics_as_spans")
	fs.StringVar(&rootKind, "root-span-kind", "", "deprecated: -semconv-root-span (server is -semconv-root-span)")
	fs.DurationVar(&o.gitMaxLag, "git-max-lag", 30*time.Second, "as the receiver's git_commit.max_lag: HEAD is read only for a build that ended this recently (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	switch signals {
	case "traces":
		o.traces = true
	case "metrics":
		o.metrics = true
	case "traces,metrics", "metrics,traces":
		o.traces, o.metrics = true, true
	default:
		fmt.Fprintf(stderr, "ct-otel-dump: -signals %q: want traces, metrics or traces,metrics\n", signals)
		return 2
	}
	switch rootKind {
	case "":
	case "internal", "server":
		fmt.Fprintln(stderr, "ct-otel-dump: -root-span-kind is deprecated; it still works: use -semconv-root-span")
		o.semconvRootSpan = o.semconvRootSpan || rootKind == "server"
	default:
		fmt.Fprintf(stderr, "ct-otel-dump: -root-span-kind %q: want internal or server (deprecated: -semconv-root-span)\n", rootKind)
		return 2
	}
	if err := dump(ctx, fs.Arg(0), o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "ct-otel-dump: %v\n", err)
		return 1
	}
	return 0
}

// dump reads the build in dir and writes its signals as JSON lines.
func dump(ctx context.Context, dir string, o options, stdout, stderr io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return err
	}
	b, err := findBuild(abs)
	if err != nil {
		return err
	}
	res, err := ffi.Process(ctx, request(b, o, stderr))
	if err != nil {
		return fmt.Errorf("%s: %w", b.Dir, err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "ct-otel-dump: warning: %s\n", w)
	}
	if res.HasTraces {
		if err := writeLine(stdout, func() ([]byte, error) { return (&ptrace.JSONMarshaler{}).MarshalTraces(res.Traces) }); err != nil {
			return err
		}
	}
	if res.HasMetrics {
		if err := writeLine(stdout, func() ([]byte, error) { return (&pmetric.JSONMarshaler{}).MarshalMetrics(res.Metrics) }); err != nil {
			return err
		}
	}
	return nil
}

func writeLine(w io.Writer, marshal func() ([]byte, error)) error {
	buf, err := marshal()
	if err != nil {
		return err
	}
	_, err = w.Write(append(buf, '\n'))
	return err
}

// findBuild resolves DIR to one finished build, with discovery's own rules
// (a symlinked timing.json or invocation directory is refused).
func findBuild(dir string) (discovery.Build, error) {
	scan := discovery.Finder{Include: []string{dir}}.Find(nil)
	if len(scan.Finished) == 0 {
		if len(scan.Problems) > 0 {
			p := scan.Problems[0]
			return discovery.Build{}, fmt.Errorf("%s: %w", p.Path, p.Err)
		}
		if len(scan.Running) > 0 {
			return discovery.Build{}, fmt.Errorf("%s: no finished build (no timing.json yet)", dir)
		}
		return discovery.Build{}, fmt.Errorf("%s: not an invocation directory (YYYYMMDDTHHMMSS-PID) or a directory holding one", dir)
	}
	return scan.Finished[len(scan.Finished)-1], nil // oldest first
}

// request is the receiver's request for the build (build.go), with the
// files as they are now: no capture copies exist outside a collector.
func request(b discovery.Build, o options, stderr io.Writer) ffi.Request {
	var sigs ffi.Signals
	if o.traces {
		sigs |= ffi.SignalTraces
	}
	if o.metrics {
		sigs |= ffi.SignalMetrics
	}
	req := ffi.Request{
		InvocationDir:   b.Dir,
		StatslogPath:    sideFile(b.Dir, "ccache.statslog", stderr),
		OutcomesPath:    sideFile(b.Dir, "rule_outcomes.log", stderr),
		HostName:        o.hostName,
		ServiceName:     o.serviceName,
		PipelineName:    o.pipelineName,
		SemconvRootSpan: o.semconvRootSpan,
		Signals:         sigs,
		MetricsAsSpans:  o.metricsAsSpans,
		BuildMetrics:    o.metrics && o.buildMetrics,
	}
	workTree, _ := gitsha.WorkTree(b.Dir)
	req.PipelineName = pipelinename.Of(o.pipelineName, workTree, b.Dir)
	if o.gitMaxLag > 0 && time.Since(b.ModTime) <= o.gitMaxLag {
		if repo, err := gitsha.Inspect(b.Dir); err == nil {
			req.GitCommitSHA = repo.Head
			req.VCS = ffi.VCS{RefHeadName: repo.RefName, RefHeadType: repo.RefType,
				RepositoryURLFull: repo.OriginURL, ProviderName: repo.Provider}
		}
	}
	return req
}

// sideFile is the path of a side file that is a regular file, else "": as
// the receiver, a symbolic link or anything else there is never opened.
func sideFile(dir, name string, stderr io.Writer) string {
	path := filepath.Join(dir, name)
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		fmt.Fprintf(stderr, "ct-otel-dump: warning: %s: %v; ignored\n", path, err)
		return ""
	case !st.Mode().IsRegular():
		fmt.Fprintf(stderr, "ct-otel-dump: warning: %s is not a regular file (%s); ignored\n", path, st.Mode().Type())
		return ""
	}
	return path
}
