//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"crypto/sha256"
	_ "embed" // the header, hashed for the ABI check
	"encoding/hex"
	"fmt"
)

// header is the C header this package is compiled against (the #include
// above reads the same file), embedded so its hash can be compared with
// the one the library was generated with.
//
//go:embed compiletools_core.h
var header []byte

// LibraryHeaderSHA256 is the SHA-256 (hex) of the header the linked
// library was generated with.
func LibraryHeaderSHA256() string { return C.GoString(C.ct_header_sha256()) }

// CheckABI fails unless the linked library was generated with exactly the
// header this package was compiled with. Any difference — a stale .a next
// to a changed header, or the reverse — may mean struct layouts that no
// longer agree, and calling through them would corrupt memory silently.
func CheckABI() error { return checkHeader(header) }

// checkHeader compares the library's header hash with that of h.
func checkHeader(h []byte) error {
	sum := sha256.Sum256(h)
	ours, lib := hex.EncodeToString(sum[:]), LibraryHeaderSHA256()
	if ours != lib {
		return fmt.Errorf("compiletools core: the linked library was generated from a different C header "+
			"(library: sha256 %s, compiletools_core.h: sha256 %s): rebuild the Rust library (make rust), "+
			"or run `make header` if the FFI changed", lib, ours)
	}
	return nil
}
