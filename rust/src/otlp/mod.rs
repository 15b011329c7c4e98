//! Mapping of the build model to OTLP protobuf messages.
