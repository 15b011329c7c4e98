#!/usr/bin/env bash
# Dependencies of tests/prometheus (the Grafana dashboard's queries against a
# real Prometheus scraping the collector's prometheus exporter).
#
#   tests/prometheus/install-deps.sh     # idempotent; run as root (CI is root)
#
# Debian's `prometheus` package (bookworm: 2.42). The test runs the binary
# itself with a throw-away config and data directory; the package's systemd
# unit is neither needed nor started (without systemd, invoke-rc.d declines).
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
  echo "install-deps: $(prometheus --version 2>&1 | head -1)"
  exit 0
fi
echo "install-deps: apt-get install prometheus"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus
# A machine with systemd would start the packaged service on :9090; the test
# does not use it and must not depend on it, so leave it stopped.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl disable --now prometheus || true
fi
echo "install-deps: $(prometheus --version 2>&1 | head -1)"
