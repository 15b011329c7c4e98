package livebuilds

import (
	"context"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// The logs requests of one look (issue 22, defect 4). Each build's records
// are read into their own plog.Logs and packed into requests of at most
// live.max_request_records records and about live.max_request_bytes bytes
// (a gateway refuses a body over its limit, 20 MiB by default, and with it
// every build in the request); a build's records are split over requests
// when they are more than one holds. A build's new state is committed
// once every request holding its records was accepted (or refused for
// good), so a refused request costs only its own records, and a request
// sent while the next builds are read keeps the follower's memory at one
// request, whatever the number of builds.

// pendingBuild is one build read in this look, waiting for its records
// to be delivered before its state is committed.
type pendingBuild struct {
	dir   string
	state liveBuildState
	ended bool
	// outcomes of the statslog blocks it read (the live metrics count them
	// once they are delivered).
	outcomes ffi.LiveOutcomes
}

// requestPacker fills requests and sends each when it is full.
type requestPacker struct {
	t                    *Tracker
	maxRecords, maxBytes int
	cur                  plog.Logs
	records, bytes       int
	// waiting are the builds whose last records are in cur.
	waiting []*pendingBuild
	// done are the builds whose records were all delivered (or dropped
	// after a permanent refusal): their states may be committed.
	done []*pendingBuild
}

func newRequestPacker(t *Tracker) *requestPacker {
	return &requestPacker{t: t, maxRecords: t.o.MaxRequestRecords, maxBytes: t.o.MaxRequestBytes, cur: plog.NewLogs()}
}

// add packs b's records, sending the requests it fills; an error is a
// retryable refusal: nothing more is sent in this look.
func (p *requestPacker) add(ctx context.Context, b *pendingBuild, logs plog.Logs) error {
	rls := logs.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		resBytes := attrBytes(rl.Resource().Attributes()) + 16
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			var dst plog.LogRecordSlice
			have := false
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				n := recordBytes(lr)
				if p.records > 0 && (p.records+1 > p.maxRecords || p.bytes+n+resBytes > p.maxBytes) {
					if err := p.flush(ctx); err != nil {
						return err
					}
					have = false
				}
				if !have {
					nrl := p.cur.ResourceLogs().AppendEmpty()
					rl.Resource().CopyTo(nrl.Resource())
					nrl.SetSchemaUrl(rl.SchemaUrl())
					nsl := nrl.ScopeLogs().AppendEmpty()
					sl.Scope().CopyTo(nsl.Scope())
					nsl.SetSchemaUrl(sl.SchemaUrl())
					dst, have = nsl.LogRecords(), true
					p.bytes += resBytes
				}
				lr.MoveTo(dst.AppendEmpty())
				p.records++
				p.bytes += n
			}
		}
	}
	if p.records == 0 {
		p.done = append(p.done, b)
		return nil
	}
	p.waiting = append(p.waiting, b)
	return nil
}

// flush sends the request being filled.
func (p *requestPacker) flush(ctx context.Context) error {
	if p.records == 0 {
		p.done = append(p.done, p.waiting...)
		p.waiting = nil
		return nil
	}
	req := p.cur
	p.cur, p.records, p.bytes = plog.NewLogs(), 0, 0
	if err := p.t.set.ConsumeLogs(ctx, req); err != nil {
		if !consumererror.IsPermanent(err) {
			p.t.set.Logger.Debug("live records not accepted; reading them again next time", zap.Error(err))
			p.waiting = nil
			return err
		}
		p.t.set.Logger.Warn("logs consumer rejected live records permanently; dropping them",
			zap.Int("records", req.LogRecordCount()), zap.Error(err))
	}
	p.done = append(p.done, p.waiting...)
	p.waiting = nil
	return nil
}

// recordBytes estimates a record's encoded size: its strings and a fixed
// overhead per field (the proto framing of timestamps, ids, severity).
func recordBytes(lr plog.LogRecord) int {
	return 64 + valueBytes(lr.Body()) + attrBytes(lr.Attributes()) + len(lr.EventName())
}

func attrBytes(m pcommon.Map) int {
	n := 0
	m.Range(func(k string, v pcommon.Value) bool {
		n += len(k) + valueBytes(v) + 8
		return true
	})
	return n
}

func valueBytes(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str()) + 4
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len() + 4
	case pcommon.ValueTypeMap:
		return attrBytes(v.Map()) + 4
	case pcommon.ValueTypeSlice:
		n := 4
		s := v.Slice()
		for i := 0; i < s.Len(); i++ {
			n += valueBytes(s.At(i)) + 2
		}
		return n
	default:
		return 12
	}
}
