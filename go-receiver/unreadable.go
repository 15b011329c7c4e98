package compiletoolsreceiver

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// maxRecheckInterval bounds the wait between two attempts at a build whose
// timing.json may not be read, whatever retry_on_failure allows.
const maxRecheckInterval = 5 * time.Minute

// deferUnreadable takes a build whose read failed because the collector
// may not read its timing.json (permission denied: a build host's umask, a
// directory of another user). Unlike a malformed file this can change — the
// owner fixes the permissions, an admin adds the collector's user to a
// group — and chmod leaves the file's modification time and size, which
// identify a settled build, as they were: a build settled as failed would
// never be read again. So it stays open, is tried again on the
// retry_on_failure backoff (no time budget: a fix made days later still
// delivers it), and is warned about and counted once. It reports whether it
// took the build.
func (r *compiletoolsReceiver) deferUnreadable(ctx context.Context, b discovery.Build, err error) bool {
	path := filepath.Join(b.Dir, discovery.TimingFile)
	if ffi.CodeOf(err) != ffi.CodeIO || !permissionDenied(path) {
		return false
	}
	if r.ledger.warnOnce(b.Dir, problemUnreadable) {
		r.logger.Warn("cannot read build (permission denied); it is sent once it can be read",
			zap.String("path", path), zap.Error(err))
		r.telemetry.parseFailure(ctx, ffi.CodeIO.String())
	}
	r.ledger.recheckLater(b.Dir)
	return true
}

// permissionDenied reports whether opening path for reading is refused for
// lack of permission (the core's error carries no errno to tell).
func permissionDenied(path string) bool {
	f, _, err := regularfile.Open(path)
	if err == nil {
		_ = f.Close()
		return false
	}
	return errors.Is(err, fs.ErrPermission)
}
