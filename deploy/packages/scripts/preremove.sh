#!/bin/sh
# Before removing files (deb: prerm remove|upgrade; rpm: %preun 0|1).
# Only a removal stops and disables the service; an upgrade restarts it
# from postinstall instead.
set -e
case "$1" in
  remove|0) ;;
  *) exit 0 ;;
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl stop otelcol-compiletools.service || true
  systemctl disable otelcol-compiletools.service || true
fi
