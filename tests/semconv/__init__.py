"""The receiver's OTLP, from the real collector, against the OpenTelemetry
semantic-conventions registry (the Go checker of this folder)."""
