// Package compiletoolsreceiver is an OpenTelemetry Collector receiver that
// turns what the C/C++ build tool compiletools (ct-cake) leaves on disk into
// OTLP traces and metrics, without changing any build.
//
// Layout: config.go (configuration), factory.go (component factory and the
// one shared instance per receiver ID), receiver.go (life cycle and polling),
// build.go (one build through the core to the consumers); internal/discovery
// finds finished builds, internal/ffi is the cgo binding to the Rust core.
package compiletoolsreceiver
