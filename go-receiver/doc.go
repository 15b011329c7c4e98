// Package compiletoolsreceiver is an OpenTelemetry Collector receiver that
// turns what the C/C++ build tool compiletools (ct-cake) leaves on disk into
// OTLP traces and metrics, without changing any build.
//
// Layout: config.go (configuration), factory.go (component factory and the
// one shared instance per receiver ID), receiver.go (life cycle), poll.go
// (one discovery pass: what starts now), ledger.go (one build's state from
// discovery to checkpoint), build.go (one build through the core to the
// consumers), chunks.go (a trace cut into bounded requests), consume.go
// (core output to the consumers, a trace request by request), cas.go (store
// scans); internal/discovery finds finished builds, internal/ffi is the cgo
// binding to the Rust core.
package compiletoolsreceiver
