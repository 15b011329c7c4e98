package casscan

import (
	"context"
	"errors"
	"os"
	"time"

	"go.uber.org/zap"
)

// Scan modes of a configured store or pool (its `scan` key).
const (
	ScanAlways = "always" // scanned by every receiver that has it (default)
	ScanNever  = "never"  // configured for its id only, never scanned here
	ScanElect  = "elect"  // scanned by the one receiver holding its lease
)

// ScanModes lists the valid `scan` values.
func ScanModes() []string { return []string{ScanAlways, ScanNever, ScanElect} }

// entry is one configured store or pool and what this receiver knows of
// it: its identity and whether it scans it this cycle.
type entry struct {
	Store
	pool     bool
	id       string
	idSource storeIDSource
	elector  *elector // scan: elect only
	scanning bool
	// state and holder are the last round's, to log changes only.
	state  leaseState
	holder string
	// problems are the last round's lease and id file problems, to log
	// each distinct one once while it lasts.
	problems map[string]bool
}

// newEntries prepares the configured stores and pools.
func newEntries(o Options, now func() time.Time) []*entry {
	var out []*entry
	add := func(st Store, pool bool) {
		// Always-scanned stores scan from the start; elected ones once
		// their lease is held.
		e := &entry{Store: st, pool: pool, state: -1, scanning: st.Scan == "" || st.Scan == ScanAlways}
		if st.ID != "" {
			e.id, e.idSource = st.ID, idConfigured
		}
		if st.Scan == ScanElect {
			e.elector = newElector(st.Path, o.Holder, o.LeaseDuration, now)
		}
		out = append(out, e)
	}
	for _, st := range o.Stores {
		add(st, false)
	}
	for _, st := range o.Pools {
		add(st, true)
	}
	return out
}

// elect decides, before a scan cycle, each store's id and whether this
// receiver scans it. A lease taken over this round is confirmed after a
// short settle, not a whole interval later: only a contender whose read
// and write of the expired lease straddle the other's confirmation could
// still replace it, and that window is one rename wide.
func (s *Scanner) elect(ctx context.Context) {
	var taking []*entry
	for _, e := range s.entries {
		var problems []error
		if p := s.resolveID(e); p != nil {
			problems = append(problems, p)
		}
		switch e.Scan {
		case ScanNever:
			e.scanning = false
		case ScanElect:
			r := e.elector.round(e.id)
			if r.problem != nil {
				problems = append(problems, r.problem)
			}
			s.noteLease(ctx, e, r)
			if r.state == leaseTaking {
				taking = append(taking, e)
			}
		default:
			e.scanning = true
		}
		s.noteProblems(ctx, e, problems)
	}
	if len(taking) == 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(s.confirmDelay()):
	}
	for _, e := range taking {
		r := e.elector.round(e.id)
		s.noteLease(ctx, e, r)
		if r.problem != nil { // added to the round's, which still hold
			s.set.Telemetry.LeaseProblems.Add(ctx, 1)
			if msg := r.problem.Error(); !e.problems[msg] {
				s.set.Logger.Warn("CAS store lease or id file problem", zap.String("path", e.Path), zap.Error(r.problem))
				e.problems[msg] = true
			}
		}
	}
}

// confirmDelay is the settle between taking over a lease and confirming
// it: long against one rename, short against a collection interval.
func (s *Scanner) confirmDelay() time.Duration {
	return min(s.o.ScanInterval/4, 2*time.Second)
}

// resolveID settles the store's id: the configured one, else the store's
// id file (created first with `scan: elect`), else none — a store without
// a known identity is left unnamed rather than given one that could merge
// it with another host's store, and keeps today's resources (one per
// variant). A missing id is looked up again every cycle, since the file
// may appear later.
func (s *Scanner) resolveID(e *entry) error {
	if e.id != "" {
		return nil
	}
	id, err := readStoreID(e.Path)
	if errors.Is(err, os.ErrNotExist) && e.Scan == ScanElect {
		id, err = createStoreID(e.Path, s.o.Holder)
	}
	if err == nil {
		e.id, e.idSource = id, idFile
		return nil
	}
	e.id, e.idSource = "", idNone
	if errors.Is(err, os.ErrNotExist) {
		return nil // no id file and none to write: the local id is the answer
	}
	return err
}

// noteLease applies a round's outcome and logs a change of holder.
func (s *Scanner) noteLease(ctx context.Context, e *entry, r leaseRound) {
	was := e.state == leaseHeld
	e.scanning = r.state == leaseHeld
	if e.scanning != was {
		delta := int64(1)
		if !e.scanning {
			delta = -1
		}
		s.set.Telemetry.LeasesHeld.Add(ctx, delta)
	}
	if r.state != e.state || r.holder != e.holder {
		fields := []zap.Field{zap.String("path", e.Path), zap.String("store_id", e.id)}
		switch r.state {
		case leaseHeld:
			s.set.Logger.Info("CAS store lease held: this receiver scans the store", fields...)
		case leaseOther:
			s.set.Logger.Info("CAS store scanned by another receiver; not scanning it here",
				append(fields, zap.String("holder", r.holder))...)
		case leaseTaking:
			s.set.Logger.Info("CAS store lease expired; taking it over", append(fields, zap.String("holder", e.holder))...)
		}
	}
	e.state, e.holder = r.state, r.holder
}

// noteProblems counts every problem of a round and warns about each
// distinct one once while it lasts.
func (s *Scanner) noteProblems(ctx context.Context, e *entry, problems []error) {
	current := make(map[string]bool, len(problems))
	for _, p := range problems {
		msg := p.Error()
		current[msg] = true
		if !e.problems[msg] {
			s.set.Logger.Warn("CAS store lease or id file problem", zap.String("path", e.Path), zap.Error(p))
		}
	}
	if len(problems) > 0 {
		s.set.Telemetry.LeaseProblems.Add(ctx, int64(len(problems)))
	}
	e.problems = current
}

// renewHeld renews the leases held, between two store sets of a long
// cycle.
func (s *Scanner) renewHeld() {
	for _, e := range s.entries {
		if e.elector != nil && e.scanning {
			e.elector.renewIfHeld(e.id)
		}
	}
}

// releaseLeases gives up the leases held, at shutdown.
func (s *Scanner) releaseLeases() {
	for _, e := range s.entries {
		if e.elector != nil && e.scanning {
			e.elector.release()
			e.scanning = false
			s.set.Telemetry.LeasesHeld.Add(context.Background(), -1)
		}
	}
}
