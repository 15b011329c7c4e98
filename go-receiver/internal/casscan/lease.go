package casscan

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LeaseFileName is the scan lease of a store with `scan: elect`, in the
// configured directory (a cell's or a pool's): a dot name, which neither
// compiletools' scans nor pool enumeration look at.
const LeaseFileName = ".ct-otel-scan-lease"

// leaseRecord is the lease file: who scans the store, until when. Seq
// changes with every renewal, so a contender sees a live holder's lease
// change without trusting the holder's clock.
type leaseRecord struct {
	Holder    string `json:"holder"`
	Token     string `json:"token"`
	StoreID   string `json:"store_id,omitempty"`
	Seq       uint64 `json:"seq"`
	ExpiresMs int64  `json:"expires_unix_ms"`
}

// leaseState is what one election round found.
type leaseState int

const (
	// leaseHeld: this receiver holds the lease and scans the store.
	leaseHeld leaseState = iota
	// leaseOther: another receiver holds a live lease.
	leaseOther
	// leaseTaking: this receiver published a takeover and confirms it next
	// round, so that two contenders replacing the same expired lease at
	// once do not both scan.
	leaseTaking
	// leaseBroken: the lease can be neither read nor replaced.
	leaseBroken
)

// leaseRound is the outcome of one round.
type leaseRound struct {
	state  leaseState
	holder string // who holds it (leaseOther), for the operator
	// problem is set when the round met a lease file it could not use; the
	// caller warns once per distinct problem and counts each round's.
	problem error
}

// elector takes, renews and releases one store's scan lease. It is used by
// one goroutine.
type elector struct {
	path     string
	holder   string
	token    string
	duration time.Duration
	wallNow  func() time.Time
	monoNow  func() time.Time
	seq      uint64
	// seen and seenAt are the other holder's lease bytes and when this
	// receiver first saw them: unchanged for a whole lease duration by
	// this receiver's own clock, the lease has expired.
	seen   []byte
	seenAt time.Time
}

// newElector is the elector of the lease in dir, for holder (host.name
// and receiver id), with a fresh random token per receiver start.
func newElector(dir, holder string, duration time.Duration, now func() time.Time) *elector {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24+)
	return &elector{
		path: filepath.Join(dir, LeaseFileName), holder: holder, token: hex.EncodeToString(raw[:]),
		duration: duration, wallNow: now, monoNow: time.Now,
	}
}

// round runs one election round: renew our lease, confirm a takeover,
// create a missing lease, or take over an expired or unusable one.
func (e *elector) round(storeID string) leaseRound {
	data, err := readSmallFile(e.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return e.create(storeID)
	case err != nil && !errors.Is(err, errHostile):
		return leaseRound{state: leaseBroken, problem: fmt.Errorf("cannot read scan lease %s: %w", e.path, err)}
	case err != nil:
		return e.takeOver(storeID, fmt.Errorf("scan lease %s replaced: %w", e.path, err))
	}
	var rec leaseRecord
	if jerr := json.Unmarshal(data, &rec); jerr != nil || rec.Token == "" || rec.Holder == "" {
		return e.takeOver(storeID, fmt.Errorf("scan lease %s replaced: %w: no lease record", e.path, errHostile))
	}
	if rec.Token == e.token {
		// Ours: renewed, or a takeover of the last round confirmed (nobody
		// replaced it since).
		return e.renew(storeID)
	}
	if !bytes.Equal(data, e.seen) {
		e.seen, e.seenAt = data, e.monoNow()
	}
	if e.expired(rec) {
		return e.takeOver(storeID, nil)
	}
	return leaseRound{state: leaseOther, holder: rec.Holder}
}

// expired: the other holder's lease did not change for a whole lease
// duration as this receiver measured it, or its own expiry lies more than
// a further lease duration in the past by this receiver's clock (so that a
// receiver that just started need not wait, while clocks that differ by
// less than a lease duration never end a live lease).
func (e *elector) expired(rec leaseRecord) bool {
	if e.monoNow().Sub(e.seenAt) >= e.duration {
		return true
	}
	return e.wallNow().Add(-e.duration).UnixMilli() > rec.ExpiresMs
}

// record is our lease as of now.
func (e *elector) record(storeID string) []byte {
	e.seq++
	data, _ := json.Marshal(leaseRecord{
		Holder: e.holder, Token: e.token, StoreID: storeID, Seq: e.seq,
		ExpiresMs: e.wallNow().Add(e.duration).UnixMilli(),
	})
	return append(data, '\n')
}

func (e *elector) create(storeID string) leaseRound {
	err := publishExclusive(e.path, e.holder, e.record(storeID))
	if err != nil && !errors.Is(err, os.ErrExist) {
		return leaseRound{state: leaseBroken, problem: fmt.Errorf("cannot create scan lease %s: %w", e.path, err)}
	}
	// Whoever linked first holds it; read back, as link's answer may have
	// been lost on the way.
	data, rerr := readSmallFile(e.path)
	var rec leaseRecord
	if rerr == nil && json.Unmarshal(data, &rec) == nil && rec.Token == e.token {
		return leaseRound{state: leaseHeld}
	}
	if rerr == nil {
		e.seen, e.seenAt = data, e.monoNow()
	}
	return leaseRound{state: leaseOther, holder: rec.Holder}
}

func (e *elector) renew(storeID string) leaseRound {
	if err := publishReplace(e.path, e.holder, e.record(storeID)); err != nil {
		// Still ours until it expires; the next round tries again.
		return leaseRound{state: leaseHeld, problem: fmt.Errorf("cannot renew scan lease %s: %w", e.path, err)}
	}
	return leaseRound{state: leaseHeld}
}

func (e *elector) takeOver(storeID string, problem error) leaseRound {
	if err := publishReplace(e.path, e.holder, e.record(storeID)); err != nil {
		return leaseRound{state: leaseBroken, problem: errors.Join(problem, fmt.Errorf("cannot take over scan lease %s: %w", e.path, err))}
	}
	e.seen = nil
	return leaseRound{state: leaseTaking, problem: problem}
}

// renewIfHeld renews a held lease during a long scan cycle, between two
// store sets; it never takes a lease.
func (e *elector) renewIfHeld(storeID string) {
	data, err := readSmallFile(e.path)
	var rec leaseRecord
	if err == nil && json.Unmarshal(data, &rec) == nil && rec.Token == e.token {
		_ = publishReplace(e.path, e.holder, e.record(storeID))
	}
}

// release removes our lease at shutdown, so another receiver takes over at
// its next round instead of after the lease expires.
func (e *elector) release() {
	data, err := readSmallFile(e.path)
	var rec leaseRecord
	if err == nil && json.Unmarshal(data, &rec) == nil && rec.Token == e.token {
		_ = os.Remove(e.path)
	}
}
