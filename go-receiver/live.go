package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// liveTracker follows running builds for the logs signal (issue 16): every
// live.interval it reads what their growing files gained since the last
// look, sends it as log records, and ends each build with one
// `ct.build.end` record — linked to the build's trace once timing.json was
// delivered, or marked abandoned when the build died.
//
// It runs in its own goroutine and only ever receives the running
// directories of each poll (offer never blocks), so following running
// builds never delays the delivery of finished ones.
//
// Delivery: progress is at least once (a file's offset is committed only
// after the logs consumer accepted the records read from it; a failed or
// interrupted send reads the same bytes again). Start and end records are
// sent once across restarts: their flags are committed with the offsets,
// into the storage extension (client "live"), after the consumer returned.
type liveTracker struct {
	r     *compiletoolsReceiver
	cfg   LiveConfig
	scans chan []string
	store *liveStateStore

	// states is the committed state of every followed build, and of
	// abandoned builds still on disk without timing.json.
	states map[string]liveBuildState
	// builds are the builds followed now.
	builds map[string]*liveBuild
	// ignored are running directories not followed: dead at first sight,
	// or already ended as abandoned.
	ignored  map[string]bool
	haveScan bool
	warned   map[string]bool
	metrics  liveMetrics
	// born and nudges come from the file watches (capture.Watcher): a new
	// invocation directory, a running build's statslog written.
	born     chan string
	nudges   chan struct{}
	lastTick time.Time
	// held are the open files of followed builds (liveFile.held), by path.
	held map[string]heldFile
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

// setUpLiveTracker creates the tracker when the receiver is in a logs
// pipeline and live.enabled is on.
func (r *compiletoolsReceiver) setUpLiveTracker(ctx context.Context, host component.Host) error {
	if r.logs == nil || !r.cfg.Live.Enabled {
		return nil
	}
	store, err := openLiveStateStore(ctx, host, r)
	if err != nil {
		return err
	}
	r.tracker = &liveTracker{
		r:       r,
		cfg:     r.cfg.Live,
		scans:   make(chan []string, 1),
		store:   store,
		states:  store.load(),
		builds:  map[string]*liveBuild{},
		ignored: map[string]bool{},
		warned:  map[string]bool{},
		metrics: newLiveMetrics(r.now()),
		born:    make(chan string, 64),
		held:    map[string]heldFile{},
		nudges:  make(chan struct{}, 1),
	}
	if r.captureWatcher != nil {
		r.captureWatcher.SetListener(r.tracker)
	}
	return nil
}

// setLogsConsumer registers the logs consumer (the live records).
func (r *compiletoolsReceiver) setLogsConsumer(next consumer.Logs) error {
	if r.logs != nil {
		return errConsumerTwice
	}
	obs, err := r.newObsReport()
	if err != nil {
		return err
	}
	r.logs, r.obsLogs = next, obs
	return nil
}

// offer hands the running directories of a poll to the tracker; a list it
// has not taken yet is replaced. Safe on a nil tracker.
func (t *liveTracker) offer(running []string) {
	if t == nil {
		return
	}
	running = slices.Clone(running)
	for {
		select {
		case t.scans <- running:
			return
		default:
		}
		select {
		case <-t.scans:
		default:
		}
	}
}

func (t *liveTracker) close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.store.close(ctx)
}

func (t *liveTracker) run(ctx context.Context) {
	ticker := time.NewTicker(t.cfg.Interval)
	defer ticker.Stop()
	defer func() {
		for path := range t.held {
			t.release(path)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case running := <-t.scans:
			t.takeScan(running, t.r.now())
			t.tick(ctx)
		case dir := <-t.born:
			t.takeBorn(dir, t.r.now())
			t.tickSoon(ctx)
		case <-t.nudges:
			t.tickSoon(ctx)
		case <-ticker.C:
			t.tick(ctx)
		}
	}
}

// BuildAppeared: a new invocation directory (from the watch goroutine;
// never blocks: a full queue leaves the build to the next poll).
func (t *liveTracker) BuildAppeared(dir string) {
	select {
	case t.born <- dir:
	default:
	}
}

// StatslogGrew: a running build's statslog was written (never blocks).
func (t *liveTracker) StatslogGrew() {
	select {
	case t.nudges <- struct{}{}:
	default:
	}
}

// tickSoon reads now, or once minTickGap has passed since the last read.
func (t *liveTracker) tickSoon(ctx context.Context) {
	if wait := minTickGap - t.r.now().Sub(t.lastTick); wait > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	t.tick(ctx)
}

// tick reads every followed build once and sends what it found in one
// request; states are committed only once the consumer accepted it.
func (t *liveTracker) tick(ctx context.Context) {
	if !t.haveScan {
		return
	}
	now := t.r.now()
	t.lastTick = now
	batch := plog.NewLogs()
	next := cloneStates(t.states)
	var compiles ffi.LiveOutcomes
	var ended []string
	dirs := make([]string, 0, len(t.builds))
	for dir := range t.builds {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		st := next[dir]
		if st.Offsets == nil {
			st.Offsets = map[string]int64{}
		}
		if t.step(ctx, t.builds[dir], &st, now, batch, &compiles) {
			ended = append(ended, dir)
		}
		next[dir] = st
	}
	if batch.LogRecordCount() > 0 {
		if err := t.consume(ctx, batch); err != nil {
			if !consumererror.IsPermanent(err) {
				t.r.logger.Debug("live records not accepted; reading them again next time", zap.Error(err))
				return
			}
			t.r.logger.Warn("logs consumer rejected live records permanently; dropping them", zap.Error(err))
		}
	}
	t.states = next
	for _, dir := range ended {
		t.releaseBuild(dir)
		delete(t.builds, dir)
		if t.states[dir].Abandoned() {
			t.ignored[dir] = true // kept: it still looks like a running build on disk
		} else {
			delete(t.states, dir)
		}
	}
	t.metrics.add(compiles)
	if err := t.store.save(context.WithoutCancel(ctx), t.states); err != nil && !t.warned["\x00save"] {
		t.warned["\x00save"] = true
		t.r.logger.Warn("cannot save live build state; after a restart some live records may be sent again", zap.Error(err))
	}
	t.sendMetrics(ctx, now)
}

// step reads one build's new records into batch and decides its end;
// it reports whether the build's end record was added.
func (t *liveTracker) step(ctx context.Context, b *liveBuild, st *liveBuildState, now time.Time, batch plog.Logs, compiles *ffi.LiveOutcomes) bool {
	base := ffi.LiveRequest{
		InvocationDir:      b.dir,
		HostName:           t.r.hostName,
		ServiceName:        t.r.cfg.ServiceName,
		ResourceAttributes: t.r.userAttributes(),
		ObservedUnixNano:   uint64(now.UnixNano()),
		MaxAttributeLen:    uint32(t.r.cfg.Limits.MaxAttributeLength),
	}
	emit := func(req ffi.LiveRequest) (ffi.LiveResult, bool) {
		res, err := ffi.LiveRecords(ctx, req)
		if err != nil {
			t.warnOnce(b.dir, "cannot turn live build data into records", err)
			return res, false
		}
		for _, w := range res.Warnings {
			t.r.logger.Debug("live build data read with a problem", zap.String("path", b.dir), zap.String("warning", w))
		}
		if res.HasLogs {
			res.Logs.ResourceLogs().MoveAndAppendTo(batch.ResourceLogs())
		}
		return res, true
	}
	if !st.Started {
		req := base
		req.Kind = ffi.LiveBuildStart
		if _, ok := emit(req); !ok {
			return false
		}
		st.Started = true
	}
	rec, settled := t.r.ledger.store.Get(b.dir)
	timingExists := exists(filepath.Join(b.dir, discovery.TimingFile))
	// Once timing.json exists the build's files get nothing more (ct-cake
	// wrote it after its backend step): a last line or block is complete.
	final := !b.running && (settled || timingExists)
	remaining := t.cfg.MaxRecordsPerBuild
	for _, f := range t.filesOf(b) {
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
	if remaining <= 0 {
		return false // more to read first; the end waits
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
	switch {
	case settled && !b.running:
		link := rec.State == checkpoint.Delivered && rec.Signals&uint32(ffi.SignalTraces) != 0
		return end(false, link)
	case !b.running && !exists(b.dir):
		return end(true, false)
	case timingExists:
		return false // finished, its delivery pending: the end follows it
	}
	age := now.Sub(time.Unix(0, st.FirstSeenNs))
	if age > t.cfg.AbandonAfter || (t.cfg.AbandonWhenPIDGone && pidGone(b.pid) && !exists(filepath.Join(b.dir, discovery.TimingFile))) {
		return end(true, false)
	}
	return false
}

// abandonedMark marks, among an ended build's offsets, that it ended as
// abandoned (its state is kept while it stays on disk).
const abandonedMark = "\x00abandoned"

// Abandoned reports whether the build ended as abandoned.
func (s liveBuildState) Abandoned() bool { return s.Ended && s.Offsets[abandonedMark] == 1 }

func (t *liveTracker) consume(ctx context.Context, ld plog.Logs) error {
	octx := t.r.obsLogs.StartLogsOp(ctx)
	n := ld.LogRecordCount()
	err := t.r.logs.ConsumeLogs(octx, ld)
	t.r.obsLogs.EndLogsOp(octx, dataFormat, n, err)
	return err
}

// warnOnce logs msg once per key (a path, or a path and what went wrong).
func (t *liveTracker) warnOnce(key, msg string, err error) {
	if t.warned[key] {
		return
	}
	t.warned[key] = true
	path, _, _ := strings.Cut(key, "\x00")
	t.r.logger.Warn(msg, zap.String("path", path), zap.Error(err))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
