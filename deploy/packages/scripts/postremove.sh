#!/bin/sh
# After removing files (deb: postrm remove|purge|upgrade|...; rpm: %postun 0|1).
# `dpkg --purge` deletes everything the package made: checkpoints and
# captures, the user and group, and /etc/otelcol-compiletools. A plain
# remove, and an rpm erase, keep them, so a reinstall resumes where the
# agent stopped (no re-sent builds).
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl daemon-reload || true
fi
[ "$1" = purge ] || exit 0
user=otelcol-compiletools
rm -rf /var/lib/otelcol-compiletools /etc/otelcol-compiletools
if getent passwd "$user" >/dev/null; then
  userdel "$user" || true
fi
if getent group "$user" >/dev/null; then
  groupdel "$user" || true
fi
