#!/bin/sh
# After unpacking (deb: postinst configure [old-version]; rpm: %post 1|2).
# Fresh install: state directory, then enable and start the service where
# systemd runs. Upgrade: restart a running service on the new binary.
set -e
user=otelcol-compiletools
state=/var/lib/otelcol-compiletools

# systemd's StateDirectory= would create it too; without systemd (a
# container, a test running the binary by hand) it must exist as well.
install -d -m 0750 -o "$user" -g "$user" "$state"
# The environment file may hold credentials (headers): root only. systemd
# reads it before switching to the service user.
chmod 0600 /etc/otelcol-compiletools/otelcol-compiletools.env

upgrade=no
case "$1" in
  configure) [ -n "$2" ] && upgrade=yes ;;   # deb: $2 = the version replaced
  2) upgrade=yes ;;                          # rpm: 2 = upgrade
esac

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  systemctl daemon-reload || true
  if [ "$upgrade" = yes ]; then
    systemctl try-restart otelcol-compiletools.service || true
  else
    systemctl enable otelcol-compiletools.service || true
    systemctl start otelcol-compiletools.service || true
  fi
fi
