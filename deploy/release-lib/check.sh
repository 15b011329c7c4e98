#!/usr/bin/env bash
# Fails unless the committed prebuilt libraries are exactly what the Rust
# source builds: rebuilds them with deploy/release-lib/build.sh and compares
# with the git index (in a clean CI clone: the commit). Staging a rebuilt
# library (git add) is enough to pass before committing it.
#
#   deploy/release-lib/check.sh GOARCH...
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
lib_rel=go-receiver/internal/ffi/lib
cd "$repo"

# The bytes depend on the compiler: a check with another rustc cannot tell
# a stale library from a different toolchain, so it says which it is.
recorded=$(git show ":$lib_rel/TOOLCHAIN" 2>/dev/null | sed -n 's/^rustc //p' || true)
current=$(rustc -V | sed 's/^rustc //')
if [ -z "$recorded" ]; then
  echo "check-release-lib: $lib_rel/TOOLCHAIN is not committed; run \`make release-lib\` and commit $lib_rel" >&2
  exit 1
fi
if [ "$recorded" != "$current" ]; then
  echo "check-release-lib: the committed libraries were built by rustc $recorded, this is rustc $current;" \
    "the same bytes need the same compiler (rustup toolchain install ${recorded%% *})." >&2
  exit 1
fi

deploy/release-lib/build.sh "$@"

status=0
for arch in "$@"; do
  lib="$lib_rel/linux_$arch/libcompiletools_core.a"
  if ! git ls-files --error-unmatch "$lib" >/dev/null 2>&1; then
    echo "check-release-lib: $lib is not committed" >&2
    status=1
  elif ! git diff --quiet -- "$lib"; then
    echo "check-release-lib: $lib differs from the committed one:" \
      "committed sha256 $(git show ":$lib" | sha256sum | cut -d' ' -f1)," \
      "built $(sha256sum "$lib" | cut -d' ' -f1)" >&2
    status=1
  fi
done
for arch in "$@"; do
  digest=go-receiver/internal/ffi/libdigest_linux_$arch.go
  if ! git ls-files --error-unmatch "$digest" >/dev/null 2>&1 || ! git diff --quiet -- "$digest"; then
    echo "check-release-lib: $digest does not name the built library" >&2
    status=1
  fi
done
if ! git diff --quiet -- "$lib_rel/TOOLCHAIN"; then
  echo "check-release-lib: $lib_rel/TOOLCHAIN differs from the committed one" >&2
  status=1
fi
if [ $status -ne 0 ]; then
  echo "check-release-lib: the Rust source changed without its prebuilt library;" \
    "run \`make release-lib\` and commit $lib_rel and go-receiver/internal/ffi/libdigest_*.go" >&2
  exit 1
fi
echo "check-release-lib: $lib_rel matches the Rust source ($*)"
