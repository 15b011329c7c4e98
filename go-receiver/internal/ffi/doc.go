// Package ffi is the cgo binding to the Rust core (rust/, linked as a static
// library). It is the only package that touches C: one call per build, Rust
// result buffers decoded into pdata (which copies) and freed at once.
//
// The static library must be in lib/<goos>_<goarch>/ before `go build`; the
// repository Makefile puts it there (`make rust`).
package ffi
