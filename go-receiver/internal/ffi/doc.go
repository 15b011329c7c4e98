// Package ffi is the cgo binding to the Rust core (rust/, linked as a static
// library). It is the only package that touches C: one call per build, Rust
// result buffers decoded into pdata (which copies) and freed at once.
//
// The static libraries are committed in lib/<goos>_<goarch>/ (linux amd64
// and arm64), so the module builds with Go and a C compiler alone; the
// repository's `make release-lib` makes them from the Rust source, and
// `make rust` this platform's, by the same reproducible recipe.
package ffi
