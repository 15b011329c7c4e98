"""The .deb and .rpm of `make dist`: contents, then the .deb's life cycle on
this machine — dpkg -i, validate, systemd-analyze verify, the installed
binary as the packaged user delivering every build, reinstall, remove,
purge.

The tests of the life cycle share one installation and run in file order.
"""

import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from harness import collector as collector_mod
from harness.service import ServiceCollector, read_environment_file, set_environment_file

from . import builds, deploy_report, packaging
from .conftest import require_root
from .packaging import group_exists, run, user_exists

PKG = "otelcol-compiletools"
USER = PKG
BINARY = Path("/usr/bin/otelcol-compiletools")
ETC = Path("/etc/otelcol-compiletools")
CONFIG = ETC / "config.yaml"
ENV_FILE = ETC / "otelcol-compiletools.env"
UNIT = Path("/usr/lib/systemd/system/otelcol-compiletools.service")
STATE = Path("/var/lib/otelcol-compiletools")
# A group that owns the test's build directories, as a team's build group
# would; the service user reads them through membership (README, Install).
BUILD_GROUP = "ctdeploy-builds"

CONTENTS = {str(BINARY), str(CONFIG), str(ENV_FILE), str(UNIT)}
# Unit settings that give a service its own mount namespace (systemd.exec).
NAMESPACING_OPTIONS = (
    "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectHome", "ProtectSystem",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups",
    "ProtectHostname", "ProtectProc", "ProcSubset", "ReadWritePaths", "ReadOnlyPaths",
    "InaccessiblePaths", "ExecPaths", "NoExecPaths", "TemporaryFileSystem", "BindPaths",
    "BindReadOnlyPaths", "MountAPIVFS", "DynamicUser", "RootDirectory", "RootImage",
)


def the_package(suffix):
    return packaging.the_package(PKG, suffix)


def installed_version():
    return packaging.installed_version(PKG)


def purge_if_present():
    packaging.purge_if_present(PKG)


# ---- package contents (no installation) --------------------------------------

def test_deb_contents_conffiles_and_scripts():
    files, conffiles, scripts = packaging.deb_listing(the_package(".deb"))
    assert set(files) == CONTENTS
    assert files[str(ENV_FILE)] == "-rw-------", "the environment file may hold credentials"
    assert files[str(BINARY)] == "-rwxr-xr-x"
    assert conffiles == {str(CONFIG), str(ENV_FILE)}
    assert scripts == {"preinst", "postinst", "prerm", "postrm"}


def test_rpm_contents_configfiles_and_scripts():
    packaging.assert_rpm_contents(the_package(".rpm"), CONTENTS, {str(CONFIG), str(ENV_FILE)})


def _glibc_floor(requirement_text, pattern):
    m = re.search(pattern, requirement_text)
    assert m, f"no glibc requirement in {requirement_text!r}"
    return tuple(int(x) for x in m.group(1).split("."))


def test_declared_glibc_covers_the_binary(tmp_path):
    """The packages' glibc floor is at least the newest GLIBC_x.y symbol
    version the packaged binary links against."""
    deb = the_package(".deb")
    run("dpkg-deb", "-x", deb, tmp_path)
    symbols = run("objdump", "-T", tmp_path / BINARY.relative_to("/")).stdout
    needed = max(tuple(int(x) for x in v.split("."))
                 for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", symbols))
    deb_floor = _glibc_floor(run("dpkg-deb", "-f", deb, "Depends").stdout, r"libc6 \(>= ([\d.]+)\)")
    rpm_floor = _glibc_floor(run("rpm", "-qp", "--requires", the_package(".rpm")).stdout,
                             r"glibc >= ([\d.]+)")
    assert deb_floor >= needed and rpm_floor >= needed, (
        f"binary needs GLIBC {needed}, deb declares {deb_floor}, rpm {rpm_floor}")


# ---- the .deb's life cycle on this machine ------------------------------------

@pytest.fixture(scope="module")
def installed():
    """The .deb installed with dpkg -i (after purging any leftover); purged
    again at the end whatever happened."""
    require_root()
    purge_if_present()
    started = time.monotonic()
    run("dpkg", "-i", the_package(".deb"))
    took = time.monotonic() - started
    deploy_report.record("deb dpkg -i seconds", f"{took:.2f}")
    yield {"dpkg_seconds": took}
    purge_if_present()
    if group_exists(BUILD_GROUP):
        run("groupdel", BUILD_GROUP, check=False)


def test_install_creates_user_and_state_directory(installed):
    pw = pwd.getpwnam(USER)
    assert pw.pw_uid < 1000, f"{USER} is not a system user (uid {pw.pw_uid})"
    assert pw.pw_shell.endswith("nologin")
    assert pw.pw_dir == str(STATE)
    st = STATE.stat()
    assert (st.st_uid, st.st_gid) == (pw.pw_uid, pw.pw_gid)
    assert stat.S_IMODE(st.st_mode) == 0o750
    env_st = ENV_FILE.stat()
    assert (env_st.st_uid, stat.S_IMODE(env_st.st_mode)) == (0, 0o600)
    assert run(BINARY, "--version").stdout.strip()


def test_packaged_config_validates(installed):
    ok = run(BINARY, "validate", "--config", CONFIG, check=False)
    assert ok.returncode == 0, ok.stderr
    # validate does reject a broken config: the same file with no include glob.
    bad = subprocess.run([str(BINARY), "validate", "--config", str(CONFIG)],
                         capture_output=True, text=True,
                         env={**os.environ, "OTELCOL_COMPILETOOLS_INCLUDE": "[]"})
    assert bad.returncode != 0 and "include" in bad.stderr, bad.stderr


def test_unit_verifies_and_matches_the_package(installed):
    unit = packaging.unit_settings(UNIT)
    assert unit["User"] == [USER] and unit["Group"] == [USER]
    assert unit["EnvironmentFile"] == [str(ENV_FILE)]
    assert unit["ExecStart"] == [f"{BINARY} --config {CONFIG}"]
    assert unit["StateDirectory"] == [STATE.name]
    assert unit["Restart"] == ["on-failure"]
    # No mount namespace: with one, systemd bind-mounts the StateDirectory
    # and hard links from build directories into captures fail (EXDEV), and
    # PrivateTmp/ProtectHome would hide builds (test_systemd.py shows both
    # under a real systemd).
    for option in NAMESPACING_OPTIONS:
        assert unit.get(option, ["no"]) in (["no"], ["false"]), f"{option} set"
    config = CONFIG.read_text()
    assert f"{STATE}/file_storage" in config and f"{STATE}/capture" in config, (
        "file_storage and captures belong under the unit's StateDirectory")
    packaging.assert_unit_verifies(UNIT)


def _readable_only_by_group(tmp_root):
    """A diagnostics parent only root and BUILD_GROUP may enter."""
    if not group_exists(BUILD_GROUP):
        run("groupadd", "--system", BUILD_GROUP)
    tmp_root.chmod(0o755)
    diag = tmp_root / "diagnostics"
    diag.mkdir()
    shutil.chown(diag, "root", BUILD_GROUP)
    diag.chmod(0o2750)
    return diag


def test_service_user_delivers_every_build(installed, sink, corpus_dir):
    diag_root = Path(os.path.realpath(tempfile.mkdtemp(prefix="ctdeploy-")))
    work = Path(tempfile.mkdtemp(prefix="ctdeploy-work-"))
    try:
        diag = _readable_only_by_group(diag_root)
        # The README's recipe for reading build directories.
        run("usermod", "--append", "--groups", BUILD_GROUP, USER)

        health, metrics = collector_mod.free_port(), collector_mod.free_port()
        started = time.monotonic()
        set_environment_file(ENV_FILE,
                             OTELCOL_COMPILETOOLS_OTLP_ENDPOINT=sink.endpoint,
                             OTELCOL_COMPILETOOLS_INCLUDE=str(diag),
                             OTELCOL_COMPILETOOLS_HEALTH_ENDPOINT=f"127.0.0.1:{health}",
                             OTELCOL_COMPILETOOLS_METRICS_PORT=str(metrics))
        # What systemd does for the unit: the EnvironmentFile's variables,
        # the unit's user with its groups, the unit's command line.
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **read_environment_file(ENV_FILE)}
        service = ServiceCollector([BINARY, "--config", CONFIG], work, health, env=env, user=USER,
                                   config_path=CONFIG)
        service.start()
        healthy = time.monotonic()
        try:
            uid = next(int(ln.split()[1]) for ln in
                       Path(f"/proc/{service.proc.pid}/status").read_text().splitlines()
                       if ln.startswith("Uid:"))
            assert uid == pwd.getpwnam(USER).pw_uid, "the collector does not run as the service user"
            time.sleep(1.0)  # past the first poll: these builds are new, not a backlog
            published = time.monotonic()
            added = builds.add_builds(diag, builds.CASES)
            sink.wait_for(lambda: len(sink.spans()) > 0, 60)
            first = time.monotonic()
            builds.assert_every_build_arrived(sink, added, service, host_name=socket.gethostname())
        finally:
            code = service.stop()
        assert not service.killed and code == 0, service.describe()
        # Checkpoints went to the state directory, owned by the service user.
        stored = list((STATE / "file_storage").iterdir())
        assert stored and all(p.stat().st_uid == pwd.getpwnam(USER).pw_uid for p in stored)

        deploy_report.record("deb install to first build at the sink seconds",
                             f"{installed['dpkg_seconds'] + (healthy - started) + (first - published):.2f}"
                             f" (dpkg -i {installed['dpkg_seconds']:.2f}, configure+start to healthy "
                             f"{healthy - started:.2f}, build published to first span {first - published:.2f})")
    finally:
        shutil.rmtree(diag_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def test_reinstall_keeps_edits_remove_keeps_state_purge_removes_everything(installed):
    ENV_FILE.write_text(ENV_FILE.read_text() + "# edited by the test\n")
    marker = STATE / "kept-marker"
    marker.write_text("x")

    run("dpkg", "-i", "--force-confold", the_package(".deb"))
    assert ENV_FILE.read_text().endswith("# edited by the test\n"), "reinstall replaced an edited conffile"
    assert marker.exists(), "reinstall lost the state directory"

    run("dpkg", "--remove", PKG)
    assert not BINARY.exists() and not UNIT.exists()
    assert CONFIG.exists() and ENV_FILE.exists(), "remove (not purge) keeps the configuration"
    assert marker.exists() and user_exists(USER), "remove keeps checkpoints and the user"

    run("dpkg", "--purge", PKG)
    assert installed_version() in ("", "un"), installed_version()
    leftovers = [str(p) for p in (ETC, STATE, BINARY, UNIT) if p.exists()]
    assert not leftovers, f"purge left {leftovers}"
    assert not user_exists(USER) and not group_exists(USER), "purge left the service user or group"
