//go:build !cgo

package ffi

import "context"

// LiveRecords always fails without cgo.
func LiveRecords(context.Context, LiveRequest) (LiveResult, error) {
	return LiveResult{}, ErrCgoRequired
}
