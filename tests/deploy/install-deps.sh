#!/usr/bin/env bash
# System tools of the deployment tests and of `make dist` / `make image`:
#
#   tests/deploy/install-deps.sh      # idempotent; run as root (CI is root)
#
# buildah (daemonless image builds), debootstrap (the image's Debian root),
# rpm (reading the .rpm), systemd (systemd-analyze verify of the unit),
# systemd-container (systemd-nspawn: the .deb under a booted systemd),
# binutils (objdump: the glibc versions the binary needs), passwd and
# util-linux (the package's install scripts). `apt-get update` runs only when
# something is missing. nfpm itself is a Go tool the Makefile installs.
set -euo pipefail

declare -A pkg_of=(
  [buildah]=buildah [debootstrap]=debootstrap [rpm]=rpm
  [systemd-analyze]=systemd [systemd-nspawn]=systemd-container [objdump]=binutils [useradd]=passwd [setpriv]=util-linux
)
missing=()
for cmd in "${!pkg_of[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg_of[$cmd]}")
done
if ((${#missing[@]})); then
  echo "deploy install-deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deploy install-deps: buildah, debootstrap, rpm, systemd-analyze, systemd-nspawn, objdump present"
fi
