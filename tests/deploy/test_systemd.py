"""The .debs under a booted systemd (systemd-nspawn), one machine for both.
The agent's: installing enables and starts the unit; configured through its
EnvironmentFile and a group drop-in it delivers builds, captures transient
files as hard links (the unit makes no mount namespace), restarts after
kill -9; purging stops it and removes it. The gateway's: its hardened unit
(a mount namespace of its own) starts as configured and forwards a build.
Skipped where systemd-nspawn cannot boot a machine."""

import re
import time
import urllib.request

import pytest

from harness import reference
from harness.service import set_environment_file

from . import builds, deploy_report, gateway, packaging
from .conftest import require_root
from .nspawn import BootFailed, Machine
from .test_package import ENV_FILE, STATE, USER, the_package

UNIT = "otelcol-compiletools.service"
DIAG = "/srv/builds/diag"
GATEWAY_UNIT = "otelcol-gateway.service"


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    require_root()
    debs = {"deb": the_package(".deb"), "gateway_deb": packaging.the_package("otelcol-gateway", ".deb")}
    try:
        with Machine(tmp_path_factory.mktemp("nspawn")) as m:
            for attr, deb in debs.items():
                (m.root / "root" / deb.name).write_bytes(deb.read_bytes())
                setattr(m, attr, f"/root/{deb.name}")
            yield m
    except BootFailed as exc:
        pytest.skip(f"systemd-nspawn cannot boot a machine here: {exc}")


def _show(machine, *props, unit=UNIT):
    out = machine.sh(f"systemctl show {unit} " + " ".join(f"-p {p}" for p in props)).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def test_systemd_runs_the_package(machine, sink, corpus_dir):
    m = machine
    started = time.monotonic()
    m.sh(f"dpkg -i {m.deb}")
    assert m.sh(f"systemctl is-enabled {UNIT}").stdout.strip() == "enabled"
    assert m.sh(f"systemctl is-active {UNIT}", check=False).stdout.strip() == "active"

    # The README's setup: site settings in the EnvironmentFile, the builds'
    # group through a drop-in, group-writable builds (umask 002).
    m.sh(f"""
        groupadd --gid 2000 builders
        install -d -m 2775 -o root -g builders {DIAG}
        sed -i -e 's#^OTELCOL_COMPILETOOLS_OTLP_ENDPOINT=.*#OTELCOL_COMPILETOOLS_OTLP_ENDPOINT={sink.endpoint}#' \\
               -e 's#^OTELCOL_COMPILETOOLS_INCLUDE=.*#OTELCOL_COMPILETOOLS_INCLUDE={DIAG}#' \\
               -e 's#^OTELCOL_COMPILETOOLS_HOST_NAME=.*#OTELCOL_COMPILETOOLS_HOST_NAME=nspawn-host#' \\
               -e 's#^OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT=.*#OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT=127.0.0.1:0#' \\
               -e 's#^OTELCOL_COMPILETOOLS_METRICS_PORT=.*#OTELCOL_COMPILETOOLS_METRICS_PORT=0#' {ENV_FILE}
        mkdir -p /etc/systemd/system/{UNIT}.d
        printf '[Service]\\nSupplementaryGroups=builders\\n' > /etc/systemd/system/{UNIT}.d/builders.conf
        systemctl daemon-reload
        systemctl restart {UNIT}
    """)
    pid = _show(m, "MainPID")["MainPID"]
    status = m.sh(f"cat /proc/{pid}/status").stdout
    assert re.search(r"^Groups:.*\b2000\b", status, re.M), "the drop-in's group is not applied"
    assert m.sh(f"id -u {USER}").stdout.strip() == re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
    namespaces = m.sh(f"readlink /proc/{pid}/ns/mnt /proc/1/ns/mnt").stdout.split()
    assert namespaces[0] == namespaces[1], "the unit runs in its own mount namespace"

    # A running build: its statslog is captured as a hard link the moment
    # it appears; then ct-cake finishes it (timing.json by rename) and
    # deletes the statslog.
    timing = (reference.invocation_dir(builds.CASES[0]) / "timing.json").read_bytes()
    (m.root / "root" / "timing.json").write_bytes(timing)
    inv = "20261130T120000-4242"
    m.sh(f"umask 002; mkdir {DIAG}/{inv}; printf 'statslog line\\n' > {DIAG}/{inv}/ccache.statslog")
    links = ""
    for _ in range(50):
        links = m.sh(f"stat -c %h {DIAG}/{inv}/ccache.statslog").stdout.strip()
        if links == "2":
            break
        time.sleep(0.1)
    assert links == "2", f"the statslog was not captured as a hard link (link count {links})"
    captured = m.sh(f"find {STATE}/capture -name ccache.statslog -links 2").stdout.split()
    assert len(captured) == 1, captured
    m.sh(f"cp /root/timing.json {DIAG}/.t && mv {DIAG}/.t {DIAG}/{inv}/timing.json && "
         f"rm {DIAG}/{inv}/ccache.statslog")
    sink.wait_for(lambda: len(sink.spans()) > 0, 60)
    first = time.monotonic()
    builds.assert_every_build_arrived(sink, {inv: builds.CASES[0]}, None, host_name="nspawn-host")
    deploy_report.record("systemd: dpkg -i, configure, restart, first build at the sink seconds",
                         f"{first - started:.2f}")

    # Restart=on-failure.
    m.sh(f"kill -9 {pid}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = _show(m, "MainPID", "NRestarts", "ActiveState")
        if shown["NRestarts"] == "1" and shown["ActiveState"] == "active" and shown["MainPID"] not in ("0", pid):
            break
        time.sleep(0.5)
    assert shown["NRestarts"] == "1" and shown["ActiveState"] == "active", shown

    m.sh(f"dpkg --purge otelcol-compiletools")
    assert m.sh(f"systemctl is-active {UNIT}", check=False).stdout.strip() == "inactive"
    assert m.sh(f"getent passwd {USER}", check=False).returncode != 0
    assert not (m.root / STATE.relative_to("/")).exists()
    assert not (m.root / "etc/systemd/system/multi-user.target.wants" / UNIT).exists()


def _wait_healthy(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no healthy gateway on port {port} after {timeout} s")


def test_systemd_runs_the_gateway_package(machine, sink, collector_binary, tmp_path):
    m = machine
    m.sh(f"dpkg -i {m.gateway_deb}")
    assert m.sh(f"systemctl is-enabled {GATEWAY_UNIT}").stdout.strip() == "enabled"
    # The packaged role (backend) on this test's ports, exporting to the sink.
    env, ports = gateway.instance_env("backend", GATEWAY_EXPORT_ENDPOINT=sink.endpoint)
    set_environment_file(m.root / "etc/otelcol-gateway/otelcol-gateway.env", **env)
    m.sh(f"systemctl restart {GATEWAY_UNIT}")
    _wait_healthy(ports["health"])
    shown = _show(m, "MainPID", "ActiveState", unit=GATEWAY_UNIT)
    assert shown["ActiveState"] == "active", shown
    pid = shown["MainPID"]
    status = m.sh(f"cat /proc/{pid}/status").stdout
    assert m.sh("id -u otelcol-gateway").stdout.strip() == re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
    namespaces = m.sh(f"readlink /proc/{pid}/ns/mnt /proc/1/ns/mnt").stdout.split()
    assert namespaces[0] != namespaces[1], "the gateway's unit has no mount namespace of its own"

    gateway.assert_agent_build_arrives(collector_binary, tmp_path / "agent", ports["http"], sink, [])

    m.sh("dpkg --purge otelcol-gateway")
    assert m.sh(f"systemctl is-active {GATEWAY_UNIT}", check=False).stdout.strip() == "inactive"
    assert m.sh("getent passwd otelcol-gateway", check=False).returncode != 0
