package livebuilds

import "testing"

func TestLiveLocationsFollowTheDefaultLayoutOrTheMapping(t *testing.T) {
	tr := &Tracker{}
	loc := tr.liveLocations("/w/bin/gcc.debug/diagnostics/20260101T000000-1")
	if loc.makeDir != "/w/bin/gcc.debug" || loc.ninjaLog != "/w/.ninja_log" || loc.mapped {
		t.Errorf("default layout: %+v", loc)
	}
	if loc := tr.liveLocations("/var/tmp/ct/20260101T000000-1"); loc.makeDir != "" || loc.ninjaLog != "" {
		t.Errorf("a DIAGNOSTICS_DIR build has no known location: %+v", loc)
	}
	tr.o.Files = []FilesMapping{{Include: "/var/tmp/ct/*", MakeTimingDir: "/src/bin/x", NinjaLog: "/src/.ninja_log"}}
	if loc := tr.liveLocations("/var/tmp/ct/20260101T000000-1"); loc.makeDir != "/src/bin/x" || loc.ninjaLog != "/src/.ninja_log" || !loc.mapped {
		t.Errorf("mapping: %+v", loc)
	}
}
