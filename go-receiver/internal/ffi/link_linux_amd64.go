//go:build cgo && linux && amd64

package ffi

// #cgo LDFLAGS: -L${SRCDIR}/lib/linux_amd64 -lcompiletools_core -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
import "C"
