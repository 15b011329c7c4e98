package livebuilds

import "testing"

func TestLiveLocationsFollowTheDefaultLayoutOrTheMapping(t *testing.T) {
	tr := &Tracker{}
	mk, ninja := tr.liveLocations("/w/bin/gcc.debug/diagnostics/20260101T000000-1")
	if mk != "/w/bin/gcc.debug" || ninja != "/w/.ninja_log" {
		t.Errorf("default layout: %q %q", mk, ninja)
	}
	if mk, ninja := tr.liveLocations("/var/tmp/ct/20260101T000000-1"); mk != "" || ninja != "" {
		t.Errorf("a DIAGNOSTICS_DIR build has no known location: %q %q", mk, ninja)
	}
	tr.o.Files = []FilesMapping{{Include: "/var/tmp/ct/*", MakeTimingDir: "/src/bin/x", NinjaLog: "/src/.ninja_log"}}
	if mk, ninja := tr.liveLocations("/var/tmp/ct/20260101T000000-1"); mk != "/src/bin/x" || ninja != "/src/.ninja_log" {
		t.Errorf("mapping: %q %q", mk, ninja)
	}
}
