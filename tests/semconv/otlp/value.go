package otlp

import (
	"encoding/json"
	"strconv"
	"strings"
)

type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is OTLP's attribute value; OTLP/JSON writes an int64 as a
// string (or, from some encoders, a number), so IntValue stays raw.
type AnyValue struct {
	StringValue *string         `json:"stringValue"`
	BoolValue   *bool           `json:"boolValue"`
	IntValue    json.RawMessage `json:"intValue"`
	DoubleValue json.RawMessage `json:"doubleValue"`
	BytesValue  *string         `json:"bytesValue"`
	ArrayValue  *struct {
		Values []AnyValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []KeyValue `json:"values"`
	} `json:"kvlistValue"`
}

// Kind names the value's type as the registry's types are named: string,
// int, double, boolean, bytes, map, empty, or T[] for an array whose
// elements are all T ("[]" when empty, "mixed[]" otherwise).
func (v AnyValue) Kind() string {
	switch {
	case v.StringValue != nil:
		return "string"
	case v.BoolValue != nil:
		return "boolean"
	case v.IntValue != nil:
		return "int"
	case v.DoubleValue != nil:
		return "double"
	case v.BytesValue != nil:
		return "bytes"
	case v.KvlistValue != nil:
		return "map"
	case v.ArrayValue != nil:
		return arrayKind(v.ArrayValue.Values)
	}
	return "empty"
}

func arrayKind(values []AnyValue) string {
	if len(values) == 0 {
		return "[]"
	}
	first := values[0].Kind()
	for _, e := range values[1:] {
		if e.Kind() != first {
			return "mixed[]"
		}
	}
	return first + "[]"
}

// Text is the value as the registry writes an enum member: a string as
// is, an int in decimal; "" for other kinds.
func (v AnyValue) Text() string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		raw := strings.Trim(string(v.IntValue), `"`)
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
		return raw
	}
	return ""
}

// RawEnum is an enum field: OTLP/JSON writes an integer, the protobuf
// JSON mapping the member's name.
type RawEnum = json.RawMessage

// spanKinds are SpanKind's members, by number (trace.proto).
var spanKinds = []string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}

// KindName is the span's kind without the SPAN_KIND_ prefix (INTERNAL,
// SERVER, …); UNSPECIFIED when absent.
func (s Span) KindName() string {
	raw := strings.TrimPrefix(strings.Trim(string(s.Kind), `"`), "SPAN_KIND_")
	if raw == "" {
		return spanKinds[0]
	}
	if n, err := strconv.Atoi(raw); err == nil {
		if n >= 0 && n < len(spanKinds) {
			return spanKinds[n]
		}
		return raw
	}
	return raw
}

// Status is a span's status; OTLP/JSON writes the code as an integer, the
// protobuf JSON mapping as the enum's name, and an unset code not at all.
type Status struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// CodeName is UNSET, OK or ERROR (or the raw text if it is none of them).
func (s Status) CodeName() string {
	raw := strings.Trim(string(s.Code), `"`)
	switch raw {
	case "", "0", "STATUS_CODE_UNSET":
		return "UNSET"
	case "1", "STATUS_CODE_OK":
		return "OK"
	case "2", "STATUS_CODE_ERROR":
		return "ERROR"
	}
	return raw
}
