// Package livebuilds follows running builds for the receiver's logs
// signal (the live block): their progress as log records, an end record
// per build, and the live metrics.
package livebuilds

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// Tracker follows running builds for the logs signal (issue 16): every
// live.interval it reads what their growing files gained since the last
// look, sends it as log records, and ends each build with one
// `ct.build.end` record — linked to the build's trace once timing.json was
// delivered, or marked abandoned when the build died.
//
// It runs in its own goroutine and only ever receives the running
// directories of each poll (Offer never blocks), so following running
// builds never delays the delivery of finished ones.
//
// Delivery: progress is at least once (a file's offset is committed only
// after the logs consumer accepted the records read from it; a failed or
// interrupted send reads the same bytes again). Start and end records are
// sent once across restarts: their flags are committed with the offsets,
// into the storage extension (client "live"), after the consumer returned.
type Tracker struct {
	o     Options
	set   Settings
	scans chan offer
	store *liveStateStore

	// states is the committed state of every followed build, and of
	// abandoned builds still on disk without timing.json.
	states map[string]liveBuildState
	// builds are the builds followed now.
	builds map[string]*liveBuild
	// ignored are running directories not followed: dead at first sight,
	// or already ended as abandoned.
	ignored map[string]bool
	// abandoned are the directories of builds ended as abandoned that are
	// still on disk; read by the poll (IsAbandoned), so a sync.Map.
	abandoned sync.Map
	// replaced are followed builds whose directory was made again: their
	// end record is the last thing sent of the old build.
	replaced map[string]bool
	haveScan bool
	warned   map[string]bool
	metrics  liveMetrics
	// born and nudges come from the file watches (capture.Watcher): a new
	// invocation directory, a running build's statslog written.
	born     chan string
	nudges   chan struct{}
	lastTick time.Time
	// held are the open files of followed builds (liveFile.held), by path.
	held *heldFiles
	// tickNo counts the looks (held files remember when they last grew).
	tickNo uint64
}

// minTickGap bounds how often watch events make the tracker read: a burst
// of parallel compiles becomes one read, not one per block.
const minTickGap = 50 * time.Millisecond

// liveBuild is one followed build.
type liveBuild struct {
	dir string
	pid uint64
	// running: listed as running (no timing.json) by the latest poll.
	running bool
}

// New makes the tracker of o, resuming the live states saved in client
// (nil: kept in memory only). Its error is the client's, which the caller
// still owns then.
func New(ctx context.Context, client storage.Client, o Options, set Settings) (*Tracker, error) {
	o = withDefaults(o)
	store, err := openStateStore(ctx, client, set.Logger)
	if err != nil {
		return nil, err
	}
	return &Tracker{
		o:        o,
		set:      set,
		scans:    make(chan offer, 1),
		store:    store,
		states:   store.load(),
		builds:   map[string]*liveBuild{},
		ignored:  map[string]bool{},
		replaced: map[string]bool{},
		warned:   map[string]bool{},
		metrics:  newLiveMetrics(set.Now()),
		born:     make(chan string, 64),
		held:     newHeldFiles(o.MaxOpenFilesPerBuild, o.MaxOpenFiles),
		nudges:   make(chan struct{}, 1),
	}, nil
}

// withDefaults fills the bounds a caller left zero.
func withDefaults(o Options) Options {
	if o.MaxRequestRecords <= 0 {
		o.MaxRequestRecords = 4096
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 4 << 20
	}
	if o.MaxFilesPerBuild <= 0 {
		o.MaxFilesPerBuild = 64
	}
	return o
}

// offer is one poll's running directories and their identities as the
// poll's discovery found them.
type offer struct {
	running []string
	ids     map[string]dirfd.ID
}

// Offer hands the running directories of a poll, with the identities
// discovery took of them (discovery.Scan.RunningIDs), to the tracker; a
// list it has not taken yet is replaced. A directory is first followed
// only if it still is the one discovery found. Safe on a nil tracker.
func (t *Tracker) Offer(running []string, ids map[string]dirfd.ID) {
	if t == nil {
		return
	}
	o := offer{running: slices.Clone(running), ids: maps.Clone(ids)}
	for {
		select {
		case t.scans <- o:
			return
		default:
		}
		select {
		case <-t.scans:
		default:
		}
	}
}

// Close closes the storage client of the live states. Safe on a nil
// tracker.
func (t *Tracker) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.store.close(ctx)
}

// Run follows the builds until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	ticker := time.NewTicker(t.o.Interval)
	defer ticker.Stop()
	defer t.held.releaseAll()
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-t.scans:
			t.takeScan(o.running, o.ids, t.set.Now())
			t.tick(ctx)
		case dir := <-t.born:
			t.takeBorn(dir, t.set.Now())
			t.tickSoon(ctx)
		case <-t.nudges:
			t.tickSoon(ctx)
		case <-ticker.C:
			t.tick(ctx)
		}
	}
}

// IsAbandoned reports whether the build in dir ended as abandoned (its
// ct-cake died) and is still on disk: its transient files need no
// capture. Safe on a nil tracker and from any goroutine.
func (t *Tracker) IsAbandoned(dir string) bool {
	if t == nil {
		return false
	}
	_, ok := t.abandoned.Load(dir)
	return ok
}

// BuildAppeared: a new invocation directory (from the watch goroutine;
// never blocks: a full queue leaves the build to the next poll).
func (t *Tracker) BuildAppeared(dir string) {
	select {
	case t.born <- dir:
	default:
	}
}

// StatslogGrew: a running build's statslog was written (never blocks).
func (t *Tracker) StatslogGrew() {
	select {
	case t.nudges <- struct{}{}:
	default:
	}
}

// tickSoon reads now, or once minTickGap has passed since the last read.
func (t *Tracker) tickSoon(ctx context.Context) {
	if wait := minTickGap - t.set.Now().Sub(t.lastTick); wait > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	t.tick(ctx)
}

// tick reads every followed build once and sends what it found, in
// bounded requests (requests.go); a build's state is committed only once
// the consumer accepted its records. A shutdown stops it between builds.
func (t *Tracker) tick(ctx context.Context) {
	if !t.haveScan {
		return
	}
	now := t.set.Now()
	t.lastTick = now
	t.tickNo++
	dirs := make([]string, 0, len(t.builds))
	for dir := range t.builds {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	packer := newRequestPacker(t)
	for _, dir := range dirs {
		if ctx.Err() != nil {
			break
		}
		st := cloneState(t.states[dir])
		if st.Offsets == nil {
			st.Offsets = map[string]int64{}
		}
		logs := plog.NewLogs()
		pb := &pendingBuild{dir: dir}
		pb.ended = t.step(ctx, t.builds[dir], &st, now, logs, &pb.outcomes)
		pb.state = st
		if err := packer.add(ctx, pb, logs); err != nil {
			break
		}
	}
	if ctx.Err() == nil {
		_ = packer.flush(ctx)
	}
	var compiles ffi.LiveOutcomes
	for _, pb := range packer.done {
		t.states[pb.dir] = pb.state
		compiles.DirectHits += pb.outcomes.DirectHits
		compiles.PreprocessedHits += pb.outcomes.PreprocessedHits
		compiles.Misses += pb.outcomes.Misses
		compiles.Uncacheable += pb.outcomes.Uncacheable
		if pb.ended {
			t.endBuild(pb.dir)
		}
	}
	t.held.closeIdle(t.tickNo)
	t.metrics.add(compiles)
	if err := t.store.save(context.WithoutCancel(ctx), t.states); err != nil && !t.warned["\x00save"] {
		t.warned["\x00save"] = true
		t.set.Logger.Warn("cannot save live build state; after a restart some live records may be sent again", zap.Error(err))
	}
	t.sendMetrics(ctx, now)
}

// endBuild forgets a build whose end record was delivered. An abandoned
// build's captured files are deleted with it: no timing.json will use
// them (issue 22, defect 7).
func (t *Tracker) endBuild(dir string) {
	t.held.releaseBuild(dir)
	delete(t.builds, dir)
	if t.replaced[dir] {
		// The directory holds another build now: followed afresh by the
		// next poll; the capture already belongs to the new one.
		delete(t.replaced, dir)
		delete(t.states, dir)
		return
	}
	if t.states[dir].Abandoned() {
		t.ignored[dir] = true // kept: it still looks like a running build on disk
		t.abandoned.Store(dir, struct{}{})
		if t.set.Capturer != nil {
			if err := t.set.Capturer.Release(dir); err != nil {
				t.warnOnce(dir+"\x00release", "cannot delete the captured files of an abandoned build", err)
			}
		}
	} else {
		delete(t.states, dir)
	}
}

// step reads one build's new records into batch and decides its end;
// it reports whether the build's end record was added.
func (t *Tracker) step(ctx context.Context, b *liveBuild, st *liveBuildState, now time.Time, batch plog.Logs, compiles *ffi.LiveOutcomes) bool {
	base := ffi.LiveRequest{
		InvocationDir:      b.dir,
		HostName:           t.o.HostName,
		ServiceName:        t.o.ServiceName,
		ResourceAttributes: t.o.ResourceAttributes,
		ObservedUnixNano:   uint64(now.UnixNano()),
		MaxAttributeLen:    t.o.MaxAttributeLen,
	}
	emit := func(req ffi.LiveRequest) (ffi.LiveResult, bool) {
		res, err := ffi.LiveRecords(ctx, req)
		if err != nil {
			t.warnOnce(b.dir, "cannot turn live build data into records", err)
			return res, false
		}
		for _, w := range res.Warnings {
			t.set.Logger.Debug("live build data read with a problem", zap.String("path", b.dir), zap.String("warning", w))
		}
		if res.HasLogs {
			res.Logs.ResourceLogs().MoveAndAppendTo(batch.ResourceLogs())
		}
		return res, true
	}
	end := func(abandoned, link bool) bool {
		req := base
		req.Kind, req.Abandoned, req.LinkTrace = ffi.LiveBuildEnd, abandoned, link
		if _, ok := emit(req); !ok {
			return false
		}
		st.Ended = true
		st.Offsets = map[string]int64{}
		if abandoned {
			st.Offsets[abandonedMark] = 1
		}
		return true
	}
	// Every file of the build is opened relative to these handles (never
	// through a link); a directory that cannot be opened is gone.
	d, dirErr := t.openBuildDirs(b.dir)
	defer d.close()
	if dirErr == nil && !st.Dir.IsZero() && d.inv.ID() != st.Dir {
		// Deleted and made again under the same name: another build. The
		// old one ends as abandoned; the new one is followed from the next
		// look, with nothing of the old one (files, offsets, capture).
		t.warnOnce(b.dir+"\x00recreated", "a followed build directory was replaced by another; following the new one as a new build",
			fmt.Errorf("identity %s, now %s", st.Dir, d.inv.ID()))
		t.held.releaseBuild(b.dir)
		if !st.Started {
			*st = liveBuildState{FirstSeenNs: now.UnixNano(), Offsets: map[string]int64{}, Dir: d.inv.ID()}
			return false
		}
		t.replaced[b.dir] = true
		return end(true, false)
	}
	if dirErr == nil && st.Dir.IsZero() {
		st.Dir = d.inv.ID()
	}
	if !st.Started {
		req := base
		req.Kind = ffi.LiveBuildStart
		if _, ok := emit(req); !ok {
			return false
		}
		st.Started = true
	}
	rec, settled := t.set.Checkpoints.Get(b.dir)
	timingExists := dirErr == nil && d.inv.Exists(discovery.TimingFile)
	// Once timing.json exists the build's files get nothing more (ct-cake
	// wrote it after its backend step): a last line or block is complete.
	final := !b.running && (settled || timingExists)
	remaining := t.o.MaxRecordsPerBuild
	if dirErr == nil {
		for _, f := range t.filesOf(b, d) {
			if remaining <= 0 {
				break
			}
			offset := st.Offsets[f.path]
			data, reset, wasReset, err := t.read(b.dir, f, offset)
			if err != nil {
				t.warnOnce(f.path, "cannot read a growing build file", err)
				continue
			}
			if wasReset {
				st.Offsets[f.path] = reset
				continue
			}
			if len(data) == 0 {
				continue
			}
			req := base
			req.Kind, req.Data, req.Final, req.MaxRecords = f.kind, data, final, uint32(remaining)
			res, ok := emit(req)
			if !ok {
				continue
			}
			if res.Skipped > 0 {
				t.warnOnce(f.path+"\x00skipped", "lines of a growing build file are not records; skipped (logged once per file)",
					fmt.Errorf("%d line(s) skipped in this read", res.Skipped))
			}
			consumed := int64(res.Consumed)
			if consumed == 0 && len(data) == maxLiveRead {
				consumed = int64(len(data)) // one line longer than a read: never a record
			}
			st.Offsets[f.path] = offset + consumed
			remaining -= int(res.Records)
			compiles.DirectHits += res.Outcomes.DirectHits
			compiles.PreprocessedHits += res.Outcomes.PreprocessedHits
			compiles.Misses += res.Outcomes.Misses
			compiles.Uncacheable += res.Outcomes.Uncacheable
		}
	}
	if remaining <= 0 {
		return false // more to read first; the end waits
	}
	switch {
	case settled && !b.running:
		link := rec.State == checkpoint.Delivered && rec.Signals&uint32(ffi.SignalTraces) != 0
		return end(false, link)
	case !b.running && dirErr != nil:
		return end(true, false)
	case timingExists:
		return false // finished, its delivery pending: the end follows it
	}
	age := now.Sub(time.Unix(0, st.FirstSeenNs))
	if age > t.o.AbandonAfter || (t.o.AbandonWhenPIDGone && pidGone(b.pid)) {
		return end(true, false)
	}
	return false
}

// abandonedMark marks, among an ended build's offsets, that it ended as
// abandoned (its state is kept while it stays on disk).
const abandonedMark = "\x00abandoned"

// Abandoned reports whether the build ended as abandoned.
func (s liveBuildState) Abandoned() bool { return s.Ended && s.Offsets[abandonedMark] == 1 }

// warnOnce logs msg once per key (a path, or a path and what went wrong).
func (t *Tracker) warnOnce(key, msg string, err error) {
	if t.warned[key] {
		return
	}
	t.warned[key] = true
	path, _, _ := strings.Cut(key, "\x00")
	t.set.Logger.Warn(msg, zap.String("path", path), zap.Error(err))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
