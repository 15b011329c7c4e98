//go:build !cgo

package ffi

import "context"

// LibraryHeaderSHA256 reports "": there is no core without cgo.
func LibraryHeaderSHA256() string { return "" }

// CheckABI always fails without cgo.
func CheckABI() error { return ErrCgoRequired }

// Process always fails without cgo.
func Process(context.Context, Request) (Result, error) { return Result{}, ErrCgoRequired }

// casKinds is empty without cgo: no store can be scanned, so a
// configuration naming one is refused (Start would fail anyway).
var casKinds []casKindName

// CASCache is unavailable without cgo.
type CASCache struct{}

// NewCASCache always fails without cgo.
func NewCASCache() (*CASCache, error) { return nil, ErrCgoRequired }

// Close does nothing.
func (c *CASCache) Close() {}

// Retain does nothing.
func (c *CASCache) Retain([]string) int { return 0 }

// Footprint is always zero without cgo.
func (c *CASCache) Footprint() CASCacheFootprint { return CASCacheFootprint{} }

// ScanCAS always fails without cgo.
func ScanCAS(context.Context, CASRequest, *CASCache) (CASResult, error) {
	return CASResult{}, ErrCgoRequired
}
