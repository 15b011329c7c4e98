// Command semconvcheck checks OTLP/JSON files (as the collector's file
// exporter and ct-otel-dump write them) against the OpenTelemetry
// semantic-conventions registry of the pinned semconv release, for the
// cicd, vcs, error and test namespaces.
//
//	semconvcheck [-closed-enums] [-list-registry] FILE...
//
// It prints one line per finding (the same finding at many places once,
// with its count and first place) and exits 1 when any is an error.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/compiletools-otel/semconvcheck/check"
	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

var namespaces = []string{"cicd", "vcs", "error", "test"}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("semconvcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	closedEnums := fs.Bool("closed-enums", false, "a value outside an enum's well-known values is an error, not a warning")
	listRegistry := fs.Bool("list-registry", false, "print the registry facts read from the semconv package and exit")
	dir := fs.String("semconv-dir", "", "the semconv package directory (default: semconv/"+registry.SemconvVersion+" of the pinned otel module)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	reg, err := loadRegistry(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "semconvcheck: %v\n", err)
		return 2
	}
	if *listRegistry {
		printRegistry(stdout, reg)
		return 0
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: semconvcheck [flags] FILE...")
		return 2
	}
	checker, err := check.New(reg)
	if err != nil {
		fmt.Fprintf(stderr, "semconvcheck: %v\n", err)
		return 2
	}
	checker.ClosedEnums = *closedEnums
	var report report
	for _, path := range fs.Args() {
		lines, err := otlp.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "semconvcheck: %v\n", err)
			return 2
		}
		for _, line := range lines {
			report.add(path, checker.Line(line))
		}
	}
	fmt.Fprintf(stdout, "semconv %s: %s\n", reg.Version, report.summary())
	report.print(stdout)
	if report.errors > 0 {
		return 1
	}
	return 0
}

func loadRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		var err error
		if dir, err = registry.Locate(); err != nil {
			return nil, err
		}
	}
	return registry.Load(dir, namespaces)
}
