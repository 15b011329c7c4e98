package registry

import (
	"slices"
	"testing"
)

// The loader is tested against the pinned release itself: these are facts
// of semconv v1.43.0 that the parser must find, so a change of the
// generator's output that the parser misreads fails here.
func loadPinned(t *testing.T) *Registry {
	t.Helper()
	dir, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, []string{"cicd", "vcs", "error", "test"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLoadReadsAttributeDocAndEnum(t *testing.T) {
	r := loadPinned(t)
	if r.Version != SemconvVersion {
		t.Errorf("version %q, want %q", r.Version, SemconvVersion)
	}
	state, err := r.Attribute("cicd.pipeline.run.state")
	if err != nil {
		t.Fatal(err)
	}
	if state.Type != "Enum" || state.RequirementLevel != "Recommended" || state.Stability != "Release_Candidate" {
		t.Errorf("cicd.pipeline.run.state = %+v", state)
	}
	if got := state.EnumValues(); !slices.Equal(got, []string{"pending", "executing", "finalizing"}) {
		t.Errorf("cicd.pipeline.run.state enum %v", got)
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

func TestLoadReadsMetricInstruments(t *testing.T) {
	r := loadPinned(t)
	want := map[string]Metric{
		"cicd.pipeline.run.duration": {Name: "cicd.pipeline.run.duration", Unit: "s", Instrument: "Histogram",
			Required: []string{"cicd.pipeline.name", "cicd.pipeline.run.state"}, Optional: []string{"cicd.pipeline.result", "error.type"}},
		"cicd.pipeline.run.active": {Name: "cicd.pipeline.run.active", Unit: "{run}", Instrument: "UpDownCounter",
			Required: []string{"cicd.pipeline.name", "cicd.pipeline.run.state"}},
		"cicd.pipeline.run.errors": {Name: "cicd.pipeline.run.errors", Unit: "{error}", Instrument: "Counter",
			Required: []string{"cicd.pipeline.name", "error.type"}},
		"cicd.worker.count": {Name: "cicd.worker.count", Unit: "{worker}", Instrument: "UpDownCounter",
			Required: []string{"cicd.worker.state"}},
	}
	for name, w := range want {
		got, ok := r.Metrics[name]
		if !ok {
			t.Errorf("no metric %s", name)
			continue
		}
		if got.Unit != w.Unit || got.Instrument != w.Instrument || !slices.Equal(got.Required, w.Required) || !slices.Equal(got.Optional, w.Optional) {
			t.Errorf("%s = %+v, want %+v", name, got, w)
		}
	}
	if _, ok := r.Metrics["vcs.change.count"]; !ok {
		t.Error("vcsconv not read")
	}
}
