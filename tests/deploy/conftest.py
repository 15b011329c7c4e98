"""Helpers of the deployment tests; their fixtures `corpus_dir`, `sink`
and `collector_binary` are the shared ones of tests/conftest.py."""

import os

import pytest


def require_root():
    """Installing packages and running as another user need root. CI runs
    as root; elsewhere these tests are skipped rather than half-run."""
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        pytest.fail("deployment tests must run as root in CI", pytrace=False)
    pytest.skip("needs root (installs a package, switches users)")

