"""What the tests of the agent's and the gateway's packages share: finding a
package in `make dist`'s output, dpkg state, users, unit files."""

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("CT_DIST_DIR") or REPO / "_build" / "dist")


def the_package(name, suffix):
    """The one `name` package ending in `suffix` (.deb, .rpm) in DIST."""
    found = sorted(p for p in DIST.glob(f"{name}[_-][0-9]*{suffix}"))
    assert len(found) == 1, f"want one {name} {suffix} in {DIST} (make dist / dist-gateway), found {found}"
    return found[0]


def run(*argv, check=True, env=None):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check, env=env)


def installed_version(pkg):
    return run("dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg, check=False).stdout.strip()


def purge_if_present(pkg):
    if installed_version(pkg):
        run("dpkg", "--purge", pkg)


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def group_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def unit_settings(path):
    """{key: [values]} of a unit file's [Service] and [Unit] lines."""
    settings = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def deb_listing(deb):
    """({path: mode string} of the files, conffiles, maintainer scripts
    present) of a .deb."""
    listing = run("dpkg-deb", "--contents", deb).stdout
    files = {line.split()[-1].lstrip("."): line.split()[0]
             for line in listing.splitlines() if not line.startswith("d")}
    with tempfile.TemporaryDirectory() as ctl:
        run("dpkg-deb", "--control", deb, ctl)
        conffiles = set(Path(ctl, "conffiles").read_text().split())
        scripts = {s for s in ("preinst", "postinst", "prerm", "postrm") if os.access(Path(ctl, s), os.X_OK)}
    return files, conffiles, scripts


def assert_rpm_contents(rpm, contents, configs):
    """The .rpm holds exactly `contents`, `configs` as %config(noreplace),
    and all four scriptlets."""
    assert set(run("rpm", "-qp", "--list", rpm).stdout.split()) == contents
    assert set(run("rpm", "-qp", "--configfiles", rpm).stdout.split()) == configs
    flags = run("rpm", "-qp", "--queryformat", "[%{FILENAMES} %{FILEFLAGS:fflags}\n]", rpm).stdout
    for line in flags.splitlines():
        name, _, fl = line.partition(" ")
        if name in configs:
            assert "c" in fl and "n" in fl, f"{name}: flags {fl!r}, want config + noreplace"
    scripts = run("rpm", "-qp", "--scripts", rpm).stdout
    for phase in ("preinstall", "postinstall", "preuninstall", "postuninstall"):
        assert f"{phase} scriptlet" in scripts, f"rpm has no {phase} scriptlet"


def assert_unit_verifies(unit):
    """systemd-analyze verify has nothing to say about `unit` (skips where
    systemd-analyze is missing)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not available")
    result = run(analyze, "verify", unit, check=False)
    complaints = [ln for ln in (result.stdout + result.stderr).splitlines() if Path(unit).name in ln]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr
