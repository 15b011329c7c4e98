#!/usr/bin/env bash
# The Rust core as the prebuilt static libraries the Go module ships
# (go-receiver/internal/ffi/lib/<goos>_<goarch>/libcompiletools_core.a), so
# that a distribution importing the receiver by `gomod:` needs no Rust.
#
#   deploy/release-lib/build.sh [GOARCH...]     (default: amd64 arm64)
#
# The same source and toolchain give the same bytes, wherever the checkout
# and the cargo home are:
#   - paths: --remap-path-prefix maps the workspace and CARGO_HOME to fixed
#     names (panic locations and debug info name source files); the
#     standard library already says /rustc/<commit>/;
#   - the target directory is per triple (target/<triple>/release), built
#     with an explicit --target, so these flags never mix with the host
#     builds of cargo test/bench (no rebuild ping-pong);
#   - stripped with the llvm-strip of the Rust toolchain's llvm-tools
#     component (pinned with rustc, handles every target): debug info, and
#     the LLVM bitcode rustc embeds for its own LTO (.llvmbc, .llvmcmd: half
#     of the archive, unused by the C and Go linkers, and misread by the
#     LLVM plugins of other versions that binutils loads). Symbols stay:
#     cgo links against them. Its archive writer is deterministic (no
#     dates, owners or modes);
#   - lib/TOOLCHAIN records rustc and llvm-strip, so a check against a
#     different toolchain says so instead of reporting a mismatch.
# A library is replaced only when its bytes changed, so a rebuild of the
# same source leaves the work tree (and Go's build cache) alone.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
lib_root="$repo/go-receiver/internal/ffi/lib"
cargo_home=${CARGO_HOME:-$HOME/.cargo}
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64)

triple_of() {
  case "$1" in
    amd64) echo x86_64-unknown-linux-gnu ;;
    arm64) echo aarch64-unknown-linux-gnu ;;
    *) echo "release-lib: no Rust target known for GOARCH $1" >&2; return 1 ;;
  esac
}

host=$(rustc -vV | sed -n 's/^host: //p')
recorded=$(sed -n 's/^rustc //p' "$lib_root/TOOLCHAIN" 2>/dev/null || true)
if [ -n "$recorded" ] && [ "rustc $recorded" != "$(rustc -V)" ]; then
  echo "release-lib: WARNING: the committed libraries were built by rustc $recorded, this is $(rustc -V);" \
    "the libraries built now work but differ in bytes: do not commit them." >&2
fi
llvm_strip="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-strip"
if [ ! -x "$llvm_strip" ]; then
  rustup component add llvm-tools
fi

# Remapped names are fixed strings, not paths of the build machine.
export CARGO_ENCODED_RUSTFLAGS=$(printf '%s\x1f%s' \
  "--remap-path-prefix=$repo=/compiletools-otel" \
  "--remap-path-prefix=$cargo_home=/cargo")

for arch in "${archs[@]}"; do
  triple=$(triple_of "$arch")
  if ! rustup target list --installed | grep -qx "$triple"; then
    rustup target add "$triple"
  fi
  (cd "$repo" && cargo build --release --locked -p compiletools-core --target "$triple")
  built="$repo/target/$triple/release/libcompiletools_core.a"
  dest_dir="$lib_root/linux_$arch"
  mkdir -p "$dest_dir"
  stripped="$dest_dir/.libcompiletools_core.a.new"
  "$llvm_strip" --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd \
    "$built" -o "$stripped"
  if cmp -s "$stripped" "$dest_dir/libcompiletools_core.a"; then
    rm "$stripped"
  else
    mv "$stripped" "$dest_dir/libcompiletools_core.a"
  fi
  echo "release-lib: $dest_dir/libcompiletools_core.a" \
    "$(stat -c %s "$dest_dir/libcompiletools_core.a") bytes" \
    "sha256 $(sha256sum "$dest_dir/libcompiletools_core.a" | cut -d' ' -f1)"
done

toolchain="$lib_root/TOOLCHAIN"
{
  echo "# Written by deploy/release-lib/build.sh: the toolchain that built the libraries."
  rustc -V
  "$llvm_strip" --version | sed -n '/version/{s/^ *//;p;q}' | sed 's/^/llvm-strip: /'
} > "$lib_root/.TOOLCHAIN.new"
if cmp -s "$lib_root/.TOOLCHAIN.new" "$toolchain"; then rm "$lib_root/.TOOLCHAIN.new"; else mv "$lib_root/.TOOLCHAIN.new" "$toolchain"; fi
