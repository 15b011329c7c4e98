package casscan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fakeClock is one host's clocks: wall (for the expiry written into a
// lease) and monotonic (for how long a lease was seen unchanged).
type fakeClock struct{ wall, mono time.Time }

func (c *fakeClock) advance(d time.Duration) { c.wall, c.mono = c.wall.Add(d), c.mono.Add(d) }

const testLease = 10 * time.Second

func testElector(t *testing.T, dir, holder string, c *fakeClock) *elector {
	t.Helper()
	e := newElector(dir, holder, testLease, func() time.Time { return c.wall })
	e.monoNow = func() time.Time { return c.mono }
	return e
}

func newClock() *fakeClock {
	return &fakeClock{wall: time.Unix(1_800_000_000, 0), mono: time.Unix(1000, 0)}
}

func readRecord(t *testing.T, dir string) leaseRecord {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LeaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	var rec leaseRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("lease file is not a lease record: %v: %q", err, data)
	}
	return rec
}

func wantState(t *testing.T, what string, r leaseRound, want leaseState) {
	t.Helper()
	if r.state != want {
		t.Fatalf("%s: state %d, want %d (problem: %v)", what, r.state, want, r.problem)
	}
}

// A missing lease is created and held; every round renews it: a new
// sequence number and a later expiry.
func TestLeaseIsTakenAndRenewed(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	a := testElector(t, dir, "host-a/compiletools", c)
	wantState(t, "first round", a.round("store-1"), leaseHeld)
	first := readRecord(t, dir)
	if first.Holder != "host-a/compiletools" || first.StoreID != "store-1" || first.Token != a.token {
		t.Fatalf("lease record %+v", first)
	}
	if want := c.wall.Add(testLease).UnixMilli(); first.ExpiresMs != want {
		t.Fatalf("expiry %d, want %d", first.ExpiresMs, want)
	}
	c.advance(3 * time.Second)
	wantState(t, "second round", a.round("store-1"), leaseHeld)
	second := readRecord(t, dir)
	if second.Seq <= first.Seq || second.ExpiresMs <= first.ExpiresMs {
		t.Fatalf("not renewed: %+v then %+v", first, second)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(leftovers) != 0 {
		t.Fatalf("staging files left behind: %v", leftovers)
	}
}

// Two receivers on one store: exactly one scans, round after round, and
// the other names it.
func TestTwoContendersOneHolder(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	a := testElector(t, dir, "host-a/compiletools", c)
	b := testElector(t, dir, "host-b/compiletools", c)
	for i := range 20 {
		ra, rb := a.round("s"), b.round("s")
		if i%2 == 1 { // either may go first
			rb, ra = b.round("s"), a.round("s")
		}
		wantState(t, "a", ra, leaseHeld)
		wantState(t, "b", rb, leaseOther)
		if rb.holder != "host-a/compiletools" {
			t.Fatalf("b sees holder %q", rb.holder)
		}
		c.advance(time.Second)
	}
}

// A holder that stops renewing loses the lease after one lease duration of
// the contender's own clock: the contender takes it over, confirms it the
// round after, and the old holder, if it comes back, steps down.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	ca, cb := newClock(), newClock()
	// b's wall clock is 5 s ahead: less than a lease duration, so it must
	// not matter.
	cb.wall = cb.wall.Add(5 * time.Second)
	a := testElector(t, dir, "host-a/compiletools", ca)
	b := testElector(t, dir, "host-b/compiletools", cb)
	wantState(t, "a takes", a.round("s"), leaseHeld)
	wantState(t, "b sees a", b.round("s"), leaseOther)
	// a dies; b looks every second.
	for elapsed := time.Second; elapsed < testLease; elapsed += time.Second {
		cb.advance(time.Second)
		wantState(t, "b before expiry", b.round("s"), leaseOther)
	}
	cb.advance(time.Second)
	wantState(t, "b at expiry", b.round("s"), leaseTaking)
	wantState(t, "b confirms", b.round("s"), leaseHeld)
	if got := readRecord(t, dir).Holder; got != "host-b/compiletools" {
		t.Fatalf("holder %q after takeover", got)
	}
	ca.advance(11 * time.Second)
	r := a.round("s")
	wantState(t, "a back", r, leaseOther)
	if r.holder != "host-b/compiletools" {
		t.Fatalf("a sees holder %q", r.holder)
	}
}

// Two contenders that both find the lease expired both replace it; only
// the one whose lease is in the file at the next round scans.
func TestSimultaneousTakeoverLeavesOneHolder(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	dead := testElector(t, dir, "host-dead/compiletools", c)
	wantState(t, "dead takes", dead.round("s"), leaseHeld)
	a := testElector(t, dir, "host-a/compiletools", c)
	b := testElector(t, dir, "host-b/compiletools", c)
	wantState(t, "a sees", a.round("s"), leaseOther)
	wantState(t, "b sees", b.round("s"), leaseOther)
	c.advance(testLease)
	// Both read the expired lease before either replaces it.
	wantState(t, "a takes over", a.round("s"), leaseTaking)
	// b's read came before a's write: b replaces a's new lease too.
	wantState(t, "b takes over", b.takeOver("s", nil), leaseTaking)
	held := 0
	for _, e := range []*elector{a, b} {
		if e.round("s").state == leaseHeld {
			held++
		}
	}
	if held != 1 {
		t.Fatalf("%d holders after a simultaneous takeover, want 1", held)
	}
}

// A receiver that starts after the holder died long ago need not wait a
// lease duration; one whose clock is behind or ahead by less than a lease
// duration never ends a live lease.
func TestFreshContenderAndClockSkew(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	old := testElector(t, dir, "host-old/compiletools", c)
	wantState(t, "old takes", old.round("s"), leaseHeld)

	skewed := *c
	skewed.wall = skewed.wall.Add(testLease + testLease/2) // expired by half a lease: maybe skew
	b := testElector(t, dir, "host-b/compiletools", &skewed)
	wantState(t, "within the skew allowance", b.round("s"), leaseOther)

	late := *c
	late.wall = late.wall.Add(2*testLease + time.Second) // expired by more than a lease
	d := testElector(t, dir, "host-d/compiletools", &late)
	wantState(t, "long expired", d.round("s"), leaseTaking)
	wantState(t, "confirmed", d.round("s"), leaseHeld)
}

// A receiver shutting down removes its lease, so another takes it at once.
func TestReleasedLeaseIsTakenAtOnce(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	a := testElector(t, dir, "host-a/compiletools", c)
	b := testElector(t, dir, "host-b/compiletools", c)
	wantState(t, "a takes", a.round("s"), leaseHeld)
	wantState(t, "b sees", b.round("s"), leaseOther)
	b.release() // not b's: must stay
	if _, err := os.Stat(filepath.Join(dir, LeaseFileName)); err != nil {
		t.Fatalf("a non-holder's release removed the lease: %v", err)
	}
	a.release()
	wantState(t, "b after release", b.round("s"), leaseHeld)
}

// Lease files no receiver wrote are warned about and replaced (never
// followed, read in full or blocked on), or, when they cannot be replaced,
// leave the store unscanned: never a crash, never a write outside the store.
func TestHostileLeaseFiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		make func(path string) error
		want leaseState
	}{
		"symlink out of the store": {func(p string) error { return os.Symlink(outside, p) }, leaseTaking},
		"dangling symlink":         {func(p string) error { return os.Symlink("/nonexistent/lease", p) }, leaseTaking},
		"huge sparse file": {func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(4 << 30)
		}, leaseTaking},
		"garbage":            {func(p string) error { return os.WriteFile(p, []byte("\x00\xffnot json{"), 0o644) }, leaseTaking},
		"json without token": {func(p string) error { return os.WriteFile(p, []byte(`{"holder":"x"}`), 0o644) }, leaseTaking},
		"fifo":               {func(p string) error { return syscall.Mkfifo(p, 0o644) }, leaseTaking},
		"directory":          {func(p string) error { return os.MkdirAll(filepath.Join(p, "sub"), 0o755) }, leaseBroken},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir, c := t.TempDir(), newClock()
			if err := tc.make(filepath.Join(dir, LeaseFileName)); err != nil {
				t.Fatal(err)
			}
			a := testElector(t, dir, "host-a/compiletools", c)
			done := make(chan leaseRound, 1)
			go func() { done <- a.round("s") }()
			var r leaseRound
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("a round blocked on the lease file")
			}
			wantState(t, name, r, tc.want)
			if r.problem == nil {
				t.Fatal("no problem reported")
			}
			if tc.want == leaseTaking {
				wantState(t, "confirmed", a.round("s"), leaseHeld)
				if rec := readRecord(t, dir); rec.Token != a.token {
					t.Fatalf("lease not replaced: %+v", rec)
				}
			}
			if data, _ := os.ReadFile(outside); string(data) != "keep me" {
				t.Fatalf("the file outside the store was written: %q", data)
			}
		})
	}
}

// A store whose directory cannot be written has no lease: nobody scans it,
// and each round says why.
func TestUnwritableStoreIsBroken(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir, c := t.TempDir(), newClock()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	r := testElector(t, dir, "host-a/compiletools", c).round("s")
	wantState(t, "unwritable", r, leaseBroken)
	if !errors.Is(r.problem, os.ErrPermission) {
		t.Fatalf("problem %v, want a permission error", r.problem)
	}
}

// Eight receivers creating the missing lease at the same moment: link(2)
// lets exactly one win, and every other one names it.
func TestConcurrentCreationHasOneWinner(t *testing.T) {
	for range 20 {
		dir, c := t.TempDir(), newClock()
		const n = 8
		rounds := make(chan leaseRound, n)
		start := make(chan struct{})
		for i := range n {
			e := testElector(t, dir, "host-"+string(rune('a'+i))+"/compiletools", c)
			go func() {
				<-start
				rounds <- e.round("s")
			}()
		}
		close(start)
		held, holders := 0, map[string]bool{}
		for range n {
			r := <-rounds
			if r.state == leaseHeld {
				held++
			} else {
				holders[r.holder] = true
			}
		}
		winner := readRecord(t, dir).Holder
		if held != 1 || len(holders) != 1 || !holders[winner] {
			t.Fatalf("%d holders, the others name %v, the file names %q", held, holders, winner)
		}
	}
}
