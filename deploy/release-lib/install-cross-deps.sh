#!/usr/bin/env bash
# What `make test-release-lib-arm64` needs to link and run the arm64 library
# on an amd64 machine: a cross C compiler with arm64 glibc (cgo links with
# it) and qemu's user-mode emulator (runs the test binary). Debian packages;
# as root. Does nothing when they are installed.
set -euo pipefail
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null \
   && [ -d /usr/aarch64-linux-gnu/lib ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-cross-deps: needs root to apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
