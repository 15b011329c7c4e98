"""OTLP decoding helpers shared by the sink, the reference loader and the tests.

Everything is decoded with the real generated OTLP classes from
`opentelemetry-proto`; nothing here parses protobuf by hand.
"""

from collections import namedtuple

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

# signal name -> (request class, response class), keyed like the URL paths.
SIGNALS = {
    "traces": (trace_service_pb2.ExportTraceServiceRequest,
               trace_service_pb2.ExportTraceServiceResponse),
    "metrics": (metrics_service_pb2.ExportMetricsServiceRequest,
                metrics_service_pb2.ExportMetricsServiceResponse),
    "logs": (logs_service_pb2.ExportLogsServiceRequest,
             logs_service_pb2.ExportLogsServiceResponse),
}

# One span with the context a test needs to judge it.
SpanRecord = namedtuple("SpanRecord", "resource scope span")


def decode(signal, body):
    """Decode one Export*ServiceRequest body (already decompressed).

    Raises google.protobuf.message.DecodeError on garbage.
    """
    request = SIGNALS[signal][0]()
    request.ParseFromString(body)
    return request


def any_value(value):
    """AnyValue -> plain Python value (arrays and kvlists recursively)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(key_values):
    """Repeated KeyValue -> dict. A repeated key keeps its last value."""
    return {kv.key: any_value(kv.value) for kv in key_values}


def span_records(request):
    """All spans of an ExportTraceServiceRequest, with resource attrs and scope name."""
    out = []
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            out.extend(SpanRecord(resource, ss.scope.name, s) for s in ss.spans)
    return out


def data_points(request):
    """All (metric name, data point) pairs of an ExportMetricsServiceRequest."""
    out = []
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                out.extend((metric.name, p) for p in getattr(metric, kind).data_points)
    return out
