#!/usr/bin/env bash
# Writes a minimal Debian root file system as a tarball, for the image's
# base (build-image.sh):
#
#   deploy/container/make-rootfs.sh OUT.tar [SUITE] [PACKAGES]   # as root
#
# SUITE defaults to bookworm, PACKAGES (comma-separated, added to minbase) to
# ca-certificates (OTLP over HTTPS); tests/deploy adds systemd for a booted
# test machine. debootstrap --variant=minbase plus PACKAGES,
# fetched from the apt source this machine already uses (debian-mirror.sh),
# then trimmed like debian:*-slim. build-image.sh caches the tarball and
# rebuilds it when this file changes.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
suite="${2:-bookworm}"
packages="${3:-ca-certificates}"
rootfs="$out.rootfs"
log="$out.debootstrap.log"

rm -rf "$rootfs"
mirror="$("$here/debian-mirror.sh" "$suite")"
echo "make-rootfs: debootstrap $suite (minbase) from the apt source $mirror"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >"$log" 2>&1 \
  || { tail -20 "$log" >&2; exit 1; }
# What debian:*-slim drops: package lists and caches, manuals, docs
# (copyright files stay), translations, logs.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
       "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
       "$rootfs"/usr/share/lintian "$rootfs"/var/log/* "$rootfs"/tmp/*
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
tar -C "$rootfs" --numeric-owner --xattrs -cf "$out.tmp" .
mv "$out.tmp" "$out"
rm -rf "$rootfs"
