package otlp

import (
	"strings"
	"testing"
)

func TestKindNamesValuesAsTheRegistryDoes(t *testing.T) {
	line := `{"resourceSpans":[{"resource":{"attributes":[` +
		`{"key":"s","value":{"stringValue":"x"}},{"key":"i","value":{"intValue":"3"}},{"key":"n","value":{"intValue":3}},` +
		`{"key":"d","value":{"doubleValue":1.5}},{"key":"b","value":{"boolValue":false}},` +
		`{"key":"as","value":{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}},` +
		`{"key":"am","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}},` +
		`{"key":"ae","value":{"arrayValue":{}}},{"key":"m","value":{"kvlistValue":{"values":[]}}},{"key":"e","value":{}}]}}]}`
	lines, err := Read(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": "string", "i": "int", "n": "int", "d": "double", "b": "boolean",
		"as": "string[]", "am": "mixed[]", "ae": "[]", "m": "map", "e": "empty"}
	for _, kv := range lines[0].Batch.ResourceSpans[0].Resource.Attributes {
		if got := kv.Value.Kind(); got != want[kv.Key] {
			t.Errorf("%s: kind %q, want %q", kv.Key, got, want[kv.Key])
		}
	}
	if got := lines[0].Batch.ResourceSpans[0].Resource.Attributes[2].Value.Text(); got != "3" {
		t.Errorf("int as number: text %q", got)
	}
}

func TestStatusCodeNames(t *testing.T) {
	for raw, want := range map[string]string{"": "UNSET", "0": "UNSET", "1": "OK", "2": "ERROR", `"STATUS_CODE_ERROR"`: "ERROR", "7": "7"} {
		if got := (Status{Code: []byte(raw)}).CodeName(); got != want {
			t.Errorf("code %s: %q, want %q", raw, got, want)
		}
	}
}

func TestInstrumentFromDataKind(t *testing.T) {
	for want, m := range map[string]Metric{
		"Counter":       {Sum: &Sum{IsMonotonic: true}},
		"UpDownCounter": {Sum: &Sum{}},
		"Histogram":     {ExponentialHistogram: &PointsHolder{}},
		"Gauge":         {Gauge: &PointsHolder{}},
	} {
		if got := m.Instrument(); got != want {
			t.Errorf("%+v: %s, want %s", m, got, want)
		}
	}
}

func TestReadSkipsBlankLinesAndNamesTheBadOne(t *testing.T) {
	lines, err := Read(strings.NewReader("{}\n\n{\"resourceLogs\":[]}\n"))
	if err != nil || len(lines) != 2 || lines[1].Number != 3 {
		t.Fatalf("lines %+v, err %v", lines, err)
	}
	if _, err := Read(strings.NewReader("{}\n{oops\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}
