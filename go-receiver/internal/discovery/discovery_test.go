package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

func mkBuild(t *testing.T, parent, name string, finished bool) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if finished {
		if err := os.WriteFile(filepath.Join(dir, TimingFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ids(builds []Build) []string {
	var out []string
	for _, b := range builds {
		out = append(out, b.ID())
	}
	return out
}

func TestFindOrdersByTimestampThenNumericPID(t *testing.T) {
	parent := t.TempDir()
	mkBuild(t, parent, "20261130T100000-1000", true)
	mkBuild(t, parent, "20261130T100000-999", true)
	mkBuild(t, parent, "20261129T235959-5", true)
	scan := Finder{Include: []string{parent}}.Find(nil)
	if len(scan.Problems) != 0 {
		t.Fatal(scan.Problems)
	}
	builds := scan.Finished
	want := []string{"20261129T235959-5", "20261130T100000-999", "20261130T100000-1000"}
	if got := ids(builds); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestFindSkipsUnfinishedAndForeignEntries(t *testing.T) {
	parent := t.TempDir()
	mkBuild(t, parent, "20261130T100000-1", true)
	mkBuild(t, parent, "20261130T100001-2", false)                                               // still running
	mkBuild(t, parent, "not-an-invocation", true)                                                // foreign directory
	mkBuild(t, parent, "20261130T100002-3.tmp", true)                                            // near miss
	if err := os.WriteFile(filepath.Join(parent, "20261130T100003-4"), nil, 0o644); err != nil { // a file
		t.Fatal(err)
	}
	leftover := mkBuild(t, parent, "20261130T100004-5", false)
	if err := os.WriteFile(filepath.Join(leftover, ".tmp.timing.json.abcdefgh.5"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	scan := Finder{Include: []string{parent}}.Find(nil)
	if got := ids(scan.Finished); !reflect.DeepEqual(got, []string{"20261130T100000-1"}) {
		t.Fatalf("got %v", got)
	}
	if len(scan.Running) != 2 {
		t.Fatalf("want two running builds, got %v", scan.Running)
	}
}

func TestFindGlobsParentsAndInvocationDirsAndExcludes(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "proj-a", "bin", "gcc.debug", "diagnostics")
	b := filepath.Join(root, "proj-b", "bin", "gcc.release", "diagnostics")
	mkBuild(t, a, "20261130T100000-1", true)
	mkBuild(t, b, "20261130T100000-2", true)
	direct := mkBuild(t, filepath.Join(root, "flat"), "20261130T100000-3", true)
	f := Finder{
		Include: []string{filepath.Join(root, "**", "diagnostics"), direct, direct},
		Exclude: []string{filepath.Join(root, "proj-b", "**")},
	}
	builds := f.Find(nil).Finished
	if got := ids(builds); !reflect.DeepEqual(got, []string{"20261130T100000-1", "20261130T100000-3"}) {
		t.Fatalf("got %v", got)
	}
}

func TestTimingJSONThatIsADirectoryIsAProblem(t *testing.T) {
	parent := t.TempDir()
	dir := mkBuild(t, parent, "20261130T100000-1", false)
	if err := os.Mkdir(filepath.Join(dir, TimingFile), 0o755); err != nil {
		t.Fatal(err)
	}
	scan := Finder{Include: []string{parent}}.Find(nil)
	if len(scan.Finished) != 0 || len(scan.Problems) != 1 || scan.Problems[0].Path != filepath.Join(dir, TimingFile) {
		t.Fatalf("scan %+v", scan)
	}
	if scan.Problems[0].Dir != dir {
		t.Fatalf("the problem names build %q, want %q", scan.Problems[0].Dir, dir)
	}
}

func TestSkippedBuildsAreSeenButNotReturned(t *testing.T) {
	parent := t.TempDir()
	old := mkBuild(t, parent, "20261130T100000-1", true)
	mkBuild(t, parent, "20261130T100001-2", true)
	scan := Finder{Include: []string{parent}}.Find(settledWith(map[string]FileID{old: fileID(t, old)}))
	if got := ids(scan.Finished); !reflect.DeepEqual(got, []string{"20261130T100001-2"}) {
		t.Fatalf("got %v", got)
	}
	if _, ok := scan.Seen[old]; !ok || len(scan.Seen) != 2 {
		t.Fatalf("seen %v", scan.Seen)
	}
}

// fileID identifies the timing.json of a build directory as it is now.
func fileID(t *testing.T, dir string) FileID {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, TimingFile))
	if err != nil {
		t.Fatal(err)
	}
	return FileID{ModNs: st.ModTime().UnixNano(), Size: st.Size()}
}

// settledWith answers Find from a fixed set of settled directories.
func settledWith(handled map[string]FileID) func(string) (FileID, bool) {
	return func(dir string) (FileID, bool) {
		id, ok := handled[dir]
		return id, ok
	}
}

func TestSettledBuildIsReturnedAgainOnlyWithAnotherTimingJSON(t *testing.T) {
	parent := t.TempDir()
	same := mkBuild(t, parent, "20261130T100000-1", true)
	replaced := mkBuild(t, parent, "20261130T100001-2", true)
	gone := mkBuild(t, parent, "20261130T100002-3", true)
	unreadable := mkBuild(t, parent, "20261130T100003-4", true)
	settled := settledWith(map[string]FileID{
		same: fileID(t, same), replaced: fileID(t, replaced), gone: fileID(t, gone), unreadable: fileID(t, unreadable),
	})
	// Another build's timing.json renamed over the first one (formats.md §1.2).
	tmp := filepath.Join(replaced, ".tmp.timing.json")
	if err := os.WriteFile(tmp, []byte(`{"timestamp": "later"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(replaced, TimingFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(gone, TimingFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(unreadable, TimingFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(unreadable, TimingFile), 0o755); err != nil {
		t.Fatal(err)
	}

	scan := Finder{Include: []string{parent}}.Find(settled)
	if got := ids(scan.Finished); !reflect.DeepEqual(got, []string{"20261130T100001-2"}) {
		t.Fatalf("finished %v: want only the build whose timing.json was replaced", got)
	}
	if scan.Finished[0].FileID() != fileID(t, replaced) {
		t.Fatalf("the replaced build carries %+v, want the new file's %+v", scan.Finished[0].FileID(), fileID(t, replaced))
	}
	if len(scan.Running) != 0 || len(scan.Problems) != 0 || len(scan.Seen) != 4 {
		t.Fatalf("settled builds without a readable timing.json must only be seen: %+v", scan)
	}
}

func TestSymlinkedInvocationDirIsNotFollowed(t *testing.T) {
	outside := t.TempDir()
	target := mkBuild(t, outside, "20261130T100000-1", true)
	parent := t.TempDir()
	if err := os.Symlink(target, filepath.Join(parent, "20261130T100000-1")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "20261130T100000-1")
	for _, include := range []string{parent, link, filepath.Join(parent, "*")} {
		scan := (Finder{Include: []string{include}}).Find(nil)
		if len(scan.Finished) != 0 || len(scan.Running) != 0 {
			t.Fatalf("%s: followed a symlink out of the root: %+v", include, scan)
		}
		if len(scan.Problems) != 1 || !errors.Is(scan.Problems[0].Err, ErrSymlink) || scan.Problems[0].Path != link {
			t.Fatalf("%s: want the link refused as a problem, got %+v", include, scan.Problems)
		}
	}
}

func TestSymlinkedTimingJSONIsRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"timestamp": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := mkBuild(t, parent, "20261130T100000-1", false)
	if err := os.Symlink(secret, filepath.Join(dir, TimingFile)); err != nil {
		t.Fatal(err)
	}
	scan := (Finder{Include: []string{parent}}).Find(nil)
	if len(scan.Finished) != 0 || len(scan.Running) != 0 {
		t.Fatalf("a symlinked timing.json must be neither finished nor running: %+v", scan)
	}
	if len(scan.Problems) != 1 || !errors.Is(scan.Problems[0].Err, ErrSymlink) || scan.Problems[0].Dir != dir {
		t.Fatalf("want the symlink refused as the build's problem, got %+v", scan.Problems)
	}
}

// Issue 22, defect 2: discovery hands each running directory's identity
// on (the follower and the capture refuse another directory there later).
func TestRunningDirectoriesCarryTheirIdentity(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "diagnostics")
	run := filepath.Join(parent, "20261130T000000-1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	scan := Finder{Include: []string{parent}}.Find(nil)
	want, err := dirfd.OfDir(run)
	if err != nil || len(scan.Running) != 1 || scan.RunningIDs[run] != want || want.IsZero() {
		t.Fatalf("running %v ids %v, want %v (%v)", scan.Running, scan.RunningIDs, want, err)
	}
}

func TestALinkChosenByAWildcardIsRefusedAndTheFixedPrefixIsFollowed(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "home", "alice", "bin", "gcc.debug", "diagnostics")
	mkBuild(t, own, "20261130T100000-1", true)
	victim := filepath.Join(root, "victim", "bin", "gcc.debug")
	mkBuild(t, filepath.Join(victim, "diagnostics"), "20261130T100000-2", true)
	// mallory's variant directory is a link into the victim's tree (the
	// glob does not descend through it), and mallory's diagnostics
	// directory of another variant is a link to the victim's.
	if err := os.MkdirAll(filepath.Join(root, "home", "mallory", "bin", "clang.debug"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(root, "home", "mallory", "bin", "gcc.debug")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victim, "diagnostics"), filepath.Join(root, "home", "mallory", "bin", "clang.debug", "diagnostics")); err != nil {
		t.Fatal(err)
	}
	// The configured prefix itself is reached through a link: that is allowed.
	if err := os.Symlink(filepath.Join(root, "home"), filepath.Join(root, "homes")); err != nil {
		t.Fatal(err)
	}
	scan := Finder{Include: []string{filepath.Join(root, "homes", "*", "bin", "*", "diagnostics")}}.Find(nil)
	if got := ids(scan.Finished); !reflect.DeepEqual(got, []string{"20261130T100000-1"}) {
		t.Fatalf("found %v, want only alice's build", got)
	}
	var refused []string
	for _, p := range scan.Problems {
		if errors.Is(p.Err, ErrSymlink) {
			refused = append(refused, p.Path)
		}
	}
	want := []string{filepath.Join(root, "homes", "mallory", "bin", "clang.debug", "diagnostics")}
	if !reflect.DeepEqual(refused, want) {
		t.Fatalf("refused links %v, want %v", refused, want)
	}
}
