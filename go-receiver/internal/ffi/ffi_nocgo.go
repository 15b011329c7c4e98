//go:build !cgo

package ffi

import "context"

// ABIVersion reports 0: there is no core without cgo.
func ABIVersion() uint32 { return 0 }

// CheckABI always fails without cgo.
func CheckABI() error { return ErrCgoRequired }

// Process always fails without cgo.
func Process(context.Context, Request) (Result, error) { return Result{}, ErrCgoRequired }

// ScanCAS always fails without cgo.
func ScanCAS(context.Context, CASRequest) (CASResult, error) { return CASResult{}, ErrCgoRequired }
