#!/usr/bin/env bash
# System dependencies of the Python suites (tests/requirements.txt is the
# test venv's, installed by `make venv`):
#
#   tests/install-deps.sh realbuilds|deploy|prometheus|all ...   # idempotent; run as root (CI is root)
#
# realbuilds  tests/realbuilds and tests/casreal (and the Rust CAS differential
#             tests): ccache, ninja-build, cmake, g++, make, git, flock
#             (util-linux), clang (Debian's clang 14 on bookworm: the
#             `clang.time-trace` builds of test_time_trace_realbuilds.py)
#             with apt, and a dedicated venv ($CT_VENV, default
#             <repo>/_build/ct-venv) with compiletools[otel]==13.1.4 and every
#             transitive dependency pinned (CT_PINS below). It is separate from
#             the test venv (.venv), so ct-cake's dependencies never move the
#             pins of tests/requirements.txt; the tests run ct-cake as a
#             subprocess, with this venv's bin/ first on PATH. The venv is
#             rebuilt only when CT_PINS changed or ct-cake does not answer.
# deploy      tests/deploy, `make dist` and `make image`: buildah (daemonless
#             image builds), debootstrap (the image's Debian root), rpm
#             (reading the .rpm), systemd (systemd-analyze verify of the unit),
#             systemd-container (systemd-nspawn: the .deb under a booted
#             systemd), binutils (objdump: the glibc versions the binary
#             needs), passwd and util-linux (the package's install scripts).
#             nfpm itself is a Go tool the Makefile installs.
# prometheus  tests/prometheus: Debian's `prometheus` package (bookworm: 2.42).
#             The test runs the binary itself with a throw-away config and
#             data directory; the package's systemd unit is neither needed nor
#             started.
#
# `apt-get update` runs only when something is missing.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"

# The compiletools venv of `realbuilds`, fully pinned. opentelemetry-* and
# protobuf are the versions the shared corpus was recorded with
# (corpus/README.md, "Versions").
# ConfigArgParse >= 1.7.6 returns (stream, label) pairs from
# _open_config_files, which compiletools 13.1.4 overrides expecting streams:
# every ct-cake run dies with "'tuple' object has no attribute 'read'".
CT_PINS='compiletools[otel]==13.1.4
ConfigArgParse==1.7.5
opentelemetry-api==1.45.2
opentelemetry-sdk==1.45.2
opentelemetry-proto==1.45.2
opentelemetry-semantic-conventions==0.66b2
opentelemetry-exporter-otlp-proto-common==1.45.2
opentelemetry-exporter-otlp-proto-http==1.45.2
opentelemetry-exporter-otlp-proto-grpc==1.45.2
opentelemetry-exporter-otlp-common==0.66b2
opentelemetry-exporter-http-transport==0.66b2
protobuf==7.36.2
appdirs==1.4.4
certifi==2026.10.19.post1
charset-normalizer==3.5.3
googleapis-common-protos==1.76.0
grpcio==1.85.3
idna==3.20
markdown-it-py==4.3.0
mdurl==0.1.2
Pygments==2.21.0
requests==2.34.2
rich==15.0.0
rich-rst==2.2.0
stringzilla==5.3.2
typing_extensions==4.16.0
urllib3==2.8.0'

usage() {
  echo "usage: $0 realbuilds|deploy|prometheus|all ..." >&2
  exit 2
}

# missing_packages COMMAND=PACKAGE ...: the packages whose command is not on
# PATH, one a line.
missing_packages() {
  local pair
  for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || echo "${pair#*=}"
  done
}

# apt_install LABEL PACKAGE ...: installs the packages, if any.
apt_install() {
  local label="$1"
  shift
  if (($#)); then
    echo "install-deps $label: apt-get install $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$@"
  else
    echo "install-deps $label: system packages present"
  fi
}

deps_realbuilds() {
  local missing
  mapfile -t missing < <(missing_packages ccache=ccache ninja=ninja-build cmake=cmake g++=g++ \
    make=make git=git flock=util-linux clang=clang clang++=clang)
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
  apt_install realbuilds "${missing[@]}"

  local venv="${CT_VENV:-$repo/_build/ct-venv}"
  local stamp="$venv/.realbuilds-installed"
  local want
  want="$(printf '%s\n' "$CT_PINS" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
     && "$venv/bin/ct-cake" --version >/dev/null 2>&1; then
    echo "install-deps realbuilds: $venv up to date ($("$venv/bin/ct-cake" --version 2>&1 | head -1))"
    return
  fi
  echo "install-deps realbuilds: creating $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # Kept in the venv: what it was made from.
  printf '%s\n' "$CT_PINS" >"$venv/requirements-ct.txt"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$venv/requirements-ct.txt"
  "$venv/bin/python" - <<'PY'
import importlib.metadata as m
v = m.version("compiletools")
assert v == "13.1.4", f"compiletools {v} installed, 13.1.4 expected"
import compiletools.otel, opentelemetry.exporter.otlp.proto.http  # the [otel] extra works
print(f"install-deps realbuilds: compiletools {v}, opentelemetry-sdk {m.version('opentelemetry-sdk')}")
PY
  echo "$want" >"$stamp"
}

deps_deploy() {
  local missing
  mapfile -t missing < <(missing_packages buildah=buildah debootstrap=debootstrap rpm=rpm \
    systemd-analyze=systemd systemd-nspawn=systemd-container objdump=binutils \
    useradd=passwd setpriv=util-linux)
  apt_install deploy "${missing[@]}"
}

deps_prometheus() {
  if command -v prometheus >/dev/null 2>&1; then
    echo "install-deps prometheus: $(prometheus --version 2>&1 | head -1)"
    return
  fi
  echo "install-deps prometheus: apt-get install prometheus"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus
  # A machine with systemd would start the packaged service on :9090; the
  # test does not use it and must not depend on it, so leave it stopped.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus || true
  fi
  echo "install-deps prometheus: $(prometheus --version 2>&1 | head -1)"
}

(($#)) || usage
for part in "$@"; do
  case "$part" in
    realbuilds|deploy|prometheus|all) ;;
    *) usage ;;
  esac
done
for part in "$@"; do
  case "$part" in
    realbuilds) deps_realbuilds ;;
    deploy) deps_deploy ;;
    prometheus) deps_prometheus ;;
    all) deps_realbuilds; deps_deploy; deps_prometheus ;;
  esac
done
