// Command semconvcheck checks OTLP/JSON files (as the collector's file
// exporter and ct-otel-dump write them) against the OpenTelemetry
// semantic-conventions registry — the pinned copy of its model YAML this
// module carries (testdata/registry) — for the cicd, vcs, error and test
// namespaces.
//
//	semconvcheck [-closed-enums] [-allow FILE] [-registry-dir DIR] [-list-registry] FILE...
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
	listRegistry := fs.Bool("list-registry", false, "print the registry facts read from the model and exit")
	dir := fs.String("registry-dir", "", "a registry directory laid out as testdata/registry (VERSION, model/); default: the pinned copy")
	allowFile := fs.String("allow", "", "documented deviations, one `RULE KEY REASON` a line: reported as allowed, not errors")
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
	allowances, err := readAllowances(*allowFile, reg)
	if err != nil {
		fmt.Fprintf(stderr, "semconvcheck: %s: %v\n", *allowFile, err)
		return 2
	}
	var report report
	for _, path := range fs.Args() {
		lines, err := otlp.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "semconvcheck: %v\n", err)
			return 2
		}
		for _, line := range lines {
			found := checker.Line(line)
			check.Apply(allowances, found)
			report.add(path, found)
		}
	}
	fmt.Fprintf(stdout, "semconv %s: %s\n", reg.Version, report.summary())
	report.print(stdout)
	for _, a := range allowances {
		if a.Used == 0 {
			fmt.Fprintf(stdout, "note: allowance %s %s was not needed\n", a.Rule, a.Key)
		}
	}
	if report.errors > 0 {
		return 1
	}
	return 0
}

func loadRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		return registry.LoadPinned(namespaces)
	}
	return registry.Load(os.DirFS(dir), namespaces)
}

func readAllowances(path string, reg *registry.Registry) ([]*check.Allowance, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return check.ParseAllowances(f, reg)
}
