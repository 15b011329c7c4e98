package compiletoolsreceiver

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the receiver starts (poll loop, workers, cancel watchers
// around cgo calls) must be gone once Shutdown returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
