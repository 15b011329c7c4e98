#!/usr/bin/env bash
# Builds the otelcol-compiletools image without a daemon or an image
# registry (CI here, air-gapped hosts), with buildah from Debian's packages:
#
#   deploy/container/build-image.sh [TAG [DOCKERFILE FILE...]]   # as root
#
# TAG defaults to localhost/otelcol-compiletools:latest, DOCKERFILE to this
# directory's, FILE... (paths from the repository root, the first one the
# binary) to what that Dockerfile's `prebuilt` target copies. The gateway's
# image (deploy/gateway/Dockerfile, `make image-gateway`) is built the same
# way on the same base.
#
# 1. A minimal Debian root (make-rootfs.sh: debootstrap from the apt source
#    this machine already uses, trimmed like debian:*-slim), cached as a
#    tarball under _build/image/.
# 2. That root committed as a base image (`buildah from scratch` + add).
# 3. The `prebuilt` target of the Dockerfile on that base, with the binary
#    `make collector` (or `make gateway`) built: the same runtime stage that users
#    with a registry build with `docker build`.
# vfs storage and chroot isolation need neither overlay mounts nor user
# namespaces, so this works inside an unprivileged container too.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tag="${1:-localhost/otelcol-compiletools:latest}"
dockerfile="${2:-$here/Dockerfile}"
if (( $# > 2 )); then
  files=("${@:3}")
else
  files=(_build/otelcol-compiletools/otelcol-compiletools deploy/packages/config.yaml)
fi
suite="${DEBIAN_SUITE:-bookworm}"
cache="$repo/_build/image"
binary="$repo/${files[0]}"
buildah=(buildah --storage-driver vfs)

[[ -x "$binary" ]] || { echo "build-image: $binary missing; build it first (make collector / make gateway)" >&2; exit 1; }
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool missing (tests/install-deps.sh deploy installs it)" >&2; exit 1; }
done
mkdir -p "$cache"

# ---- 1. Debian root, cached ------------------------------------------------
# Rebuilt when the suite or its recipe (make-rootfs.sh) changes; a new Debian
# point release is picked up by deleting the tarball.
base_tar="$cache/debian-$suite-minbase.tar"
recipe="$suite $(sha256sum "$here/make-rootfs.sh" | cut -d' ' -f1)"
if [[ ! -f "$base_tar" || "$(cat "$base_tar.recipe" 2>/dev/null)" != "$recipe" ]]; then
  rm -f "$base_tar.recipe"
  "$here/make-rootfs.sh" "$base_tar" "$suite"
  echo "$recipe" >"$base_tar.recipe"
fi

# ---- 2. base image -----------------------------------------------------------
base_image="localhost/otelcol-compiletools-base:$suite"
base_sum="$(sha256sum "$base_tar" | cut -d' ' -f1)"
have="$("${buildah[@]}" inspect --type image --format '{{index .ImageAnnotations "org.compiletools-otel.rootfs-sha256"}}' \
         "$base_image" 2>/dev/null || true)"
old_base=""
if [[ "$have" != "$base_sum" ]]; then
  echo "build-image: committing $base_image"
  old_base="$("${buildah[@]}" inspect --type image --format '{{.FromImageID}}' "$base_image" 2>/dev/null || true)"
  ctr="$("${buildah[@]}" from scratch)"
  "${buildah[@]}" add "$ctr" "$base_tar" / >/dev/null
  "${buildah[@]}" config --annotation "org.compiletools-otel.rootfs-sha256=$base_sum" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  "${buildah[@]}" commit --rm --quiet "$ctr" "$base_image" >/dev/null
fi

# ---- 3. the Dockerfile's prebuilt target -------------------------------------
# A context with just what that target copies, at the paths the Dockerfile
# names (the repository root would send gigabytes of build outputs).
ctx="$cache/context.$$"
rm -rf "$ctx"
for file in "${files[@]}"; do
  mkdir -p "$ctx/$(dirname "$file")"
  cp "$repo/$file" "$ctx/$file"
done
previous="$("${buildah[@]}" inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null || true)"
"${buildah[@]}" bud --isolation chroot --pull=false --layers=false \
  --target prebuilt --build-arg "RUNTIME_BASE=$base_image" \
  -f "$dockerfile" -t "$tag" "$ctx"
rm -rf "$ctx"
# vfs keeps every layer as a full copy: drop the images this run replaced
# (the old image first, it may still use the old base).
current="$("${buildah[@]}" inspect --type image --format '{{.FromImageID}}' "$tag")"
for replaced in "$previous" "$old_base"; do
  if [[ -n "$replaced" && "$replaced" != "$current" ]]; then
    "${buildah[@]}" rmi "$replaced" >/dev/null 2>&1 || true
  fi
done
echo "build-image: $tag"
