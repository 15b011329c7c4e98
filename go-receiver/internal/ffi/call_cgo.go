//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"runtime"
	"strings"
	"unsafe"
)

// callScope is what one core call holds while the core runs: a cancel
// token that ctx sets, and a pinner for the Go memory the request points to.
type callScope struct {
	token  *C.CtCancel
	pinner runtime.Pinner
}

// coreCall runs call in a fresh scope: a context already done is not
// started, and the token and pins are released once call returned (which
// must have freed the core's result by then).
func coreCall(ctx context.Context, call func(s *callScope) error) error {
	if err := ctx.Err(); err != nil {
		return &Error{Code: CodeCancelled, Message: err.Error()}
	}
	token, release, err := watchCancel(ctx)
	if err != nil {
		return err
	}
	defer release()
	s := &callScope{token: token}
	defer s.pinner.Unpin()
	return call(s)
}

// view makes a byte view of s for a request struct. The request lives in
// Go memory and cgo lets it hold Go pointers only when they are pinned.
func (s *callScope) view(str string) C.CtByteView {
	if str == "" {
		return C.CtByteView{}
	}
	b := unsafe.StringData(str)
	s.pinner.Pin(b)
	return C.CtByteView{ptr: (*C.uint8_t)(unsafe.Pointer(b)), len: C.size_t(len(str))}
}

// watchCancel makes a core cancel token that is set when ctx is done; the
// release function stops the watcher and frees the token after it exited.
func watchCancel(ctx context.Context) (*C.CtCancel, func(), error) {
	token := C.ct_cancel_new()
	if token == nil {
		return nil, nil, &Error{Code: CodePanic, Message: "ct_cancel_new failed"}
	}
	stop := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
			C.ct_cancel_set(token)
		case <-stop:
		}
	}()
	return token, func() {
		close(stop)
		<-exited
		C.ct_cancel_free(token)
	}, nil
}

// bufferBytes views a Rust-owned buffer without copying; valid until freed.
func bufferBytes(b C.CtBuffer) []byte {
	if b.ptr == nil || b.len == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(b.ptr)), int(b.len))
}

// encodePairs encodes attributes as the core expects: key\0value\0…
func encodePairs(attrs []Attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, a := range attrs {
		sb.WriteString(a.Key)
		sb.WriteByte(0)
		sb.WriteString(a.Value)
		sb.WriteByte(0)
	}
	return sb.String()
}
