#!/usr/bin/env bash
# Dependencies of tests/realbuilds (real ct-cake builds against the collector).
#
#   tests/realbuilds/install-deps.sh        # idempotent; run as root (CI is root)
#
# * Debian packages: ccache, ninja-build, cmake, g++, make, git, flock
#   (util-linux). `apt-get update` runs only when something is missing.
# * A dedicated venv ($CT_VENV, default <repo>/_build/ct-venv) with
#   compiletools[otel]==13.1.4 and every transitive dependency pinned
#   (requirements-ct.txt). It is separate from the test venv (.venv), so
#   ct-cake's dependencies never move the pins of tests/requirements.txt;
#   the tests run ct-cake as a subprocess, with this venv's bin/ first on PATH.
# Re-running is cheap: the venv is rebuilt only when requirements-ct.txt
# changed or ct-cake does not answer.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${CT_VENV:-$repo/_build/ct-venv}"
req="$here/requirements-ct.txt"

# ---- Debian packages -------------------------------------------------------
# command -> package
declare -A pkg_of=(
  [ccache]=ccache [ninja]=ninja-build [cmake]=cmake [g++]=g++ [make]=make
  [git]=git [flock]=util-linux
)
missing=()
for cmd in "${!pkg_of[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg_of[$cmd]}")
done
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing+=(python3-venv)
fi
if ((${#missing[@]})); then
  echo "install-deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- compiletools venv -----------------------------------------------------
stamp="$venv/.realbuilds-installed"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
   && "$venv/bin/ct-cake" --version >/dev/null 2>&1; then
  echo "install-deps: $venv up to date ($("$venv/bin/ct-cake" --version 2>&1 | head -1))"
  exit 0
fi
echo "install-deps: creating $venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
v = m.version("compiletools")
assert v == "13.1.4", f"compiletools {v} installed, 13.1.4 expected"
import compiletools.otel, opentelemetry.exporter.otlp.proto.http  # the [otel] extra works
print(f"install-deps: compiletools {v}, opentelemetry-sdk {m.version('opentelemetry-sdk')}")
PY
echo "$want" >"$stamp"
