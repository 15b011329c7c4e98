//go:build cgo

package ffi

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestLibraryWasBuiltFromTheCommittedHeader(t *testing.T) {
	if err := CheckABI(); err != nil {
		t.Fatal(err)
	}
}

// A library built from a header that differs from ours in a single byte
// (a field added, a constant renumbered, even a comment) is refused: only
// an exact match proves the struct layouts cgo compiled against are the
// library's.
func TestHeaderDifferingInOneByteIsRefused(t *testing.T) {
	header, err := os.ReadFile("compiletools_core.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkHeader(header); err != nil {
		t.Fatalf("the committed header is refused: %v", err)
	}
	for _, at := range []int{0, len(header) / 2, len(header) - 1} {
		changed := bytes.Clone(header)
		changed[at] ^= 0x01
		err := checkHeader(changed)
		if err == nil {
			t.Errorf("a header differing at byte %d was accepted", at)
			continue
		}
		if !strings.Contains(err.Error(), "rebuild") {
			t.Errorf("the error does not say what to do: %v", err)
		}
	}
}
