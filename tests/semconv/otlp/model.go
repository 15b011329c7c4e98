// Package otlp reads OTLP/JSON as the collector's file exporter writes it:
// one {"resourceSpans"|"resourceMetrics"|"resourceLogs": […]} object per
// line. It models only what the conformance checks look at.
package otlp

// Batch is one line of the file.
type Batch struct {
	ResourceSpans   []ResourceSpans   `json:"resourceSpans"`
	ResourceMetrics []ResourceMetrics `json:"resourceMetrics"`
	ResourceLogs    []ResourceLogs    `json:"resourceLogs"`
}

type Resource struct {
	Attributes []KeyValue `json:"attributes"`
}

type ResourceSpans struct {
	Resource   Resource `json:"resource"`
	ScopeSpans []struct {
		Spans []Span `json:"spans"`
	} `json:"scopeSpans"`
}

type Span struct {
	SpanID       string     `json:"spanId"`
	ParentSpanID string     `json:"parentSpanId"`
	Name         string     `json:"name"`
	Kind         RawEnum    `json:"kind"`
	Attributes   []KeyValue `json:"attributes"`
	Events       []struct {
		Name       string     `json:"name"`
		Attributes []KeyValue `json:"attributes"`
	} `json:"events"`
	Links []struct {
		Attributes []KeyValue `json:"attributes"`
	} `json:"links"`
	Status Status `json:"status"`
}

type ResourceMetrics struct {
	Resource     Resource `json:"resource"`
	ScopeMetrics []struct {
		Metrics []Metric `json:"metrics"`
	} `json:"scopeMetrics"`
}

type Metric struct {
	Name                 string        `json:"name"`
	Unit                 string        `json:"unit"`
	Sum                  *Sum          `json:"sum"`
	Gauge                *PointsHolder `json:"gauge"`
	Histogram            *PointsHolder `json:"histogram"`
	ExponentialHistogram *PointsHolder `json:"exponentialHistogram"`
	Summary              *PointsHolder `json:"summary"`
}

// PointsHolder is any metric data kind: the checks need only the points'
// attributes.
type PointsHolder struct {
	DataPoints []DataPoint `json:"dataPoints"`
}

type Sum struct {
	PointsHolder
	IsMonotonic bool `json:"isMonotonic"`
}

type DataPoint struct {
	Attributes []KeyValue `json:"attributes"`
}

type ResourceLogs struct {
	Resource  Resource `json:"resource"`
	ScopeLogs []struct {
		LogRecords []LogRecord `json:"logRecords"`
	} `json:"scopeLogs"`
}

type LogRecord struct {
	EventName  string     `json:"eventName"`
	Attributes []KeyValue `json:"attributes"`
}

// Instrument is the API instrument kind that the metric's data implies:
// a monotonic Sum is a Counter, a non-monotonic one an UpDownCounter.
func (m Metric) Instrument() string {
	switch {
	case m.Sum != nil && m.Sum.IsMonotonic:
		return "Counter"
	case m.Sum != nil:
		return "UpDownCounter"
	case m.Histogram != nil, m.ExponentialHistogram != nil:
		return "Histogram"
	case m.Gauge != nil:
		return "Gauge"
	case m.Summary != nil:
		return "Summary"
	}
	return "none"
}

// Points are the metric's data points, whatever its data kind.
func (m Metric) Points() []DataPoint {
	for _, h := range []*PointsHolder{m.Gauge, m.Histogram, m.ExponentialHistogram, m.Summary} {
		if h != nil {
			return h.DataPoints
		}
	}
	if m.Sum != nil {
		return m.Sum.DataPoints
	}
	return nil
}
