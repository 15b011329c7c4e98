"""Fixtures of the fleet test: the binaries of every process it runs. A
missing binary is a failed run, never a skip (`make test-fleet` builds or
installs each of them)."""

import os
from pathlib import Path

import pytest

from prometheus import prometheus_server

from .topology import Binaries

REPO = Path(__file__).resolve().parents[2]
DEFAULTS = {
    "GATEWAY_BIN": REPO / "_build" / "otelcol-gateway" / "otelcol-gateway",
    "JAEGER_BIN": REPO / "_build" / "tools" / "jaeger-v1.76.0",
    "CT_OTEL_DUMP": REPO / "_build" / "ct-otel-dump",
}
HOW = {"GATEWAY_BIN": "make gateway", "JAEGER_BIN": "make jaeger", "CT_OTEL_DUMP": "make ct-otel-dump"}


def _binary(var):
    path = Path(os.environ.get(var) or DEFAULTS[var])
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} missing: `{HOW[var]}` builds it (or set {var})", pytrace=False)
    return path


@pytest.fixture(scope="session")
def fleet_binaries(collector_binary):
    try:
        prometheus = prometheus_server.binary_path()
    except prometheus_server.PrometheusMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    return Binaries(agent=collector_binary, gateway=_binary("GATEWAY_BIN"), jaeger=_binary("JAEGER_BIN"),
                    prometheus=prometheus, dump=_binary("CT_OTEL_DUMP"))
