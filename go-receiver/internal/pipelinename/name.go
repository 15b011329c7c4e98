// Package pipelinename decides a build's `cicd.pipeline.name`: the same
// for its trace, its build metrics and, while it runs, the live metrics.
package pipelinename

import "path/filepath"

// Default is the name when nothing better is known: the service's.
const Default = "compiletools"

// Of returns the pipeline name of the build in invocationDir: configured
// (the receiver's pipeline_name) when set, else the name of the git work
// tree's directory (the project; "" when the build is in none), else
// Fallback.
func Of(configured, workTree, invocationDir string) string {
	switch {
	case configured != "":
		return configured
	case workTree != "":
		return filepath.Base(workTree)
	default:
		return Fallback(invocationDir)
	}
}

// Fallback is a readable name from the build's location alone (the
// conventions want a human-readable name, not a path). In compiletools'
// default layout `<project>/bin/<variant>/diagnostics/<invocation>`
// (formats.md §1.1) it is the project directory's name; otherwise the name
// of the diagnostics directory the build is in (an explicit
// `--diagnostics-dir` or `DIAGNOSTICS_DIR`) — or, when that is called
// `diagnostics` like compiletools' own, which says nothing, the name of
// the directory holding it — or Default at the root of the file system.
func Fallback(invocationDir string) string {
	diag := filepath.Dir(filepath.Clean(invocationDir))
	variantDir := filepath.Dir(diag)
	bin := filepath.Dir(variantDir)
	if filepath.Base(diag) == "diagnostics" && filepath.Base(bin) == "bin" {
		if project := readable(filepath.Dir(bin)); project != "" {
			return project
		}
	}
	if filepath.Base(diag) == "diagnostics" {
		if name := readable(variantDir); name != "" {
			return name
		}
	}
	if name := readable(diag); name != "" {
		return name
	}
	return Default
}

// readable is dir's last element, or "" for a root or an empty path.
func readable(dir string) string {
	base := filepath.Base(dir)
	if base == "/" || base == "." || base == string(filepath.Separator) {
		return ""
	}
	return base
}
