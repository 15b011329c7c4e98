//go:build cgo && linux && arm64

package ffi

// #cgo LDFLAGS: -L${SRCDIR}/lib/linux_arm64 -lcompiletools_core -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
import "C"
