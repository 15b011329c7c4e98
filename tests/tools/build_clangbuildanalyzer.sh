#!/usr/bin/env bash
# Builds aras-p/ClangBuildAnalyzer 1.6.0 (commit 5544775) from source into
# _build/ for `make bench-time-trace` (read-only use: nothing of it enters
# the project). Its public snapshot lacks src/external/simdjson/simdjson.h,
# so simdjson 3.12.3's simdjson.h and simdjson.cpp come from the pysimdjson
# 7.0.2 sdist (PyPI), as in the corpus' README. Needs git, pip, cmake, g++.
#
#   tests/tools/build_clangbuildanalyzer.sh [BUILD_DIR]   -> BUILD_DIR/cba-build/ClangBuildAnalyzer
set -euo pipefail

build=${1:-_build}
src="$build/ClangBuildAnalyzer"
commit=5544775
mkdir -p "$build"
if [ ! -d "$src/.git" ]; then
  git clone --quiet --no-checkout "${CBA_REPO:-https://github.com/aras-p/ClangBuildAnalyzer}" "$src"
fi
# Every file the snapshot has; the missing header is replaced below.
git -C "$src" ls-tree -r --name-only "$commit" | grep -v '^src/external/simdjson/' \
  | xargs git -C "$src" checkout "$commit" --
sdist="$build/pysimdjson-sdist"
if [ ! -f "$sdist/pysimdjson-7.0.2/simdjson/simdjson.h" ]; then
  python3 -m pip download --quiet --no-deps --no-binary :all: pysimdjson==7.0.2 -d "$sdist"
  tar xzf "$sdist/pysimdjson-7.0.2.tar.gz" -C "$sdist"
fi
mkdir -p "$src/src/external/simdjson"
cp "$sdist/pysimdjson-7.0.2/simdjson/simdjson.h" "$sdist/pysimdjson-7.0.2/simdjson/simdjson.cpp" "$src/src/external/simdjson/"
mkdir -p "$build/cba-build"
cmake -S "$src" -B "$build/cba-build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/cba-build" -j "$(nproc)" >/dev/null
echo "$build/cba-build/ClangBuildAnalyzer"
