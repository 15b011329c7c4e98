package main

// ct-otel-dump diff OLD_DIR NEW_DIR: two builds compared for a terminal
// (docs/rebuilds.md). Both builds go through the core with one compile
// history, as the receiver with history.enabled would see them, so every
// number here is one the receiver sends: the rebuild reasons on the
// compile spans, the comparison on the root (ct.build.compare.*), the
// duration deltas against each source's previous compile. Nothing here
// re-derives them from the files.

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/gitsha"
)

// reasonOrder is the order of the reasons in the report (the core's).
var reasonOrder = []string{"new", "source_changed", "headers_changed", "flags_changed", "evicted", "not_cas"}

// diffReport is the comparison of two builds; its JSON is `--json`'s.
type diffReport struct {
	Old        buildSide   `json:"old"`
	New        buildSide   `json:"new"`
	Comparison *comparison `json:"comparison"`
	// Compiles that ran the compiler, by reason, with the sources.
	Rebuilds []reasonGroup `json:"rebuilds"`
	// CAS misses ccache served (the compiler did not run), by reason.
	CcacheServed []reasonGroup `json:"ccache_served"`
	Slower       []ruleDelta   `json:"slower"`
	Faster       []ruleDelta   `json:"faster"`
}

type buildSide struct {
	Dir            string   `json:"dir"`
	TraceID        string   `json:"trace_id"`
	DurationS      float64  `json:"duration_s"`
	Rules          int      `json:"rules"`
	Compiles       int      `json:"compiles"`
	CasAvoided     *int64   `json:"cas_avoided_count"`
	CcacheAvoided  *int64   `json:"ccache_avoided_count"`
	Recompiled     *int64   `json:"recompiled_count"`
	CcacheHitRate  *float64 `json:"ccache_hit_rate"`
	CriticalPathS  *float64 `json:"critical_path_s"`
	CriticalMethod string   `json:"critical_path_method,omitempty"`
}

type comparison struct {
	LinkedToOld         bool     `json:"linked_to_old"`
	RulesAdded          int64    `json:"rules_added"`
	RulesRemoved        int64    `json:"rules_removed"`
	DurationDeltaS      float64  `json:"duration_delta_s"`
	CriticalPathDeltaS  *float64 `json:"critical_path_delta_s"`
	CriticalPathChanged *bool    `json:"critical_path_changed"`
}

type reasonGroup struct {
	Reason  string   `json:"reason"`
	Count   int      `json:"count"`
	Sources []string `json:"sources"`
	// Changed counts the parts of the key that changed, over the group.
	Changed map[string]int `json:"changed,omitempty"`
	// Headers are, per precompiled header of the group, the transitive
	// headers whose hash changed (ct.rule.rebuild_headers).
	Headers map[string][]string `json:"headers,omitempty"`
}

type ruleDelta struct {
	Span      string  `json:"span"`
	DurationS float64 `json:"duration_s"`
	DeltaS    float64 `json:"delta_s"`
}

// diffExamples is how many sources a group and how many rules the
// slower/faster lists show in the text form (--json has them all).
const diffExamples = 5

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ct-otel-dump diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ct-otel-dump diff [flags] OLD_DIR NEW_DIR\n\n"+
			"Compares two builds: what changed, why each translation unit was compiled, slower and faster rules,\n"+
			"cache hits and the critical path, as the receiver with history.enabled reports them.\n"+
			"OLD_DIR, NEW_DIR: invocation directories, or diagnostics directories (their newest finished build).\n\nflags:")
		fs.PrintDefaults()
	}
	host, _ := os.Hostname()
	var o options
	var asJSON, alone bool
	fs.StringVar(&o.hostName, "host-name", host, "host.name, as the receiver's host_name")
	fs.StringVar(&o.pipelineName, "pipeline-name", "", "cicd.pipeline.name of both builds (default: the old build's, as the receiver names it)")
	fs.BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	fs.BoolVar(&alone, "only", false, "compare with OLD alone: do not first read the earlier builds of OLD's diagnostics directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	o.serviceName, o.traces = "compiletools", true
	report, err := diffBuilds(ctx, fs.Arg(0), fs.Arg(1), o, !alone, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ct-otel-dump diff: %v\n", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = writeDiffText(stdout, report)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ct-otel-dump diff: %v\n", err)
		return 1
	}
	return 0
}

// diffBuilds reads OLD (after the earlier builds of its diagnostics
// directory, unless alone) and NEW through one history and compares them.
func diffBuilds(ctx context.Context, oldDir, newDir string, o options, prime bool, stderr io.Writer) (*diffReport, error) {
	oldBuild, err := resolve(oldDir)
	if err != nil {
		return nil, err
	}
	newBuild, err := resolve(newDir)
	if err != nil {
		return nil, err
	}
	if o.pipelineName == "" {
		// One pipeline for both: a second clone's builds are compared too.
		o.pipelineName = request(oldBuild, o, stderr).PipelineName
	}
	// K = 1: a rule's duration delta is against its source's previous compile.
	history, err := ffi.NewHistory(1_000_000, 1)
	if err != nil {
		return nil, err
	}
	defer history.Close()
	read := func(b discovery.Build) (ptrace.Traces, error) {
		req := request(b, o, stderr)
		req.History = history
		res, err := ffi.Process(ctx, req)
		if err != nil {
			return ptrace.Traces{}, fmt.Errorf("%s: %w", b.Dir, err)
		}
		history.Commit(b.Dir)
		return res.Traces, nil
	}
	if prime {
		for _, b := range earlierBuilds(oldBuild) {
			if _, err := read(b); err != nil {
				fmt.Fprintf(stderr, "ct-otel-dump diff: warning: %v; skipped\n", err)
			}
		}
	}
	oldTraces, err := read(oldBuild)
	if err != nil {
		return nil, err
	}
	newTraces, err := read(newBuild)
	if err != nil {
		return nil, err
	}
	r := compare(oldBuild, oldTraces, newBuild, newTraces)
	r.relativeTo(baseDir(r.paths()))
	return r, nil
}

// paths are the sources and rules the report names.
func (r *diffReport) paths() []string {
	var out []string
	for _, groups := range [][]reasonGroup{r.Rebuilds, r.CcacheServed} {
		for _, g := range groups {
			out = append(out, g.Sources...)
		}
	}
	for _, deltas := range [][]ruleDelta{r.Slower, r.Faster} {
		for _, d := range deltas {
			out = append(out, d.Span)
		}
	}
	return out
}

// baseDir is what the names are shown relative to: the git work tree of
// the first absolute one, else the directory they all are under.
func baseDir(paths []string) string {
	for _, p := range paths {
		if filepath.IsAbs(p) {
			if tree, err := gitsha.WorkTree(filepath.Dir(p)); err == nil && tree != "" {
				return tree
			}
			break
		}
	}
	return commonDir(paths)
}

// commonDir is the longest directory the absolute paths among paths are
// under ("" when there is none).
func commonDir(paths []string) string {
	dir := ""
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		if dir == "" {
			dir = filepath.Dir(p)
		}
		for dir != "/" && !strings.HasPrefix(p, dir+"/") {
			dir = filepath.Dir(dir)
		}
	}
	if dir == "/" {
		return ""
	}
	return dir
}

// relativeTo shortens the names under dir.
func (r *diffReport) relativeTo(dir string) {
	if dir == "" {
		return
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, groups := range [][]reasonGroup{r.Rebuilds, r.CcacheServed} {
		for i := range groups {
			for j, s := range groups[i].Sources {
				groups[i].Sources[j] = strings.TrimPrefix(s, prefix)
			}
			slices.Sort(groups[i].Sources)
			if groups[i].Headers != nil {
				trimmed := map[string][]string{}
				for src, headers := range groups[i].Headers {
					short := make([]string, len(headers))
					for k, h := range headers {
						short[k] = strings.TrimPrefix(h, prefix)
					}
					trimmed[strings.TrimPrefix(src, prefix)] = short
				}
				groups[i].Headers = trimmed
			}
		}
	}
	for _, deltas := range [][]ruleDelta{r.Slower, r.Faster} {
		for i := range deltas {
			deltas[i].Span = strings.TrimPrefix(deltas[i].Span, prefix)
		}
	}
}

func resolve(dir string) (discovery.Build, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return discovery.Build{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return discovery.Build{}, err
	}
	return findBuild(abs)
}

// earlierBuilds are the finished builds beside b (its diagnostics
// directory) that started before it, oldest first: they give each source
// its previous compile even when OLD did not compile it.
func earlierBuilds(b discovery.Build) []discovery.Build {
	scan := discovery.Finder{Include: []string{filepath.Dir(b.Dir)}}.Find(nil)
	var out []discovery.Build
	for _, f := range scan.Finished {
		if filepath.Base(f.Dir) < filepath.Base(b.Dir) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, c discovery.Build) int { return cmp.Compare(filepath.Base(a.Dir), filepath.Base(c.Dir)) })
	return out
}

// compare builds the report from the two traces the core made.
func compare(oldBuild discovery.Build, oldTraces ptrace.Traces, newBuild discovery.Build, newTraces ptrace.Traces) *diffReport {
	oldRoot, oldRules := split(oldTraces)
	newRoot, newRules := split(newTraces)
	r := &diffReport{Old: side(oldBuild.Dir, oldRoot, oldRules), New: side(newBuild.Dir, newRoot, newRules)}
	if newRoot != (ptrace.Span{}) {
		if _, ok := newRoot.Attributes().Get("ct.build.compare.rules_added"); ok {
			c := &comparison{
				RulesAdded:          intAttr(newRoot, "ct.build.compare.rules_added"),
				RulesRemoved:        intAttr(newRoot, "ct.build.compare.rules_removed"),
				DurationDeltaS:      doubleAttr(newRoot, "ct.build.compare.duration_delta_s"),
				CriticalPathDeltaS:  optDouble(newRoot, "ct.build.compare.critical_path_delta_s"),
				CriticalPathChanged: optBool(newRoot, "ct.build.compare.critical_path_changed"),
			}
			for _, l := range newRoot.Links().All() {
				if oldRoot != (ptrace.Span{}) && l.TraceID() == oldRoot.TraceID() && l.SpanID() == oldRoot.SpanID() {
					c.LinkedToOld = true
				}
			}
			r.Comparison = c
		}
	}
	rebuilds, served := map[string]*reasonGroup{}, map[string]*reasonGroup{}
	for _, s := range newRules {
		attrs := s.Attributes()
		group := func(groups map[string]*reasonGroup, reason string) {
			g := groups[reason]
			if g == nil {
				g = &reasonGroup{Reason: reason, Changed: map[string]int{}}
				groups[reason] = g
			}
			g.Count++
			g.Sources = append(g.Sources, ruleLabel(s))
			if v, ok := attrs.Get("ct.rule.rebuild_changed"); ok && v.Type() == pcommon.ValueTypeSlice {
				for _, part := range v.Slice().All() {
					g.Changed[part.Str()]++
				}
			}
			if v, ok := attrs.Get("ct.rule.rebuild_headers"); ok && v.Type() == pcommon.ValueTypeSlice {
				if g.Headers == nil {
					g.Headers = map[string][]string{}
				}
				for _, h := range v.Slice().All() {
					g.Headers[ruleLabel(s)] = append(g.Headers[ruleLabel(s)], h.Str())
				}
			}
		}
		if v, ok := attrs.Get("ct.rule.rebuild_reason"); ok {
			group(rebuilds, v.Str())
		}
		if v, ok := attrs.Get("ct.rule.cas_miss_reason"); ok {
			group(served, v.Str())
		}
		if v, ok := attrs.Get("ct.rule.duration_delta_s"); ok && v.Double() != 0 {
			d := ruleDelta{Span: ruleLabel(s), DurationS: spanSeconds(s), DeltaS: v.Double()}
			if d.DeltaS > 0 {
				r.Slower = append(r.Slower, d)
			} else {
				r.Faster = append(r.Faster, d)
			}
		}
	}
	r.Rebuilds, r.CcacheServed = ordered(rebuilds), ordered(served)
	slices.SortStableFunc(r.Slower, func(a, b ruleDelta) int { return cmp.Compare(b.DeltaS, a.DeltaS) })
	slices.SortStableFunc(r.Faster, func(a, b ruleDelta) int { return cmp.Compare(a.DeltaS, b.DeltaS) })
	return r
}

func ordered(groups map[string]*reasonGroup) []reasonGroup {
	out := []reasonGroup{}
	for _, reason := range reasonOrder {
		if g := groups[reason]; g != nil {
			slices.Sort(g.Sources)
			if len(g.Changed) == 0 {
				g.Changed = nil
			}
			out = append(out, *g)
		}
	}
	return out
}

// split returns a trace's root span and its rule spans (spans with ct.rule_type).
func split(t ptrace.Traces) (ptrace.Span, []ptrace.Span) {
	var root ptrace.Span
	var rules []ptrace.Span
	for _, rs := range t.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				switch {
				case s.ParentSpanID().IsEmpty() && s.Name() == "compiletools.build":
					root = s
				default:
					if _, ok := s.Attributes().Get("ct.rule_type"); ok {
						rules = append(rules, s)
					}
				}
			}
		}
	}
	return root, rules
}

func side(dir string, root ptrace.Span, rules []ptrace.Span) buildSide {
	s := buildSide{Dir: dir, Rules: len(rules)}
	for _, r := range rules {
		if v, _ := r.Attributes().Get("ct.rule_type"); v.Str() == "compile" {
			s.Compiles++
		}
	}
	if root == (ptrace.Span{}) {
		return s
	}
	s.TraceID = root.TraceID().String()
	s.DurationS = spanSeconds(root)
	s.CasAvoided = optInt(root, "ct.build.cas_avoided_count")
	s.CcacheAvoided = optInt(root, "ct.build.ccache_avoided_count")
	s.Recompiled = optInt(root, "ct.build.recompiled_count")
	s.CcacheHitRate = optDouble(root, "ct.ccache.hit_rate")
	s.CriticalPathS = optDouble(root, "ct.build.critical_path_s")
	if v, ok := root.Attributes().Get("ct.build.critical_path.method"); ok {
		s.CriticalMethod = v.Str()
	}
	return s
}

// casKey is the content key in a CAS artefact's name (`_<hex>` before the
// suffix, formats.md §6.3, §6.6), left out of a rule's label.
var casKey = regexp.MustCompile(`_[0-9a-f]{12}_[0-9a-f]{14}_[0-9a-f]{16}|_[0-9a-f]{32,}|\.[0-9a-f]{16}(\.result)$`)

// ruleLabel names a rule for a reader as the history identifies it: a
// compile by its source, a symlink by its (user-facing) target, any other
// rule by its type and target without the CAS keys.
func ruleLabel(s ptrace.Span) string {
	attrs := s.Attributes()
	ruleType, _ := attrs.Get("ct.rule_type")
	source, hasSource := attrs.Get("ct.source")
	target, hasTarget := attrs.Get("ct.target")
	switch {
	case (ruleType.Str() == "compile" || ruleType.Str() == "header_unit") && hasSource:
		return source.Str()
	case ruleType.Str() == "symlink" && hasTarget:
		return target.Str()
	case hasTarget:
		return ruleType.Str() + " " + casKey.ReplaceAllString(filepath.Base(target.Str()), "$1")
	}
	return s.Name()
}

func spanSeconds(s ptrace.Span) float64 {
	return float64(s.EndTimestamp()-s.StartTimestamp()) / 1e9
}

func intAttr(s ptrace.Span, key string) int64 {
	v, _ := s.Attributes().Get(key)
	return v.Int()
}

func doubleAttr(s ptrace.Span, key string) float64 {
	v, _ := s.Attributes().Get(key)
	return v.Double()
}

func optInt(s ptrace.Span, key string) *int64 {
	if v, ok := s.Attributes().Get(key); ok {
		n := v.Int()
		return &n
	}
	return nil
}

func optDouble(s ptrace.Span, key string) *float64 {
	if v, ok := s.Attributes().Get(key); ok {
		d := v.Double()
		return &d
	}
	return nil
}

func optBool(s ptrace.Span, key string) *bool {
	if v, ok := s.Attributes().Get(key); ok {
		b := v.Bool()
		return &b
	}
	return nil
}

// writeDiffText is the report for a terminal.
func writeDiffText(w io.Writer, r *diffReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "old  %s  %.2f s, %d rules (%d compiles)\n", filepath.Base(r.Old.Dir), r.Old.DurationS, r.Old.Rules, r.Old.Compiles)
	fmt.Fprintf(&b, "new  %s  %.2f s, %d rules (%d compiles)\n", filepath.Base(r.New.Dir), r.New.DurationS, r.New.Rules, r.New.Compiles)
	b.WriteString("\n")
	if c := r.Comparison; c != nil {
		link := "linked to old"
		if !c.LinkedToOld {
			link = "its previous build is not old"
		}
		fmt.Fprintf(&b, "duration       %+.2f s (%s)\n", c.DurationDeltaS, link)
		fmt.Fprintf(&b, "rules          %d added, %d removed (by source or target without CAS hashes)\n", c.RulesAdded, c.RulesRemoved)
		if c.CriticalPathDeltaS != nil {
			through := "same rules"
			if c.CriticalPathChanged != nil && *c.CriticalPathChanged {
				through = "through other rules"
			}
			fmt.Fprintf(&b, "critical path  %s → %s (%+.2f s, %s)\n", seconds(r.Old.CriticalPathS), seconds(r.New.CriticalPathS), *c.CriticalPathDeltaS, through)
		}
	} else {
		b.WriteString("no comparison: the new build has no previous build of its host, variant and pipeline\n")
	}
	fmt.Fprintf(&b, "cache          CAS avoided %s → %s, ccache avoided %s → %s, recompiled %s → %s\n",
		count(r.Old.CasAvoided), count(r.New.CasAvoided), count(r.Old.CcacheAvoided), count(r.New.CcacheAvoided),
		count(r.Old.Recompiled), count(r.New.Recompiled))
	if r.Old.CcacheHitRate != nil || r.New.CcacheHitRate != nil {
		fmt.Fprintf(&b, "ccache         hit rate %s → %s\n", rate(r.Old.CcacheHitRate), rate(r.New.CcacheHitRate))
	}
	writeGroups(&b, "why each TU was compiled", r.Rebuilds)
	writeGroups(&b, "CAS misses ccache served (not recompiled)", r.CcacheServed)
	writeDeltas(&b, "slower than their previous run", r.Slower)
	writeDeltas(&b, "faster than their previous run", r.Faster)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGroups(b *strings.Builder, title string, groups []reasonGroup) {
	total := 0
	for _, g := range groups {
		total += g.Count
	}
	if total == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s (%d):\n", title, total)
	for _, g := range groups {
		shown := g.Sources[:min(len(g.Sources), diffExamples)]
		more := ""
		if n := len(g.Sources) - len(shown); n > 0 {
			more = fmt.Sprintf(", … %d more", n)
		}
		changed := ""
		if len(g.Changed) > 0 {
			var parts []string
			for _, p := range []string{"source", "headers", "flags"} {
				if n := g.Changed[p]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", p, n))
				}
			}
			changed = " [changed: " + strings.Join(parts, ", ") + "]"
		}
		fmt.Fprintf(b, "  %-16s %4d  %s%s%s\n", g.Reason, g.Count, strings.Join(shown, ", "), more, changed)
		for _, src := range slices.Sorted(maps.Keys(g.Headers)) {
			fmt.Fprintf(b, "  %-16s       %s: %s\n", "", src, strings.Join(g.Headers[src], ", "))
		}
	}
}

func writeDeltas(b *strings.Builder, title string, deltas []ruleDelta) {
	if len(deltas) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s (%d):\n", title, len(deltas))
	for _, d := range deltas[:min(len(deltas), diffExamples)] {
		fmt.Fprintf(b, "  %+7.3f s  %.3f s  %s\n", d.DeltaS, d.DurationS, d.Span)
	}
}

func seconds(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f s", *v)
}

func count(v *int64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprint(*v)
}

func rate(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", *v*100)
}
