#!/bin/sh
# Before unpacking (deb: preinst install|upgrade; rpm: %pre 1|2):
# the system user and group the service runs as. The state directory is
# its home; it has no shell and no password.
set -e
user=otelcol-compiletools
if ! getent group "$user" >/dev/null; then
  groupadd --system "$user"
fi
if ! getent passwd "$user" >/dev/null; then
  useradd --system --gid "$user" --home-dir /var/lib/otelcol-compiletools \
    --no-create-home --shell /usr/sbin/nologin \
    --comment "otelcol-compiletools agent" "$user"
fi
