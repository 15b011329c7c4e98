package ffi

import (
	"bytes"
	"math"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// unmarshalTraces turns the OTLP trace-request bytes the core writes into
// pdata. pdata's own unmarshaler allocates every key and string value
// separately and grows every attribute slice one append at a time: at
// ~11 attributes a span that was most of the Go side's time on a large
// build. traceDecoder instead copies the spans' bytes into Go memory once
// (a copy for every ~8 KB of spans), takes their strings as substrings of
// that copy and sizes every slice before filling it, through pdata's
// public API.
//
// It knows exactly the OTLP trace fields pdata knows, in their canonical
// form. On anything else (an unknown field or wire type, a singular
// message or oneof written twice, a duplicate attribute key, which pdata
// keeps and a pcommon.Map cannot, malformed bytes) it gives up and the
// whole input goes through pdata's unmarshaler, so the result is always
// pdata's (decode_traces_test.go compares both on real and fuzzed input).
//
// raw is only read: nothing decoded points into it (see decodeOutput).
func unmarshalTraces(raw []byte) (ptrace.Traces, error) {
	d := traceDecoder{raw: raw}
	td := ptrace.NewTraces()
	if d.request(td) {
		return td, nil
	}
	traceDecodeFallbacks.Add(1)
	return (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
}

var traceDecodeFallbacks atomic.Uint64

// TraceDecodeFallbacks is how many trace inputs traceDecoder left to
// pdata's unmarshaler since the process started: zero for everything the
// core writes today, so a rise means the core writes something new.
func TraceDecodeFallbacks() uint64 { return traceDecodeFallbacks.Load() }

// Protobuf wire types (the group types are never valid here).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// ownedSpan is how many bytes of spans one copy takes at most (unless a
// single span is larger).
const ownedSpan = 8 << 10

// maxValueDepth bounds nested array and key-value-list values; deeper
// ones are left to pdata, whose own limit (100) is far above it.
const maxValueDepth = 16

// field is one field of a message: a varint or fixed value in val, or a
// length-delimited body raw[start:end].
type field struct {
	num        uint32 // 0 (never a field) for numbers past 32 bits
	wire       uint8
	val        uint64
	start, end int
}

// traceDecoder reads one trace request; every method reports false when
// the input is anything but what it knows, and the caller gives up.
type traceDecoder struct {
	raw []byte // the request, read only: nothing decoded points into it
	// owned is the span being decoded, copied into Go memory once: its
	// name, keys and string values are substrings of it (owned[i] is
	// raw[ownedAt+i]). A copy covers the spans that follow as well, up
	// to ownedSpan bytes: a value a consumer keeps keeps those bytes
	// alive, not the request's, and small copies stay cheap where one
	// large one faults fresh pages in. Outside a span (resource, scope)
	// each string is copied on its own: there are few.
	owned   string
	ownedAt int
	inSpan  bool
	// spansEnd is where the spans of the scope being decoded end: a copy
	// for one span runs on over the next ones up to ownedSpan bytes.
	spansEnd int
}

// varint reads a varint at pos. next reads one-byte tags and lengths,
// most of them, itself: a call here is not inlined.
func (d *traceDecoder) varint(pos, end int) (uint64, int, bool) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if pos >= end {
			return 0, 0, false
		}
		b := d.raw[pos]
		pos++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, pos, true
		}
	}
	return 0, 0, false
}

func (d *traceDecoder) fixed(pos, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(d.raw[pos+i])
	}
	return v
}

// next reads the field at pos, which ends before end.
func (d *traceDecoder) next(pos, end int) (f field, after int, ok bool) {
	if pos >= end {
		return f, 0, false
	}
	tag := uint64(d.raw[pos])
	if pos++; tag >= 0x80 {
		if tag, pos, ok = d.varint(pos-1, end); !ok {
			return f, 0, false
		}
	}
	if tag>>3 <= math.MaxUint32 {
		f.num = uint32(tag >> 3)
	}
	f.wire = uint8(tag & 7)
	switch f.wire {
	case wireVarint:
		f.val, pos, ok = d.varint(pos, end)
		return f, pos, ok
	case wireFixed64:
		if end-pos < 8 {
			return f, 0, false
		}
		f.val = d.fixed(pos, 8)
		return f, pos + 8, true
	case wireFixed32:
		if end-pos < 4 {
			return f, 0, false
		}
		f.val = d.fixed(pos, 4)
		return f, pos + 4, true
	case wireBytes:
		if pos >= end {
			return f, 0, false
		}
		n := uint64(d.raw[pos])
		if pos++; n >= 0x80 {
			if n, pos, ok = d.varint(pos-1, end); !ok {
				return f, 0, false
			}
		}
		if n > uint64(end-pos) {
			return f, 0, false
		}
		f.start, f.end = pos, pos+int(n)
		return f, f.end, true
	}
	return f, 0, false
}

// counts is how many length-delimited fields of each number up to 16
// the message raw[start:end] holds: the sizes of its repeated fields.
func (d *traceDecoder) counts(start, end int) (n [17]int, ok bool) {
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok {
			return n, false
		}
		if f.wire == wireBytes && int(f.num) < len(n) {
			n[f.num]++
		}
	}
	return n, true
}

func (d *traceDecoder) text(f field) string {
	if d.inSpan {
		return d.owned[f.start-d.ownedAt : f.end-d.ownedAt]
	}
	return string(d.raw[f.start:f.end])
}

// id reads a trace or span id: empty is the zero id, any length but n
// is an error in pdata.
func (d *traceDecoder) id(f field, id []byte) bool {
	if f.wire != wireBytes || (f.end > f.start && f.end-f.start != len(id)) {
		return false
	}
	copy(id, d.raw[f.start:f.end])
	return true
}

// request reads an ExportTraceServiceRequest.
func (d *traceDecoder) request(td ptrace.Traces) bool {
	n, ok := d.counts(0, len(d.raw))
	if !ok {
		return false
	}
	rss := td.ResourceSpans()
	rss.EnsureCapacity(n[1])
	for pos := 0; pos < len(d.raw); {
		var f field
		if f, pos, ok = d.next(pos, len(d.raw)); !ok || f.num != 1 || f.wire != wireBytes {
			return false
		}
		if !d.resourceSpans(rss.AppendEmpty(), f.start, f.end) {
			return false
		}
	}
	return true
}

func (d *traceDecoder) resourceSpans(rs ptrace.ResourceSpans, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	sss := rs.ScopeSpans()
	sss.EnsureCapacity(n[2])
	var seenResource bool
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok || f.wire != wireBytes {
			return false
		}
		switch f.num {
		case 1:
			if seenResource {
				return false
			}
			seenResource = true
			ok = d.resource(rs.Resource(), f.start, f.end)
		case 2:
			ok = d.scopeSpans(sss.AppendEmpty(), f.start, f.end)
		case 3:
			rs.SetSchemaUrl(d.text(f))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) resource(r pcommon.Resource, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	r.Attributes().EnsureCapacity(n[1])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok {
			return false
		}
		switch {
		case f.num == 1 && f.wire == wireBytes:
			ok = d.keyValue(r.Attributes(), f.start, f.end, 0)
		case f.num == 2 && f.wire == wireVarint:
			r.SetDroppedAttributesCount(uint32(f.val))
		default: // 3, entity refs: not written by the core
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) scopeSpans(ss ptrace.ScopeSpans, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	spans := ss.Spans()
	spans.EnsureCapacity(n[2])
	d.spansEnd = end
	var seenScope bool
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok || f.wire != wireBytes {
			return false
		}
		switch f.num {
		case 1:
			if seenScope {
				return false
			}
			seenScope = true
			ok = d.scope(ss.Scope(), f.start, f.end)
		case 2:
			ok = d.span(spans.AppendEmpty(), f.start, f.end)
		case 3:
			ss.SetSchemaUrl(d.text(f))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) scope(sc pcommon.InstrumentationScope, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	sc.Attributes().EnsureCapacity(n[3])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok {
			return false
		}
		switch {
		case f.num == 1 && f.wire == wireBytes:
			sc.SetName(d.text(f))
		case f.num == 2 && f.wire == wireBytes:
			sc.SetVersion(d.text(f))
		case f.num == 3 && f.wire == wireBytes:
			ok = d.keyValue(sc.Attributes(), f.start, f.end, 0)
		case f.num == 4 && f.wire == wireVarint:
			sc.SetDroppedAttributesCount(uint32(f.val))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) span(sp ptrace.Span, start, end int) bool {
	if start < d.ownedAt || end > d.ownedAt+len(d.owned) {
		copyEnd := max(end, min(start+ownedSpan, d.spansEnd))
		d.owned, d.ownedAt = string(d.raw[start:copyEnd]), start
	}
	d.inSpan = true
	ok := d.spanFields(sp, start, end)
	d.inSpan = false
	return ok
}

// run is how many fields of number num follow one another from pos: the
// size of a repeated field, which the core writes in one run.
func (d *traceDecoder) run(pos, end int, num uint32) int {
	n := 0
	for pos < end {
		f, after, ok := d.next(pos, end)
		if !ok || f.num != num {
			break
		}
		n, pos = n+1, after
	}
	return n
}

func (d *traceDecoder) spanFields(sp ptrace.Span, start, end int) bool {
	attributes := sp.Attributes()
	// Each repeated field is sized at its first element.
	var sizedAttributes, sizedEvents, sizedLinks bool
	var seenStatus bool
	for pos := start; pos < end; {
		f, after, ok := d.next(pos, end)
		if !ok {
			return false
		}
		pos = after
		switch {
		case f.num == 1:
			var id pcommon.TraceID
			ok = d.id(f, id[:])
			sp.SetTraceID(id)
		case f.num == 2:
			var id pcommon.SpanID
			ok = d.id(f, id[:])
			sp.SetSpanID(id)
		case f.num == 3 && f.wire == wireBytes:
			sp.TraceState().FromRaw(d.text(f))
		case f.num == 4:
			var id pcommon.SpanID
			ok = d.id(f, id[:])
			sp.SetParentSpanID(id)
		case f.num == 5 && f.wire == wireBytes:
			sp.SetName(d.text(f))
		case f.num == 6 && f.wire == wireVarint:
			sp.SetKind(ptrace.SpanKind(f.val))
		case f.num == 7 && f.wire == wireFixed64:
			sp.SetStartTimestamp(pcommon.Timestamp(f.val))
		case f.num == 8 && f.wire == wireFixed64:
			sp.SetEndTimestamp(pcommon.Timestamp(f.val))
		case f.num == 9 && f.wire == wireBytes:
			if !sizedAttributes {
				attributes.EnsureCapacity(1 + d.run(pos, end, 9))
				sizedAttributes = true
			}
			ok = d.keyValue(attributes, f.start, f.end, 0)
		case f.num == 10 && f.wire == wireVarint:
			sp.SetDroppedAttributesCount(uint32(f.val))
		case f.num == 11 && f.wire == wireBytes:
			if !sizedEvents {
				sp.Events().EnsureCapacity(1 + d.run(pos, end, 11))
				sizedEvents = true
			}
			ok = d.event(sp.Events().AppendEmpty(), f.start, f.end)
		case f.num == 12 && f.wire == wireVarint:
			sp.SetDroppedEventsCount(uint32(f.val))
		case f.num == 13 && f.wire == wireBytes:
			if !sizedLinks {
				sp.Links().EnsureCapacity(1 + d.run(pos, end, 13))
				sizedLinks = true
			}
			ok = d.link(sp.Links().AppendEmpty(), f.start, f.end)
		case f.num == 14 && f.wire == wireVarint:
			sp.SetDroppedLinksCount(uint32(f.val))
		case f.num == 15 && f.wire == wireBytes && !seenStatus:
			seenStatus = true
			ok = d.status(sp.Status(), f.start, f.end)
		case f.num == 16 && f.wire == wireFixed32:
			sp.SetFlags(uint32(f.val))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) status(st ptrace.Status, start, end int) bool {
	for pos := start; pos < end; {
		f, after, ok := d.next(pos, end)
		if !ok {
			return false
		}
		pos = after
		switch {
		case f.num == 2 && f.wire == wireBytes:
			st.SetMessage(d.text(f))
		case f.num == 3 && f.wire == wireVarint:
			st.SetCode(ptrace.StatusCode(f.val))
		default:
			return false
		}
	}
	return true
}

func (d *traceDecoder) event(ev ptrace.SpanEvent, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	ev.Attributes().EnsureCapacity(n[3])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok {
			return false
		}
		switch {
		case f.num == 1 && f.wire == wireFixed64:
			ev.SetTimestamp(pcommon.Timestamp(f.val))
		case f.num == 2 && f.wire == wireBytes:
			ev.SetName(d.text(f))
		case f.num == 3 && f.wire == wireBytes:
			ok = d.keyValue(ev.Attributes(), f.start, f.end, 0)
		case f.num == 4 && f.wire == wireVarint:
			ev.SetDroppedAttributesCount(uint32(f.val))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *traceDecoder) link(l ptrace.SpanLink, start, end int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	l.Attributes().EnsureCapacity(n[4])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok {
			return false
		}
		switch {
		case f.num == 1:
			var id pcommon.TraceID
			ok = d.id(f, id[:])
			l.SetTraceID(id)
		case f.num == 2:
			var id pcommon.SpanID
			ok = d.id(f, id[:])
			l.SetSpanID(id)
		case f.num == 3 && f.wire == wireBytes:
			l.TraceState().FromRaw(d.text(f))
		case f.num == 4 && f.wire == wireBytes:
			ok = d.keyValue(l.Attributes(), f.start, f.end, 0)
		case f.num == 5 && f.wire == wireVarint:
			l.SetDroppedAttributesCount(uint32(f.val))
		case f.num == 6 && f.wire == wireFixed32:
			l.SetFlags(uint32(f.val))
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// keyValue adds one KeyValue to m. pdata appends every KeyValue it reads,
// a Map replaces the value of a key it has: a key seen before gives up.
func (d *traceDecoder) keyValue(m pcommon.Map, start, end, depth int) bool {
	// The core's form, key then value, each shorter than 128 bytes, read
	// without the general loop: a build has ~11 of these a span.
	if kv := d.raw[start:end]; len(kv) >= 4 && kv[0] == 1<<3|wireBytes && kv[1] < 0x80 {
		k := 2 + int(kv[1]) // the value's tag
		if k+2 <= len(kv) && kv[k] == 2<<3|wireBytes && kv[k+1] < 0x80 && k+2+int(kv[k+1]) == len(kv) {
			return d.putValue(m, d.text(field{start: start + 2, end: start + k}), start+k+2, end, depth)
		}
	}
	var key string
	value := field{start: -1, end: -1} // none
	for pos := start; pos < end; {
		f, after, ok := d.next(pos, end)
		if !ok || f.wire != wireBytes {
			return false
		}
		pos = after
		switch f.num {
		case 1:
			key = d.text(f)
		case 2:
			if value.start >= 0 {
				return false // pdata merges the two; never written so
			}
			value = f
		default: // 3, key_strindex: profiles only
			return false
		}
	}
	return d.putValue(m, key, value.start, value.end, depth)
}

// putValue puts key with the AnyValue raw[start:end] into m (start == end:
// no value, or an empty one) and reports whether key was new.
func (d *traceDecoder) putValue(m pcommon.Map, key string, start, end, depth int) bool {
	before := m.Len()
	if start == end {
		m.PutEmpty(key)
		return m.Len() == before+1
	}
	// The scalar kinds, nearly every attribute, straight into the map.
	f, after, ok := d.next(start, end)
	if !ok || after != end {
		return false // a second oneof field: the last wins in pdata
	}
	switch {
	case f.num == 1 && f.wire == wireBytes:
		m.PutStr(key, d.text(f))
	case f.num == 2 && f.wire == wireVarint:
		m.PutBool(key, f.val != 0)
	case f.num == 3 && f.wire == wireVarint:
		m.PutInt(key, int64(f.val))
	case f.num == 4 && f.wire == wireFixed64:
		m.PutDouble(key, math.Float64frombits(f.val))
	default:
		v := m.PutEmpty(key)
		if m.Len() != before+1 {
			return false
		}
		return d.value(v, start, end, depth)
	}
	return m.Len() == before+1
}

// value sets v to the AnyValue raw[start:end]: one oneof field, or none
// (an empty value).
func (d *traceDecoder) value(v pcommon.Value, start, end, depth int) bool {
	if start == end {
		return true
	}
	f, after, ok := d.next(start, end)
	if !ok || after != end {
		return false // a second oneof field: the last wins in pdata
	}
	switch {
	case f.num == 1 && f.wire == wireBytes:
		v.SetStr(d.text(f))
	case f.num == 2 && f.wire == wireVarint:
		v.SetBool(f.val != 0)
	case f.num == 3 && f.wire == wireVarint:
		v.SetInt(int64(f.val))
	case f.num == 4 && f.wire == wireFixed64:
		v.SetDouble(math.Float64frombits(f.val))
	case f.num == 5 && f.wire == wireBytes && depth < maxValueDepth:
		return d.array(v.SetEmptySlice(), f.start, f.end, depth+1)
	case f.num == 6 && f.wire == wireBytes && depth < maxValueDepth:
		return d.keyValueList(v.SetEmptyMap(), f.start, f.end, depth+1)
	case f.num == 7 && f.wire == wireBytes:
		b := v.SetEmptyBytes()
		if f.end > f.start {
			b.FromRaw(bytes.Clone(d.raw[f.start:f.end]))
		}
	default: // 8, string_value_strindex: profiles only
		return false
	}
	return true
}

func (d *traceDecoder) array(sl pcommon.Slice, start, end, depth int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	sl.EnsureCapacity(n[1])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok || f.num != 1 || f.wire != wireBytes {
			return false
		}
		if !d.value(sl.AppendEmpty(), f.start, f.end, depth) {
			return false
		}
	}
	return true
}

func (d *traceDecoder) keyValueList(m pcommon.Map, start, end, depth int) bool {
	n, ok := d.counts(start, end)
	if !ok {
		return false
	}
	m.EnsureCapacity(n[1])
	for pos := start; pos < end; {
		var f field
		if f, pos, ok = d.next(pos, end); !ok || f.num != 1 || f.wire != wireBytes {
			return false
		}
		if !d.keyValue(m, f.start, f.end, depth) {
			return false
		}
	}
	return true
}
