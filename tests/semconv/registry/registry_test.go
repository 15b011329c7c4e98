package registry

import (
	"slices"
	"testing"
	"testing/fstest"
)

// The loader is tested against the pinned copy itself: these are facts of
// semconv v1.44.0 that the reader must find, so a model change the reader
// misreads fails here.
func loadPinned(t *testing.T) *Registry {
	t.Helper()
	r, err := LoadPinned([]string{"cicd", "vcs", "error", "test"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLoadReadsAttributesAndEnums(t *testing.T) {
	r := loadPinned(t)
	if r.Version != "v1.44.0" {
		t.Errorf("version %q", r.Version)
	}
	state, err := r.Attribute("cicd.pipeline.run.state")
	if err != nil {
		t.Fatal(err)
	}
	if state.Type != "Enum" || state.Stability != "release_candidate" {
		t.Errorf("cicd.pipeline.run.state = %+v", state)
	}
	if got := state.EnumValues(); !slices.Equal(got, []string{"pending", "executing", "finalizing"}) {
		t.Errorf("cicd.pipeline.run.state enum %v", got)
	}
	if action, _ := r.Attribute("cicd.pipeline.action.name"); !action.HasEnumValue("BUILD") {
		t.Errorf("enum values are the members' values, not ids: %v", action.EnumValues())
	}
	url, err := r.Attribute("vcs.repository.url.full")
	if err != nil || url.Type != "string" || len(url.Enum) != 0 {
		t.Errorf("vcs.repository.url.full = %+v, %v", url, err)
	}
	if _, err := r.Attribute("test.case.result.status"); err != nil {
		t.Error(err)
	}
	if _, ok := r.Attributes["http.request.method"]; ok {
		t.Error("an attribute outside the namespaces was kept")
	}
}

func TestDeprecatedAttributesAreKnownButNotCurrent(t *testing.T) {
	r := loadPinned(t)
	old, ok := r.Attributes["vcs.repository.ref.name"]
	if !ok || old.Deprecated != "renamed" || old.RenamedTo != "vcs.ref.head.name" {
		t.Errorf("vcs.repository.ref.name = %+v", old)
	}
	if _, err := r.Attribute("vcs.repository.ref.name"); err == nil {
		t.Error("a deprecated attribute counts as current")
	}
}

func TestLoadReadsMetrics(t *testing.T) {
	r := loadPinned(t)
	d := r.Metrics["cicd.pipeline.run.duration"]
	if d.Unit != "s" || d.Instrument != "Histogram" || !slices.Equal(d.Required(), []string{"cicd.pipeline.name", "cicd.pipeline.run.state"}) {
		t.Errorf("duration = %+v", d)
	}
	if ref, ok := d.Conditional("error.type"); !ok || ref.Condition != "If and only if the pipeline run failed." {
		t.Errorf("duration error.type = %+v, %v", ref, ok)
	}
	a := r.Metrics["cicd.pipeline.run.active"]
	if a.Unit != "{run}" || a.Instrument != "UpDownCounter" || !slices.Equal(a.Required(), []string{"cicd.pipeline.name", "cicd.pipeline.run.state"}) {
		t.Errorf("active = %+v", a)
	}
	if e := r.Metrics["cicd.pipeline.run.errors"]; e.Unit != "{error}" || e.Instrument != "Counter" || !slices.Equal(e.Required(), []string{"cicd.pipeline.name", "error.type"}) {
		t.Errorf("errors = %+v", e)
	}
	if _, ok := r.Metrics["vcs.change.count"]; !ok {
		t.Error("model/vcs/metrics.yaml not read")
	}
}

func TestLoadReadsSpanDefinitions(t *testing.T) {
	r := loadPinned(t)
	task, err := r.Span("span.cicd.pipeline.task.internal")
	if err != nil {
		t.Fatal(err)
	}
	var required []string
	for _, ref := range task.Attributes {
		if ref.Level == Required {
			required = append(required, ref.Key)
		}
	}
	want := []string{"cicd.pipeline.task.name", "cicd.pipeline.task.run.id", "cicd.pipeline.task.run.url.full", "cicd.pipeline.task.run.result"}
	if task.Kind != "internal" || !slices.Equal(required, want) {
		t.Errorf("task span = %+v", task)
	}
	if _, ok := task.Conditional("error.type"); !ok {
		t.Error("task span: error.type not conditionally required")
	}
	run, err := r.Span("span.cicd.pipeline.run.server")
	if err != nil || run.Kind != "server" {
		t.Fatalf("run span = %+v, %v", run, err)
	}
}

func TestLoadRejectsAnIncompleteCopy(t *testing.T) {
	root := fstest.MapFS{
		"VERSION": {Data: []byte("v0\n")},
		"model/cicd/metrics.yaml": {Data: []byte(`groups:
  - id: metric.x
    type: metric
    metric_name: cicd.x
    instrument: counter
    unit: "1"
    attributes:
      - ref: cicd.missing
        requirement_level: required
`)},
	}
	if _, err := Load(root, []string{"cicd"}); err == nil {
		t.Error("a metric referring to an attribute the copy lacks was accepted")
	}
}
