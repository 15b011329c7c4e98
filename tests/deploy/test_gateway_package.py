"""The otelcol-gateway .deb and .rpm of `make dist-gateway`: contents, then
the .deb's life cycle — dpkg -i, both roles' configs validate with the
packaged environment file, systemd-analyze verify, the installed binary as
the packaged user forwarding an agent's build to a sink, purge.

The tests of the life cycle share one installation and run in file order.
"""

import pwd
import stat
import tempfile
import time
from pathlib import Path

import pytest

from harness.service import ServiceCollector, read_environment_file, set_environment_file

from . import deploy_report, gateway, packaging
from .conftest import require_root
from .packaging import group_exists, run, user_exists

PKG = "otelcol-gateway"
BINARY = Path("/usr/bin/otelcol-gateway")
ETC = Path("/etc/otelcol-gateway")
CONFIGS = {role: ETC / f"config-{role}.yaml" for role in ("lb", "backend", "backend-sampling")}
ENV_FILE = ETC / "otelcol-gateway.env"
UNIT = Path("/usr/lib/systemd/system/otelcol-gateway.service")
STATE = Path("/var/lib/otelcol-gateway")
CONFFILES = {str(p) for p in CONFIGS.values()} | {str(ENV_FILE)}
CONTENTS = CONFFILES | {str(BINARY), str(UNIT)}


def test_gateway_deb_contents_conffiles_and_scripts():
    files, conffiles, scripts = packaging.deb_listing(packaging.the_package(PKG, ".deb"))
    assert set(files) == CONTENTS
    assert files[str(ENV_FILE)] == "-rw-------", "the environment file may hold credentials"
    assert files[str(BINARY)] == "-rwxr-xr-x"
    assert conffiles == CONFFILES
    assert scripts == {"preinst", "postinst", "prerm", "postrm"}


def test_gateway_rpm_contents_configfiles_and_scripts():
    packaging.assert_rpm_contents(packaging.the_package(PKG, ".rpm"), CONTENTS, CONFFILES)


def test_gateway_packages_ship_the_repository_configs(tmp_path):
    run("dpkg-deb", "-x", packaging.the_package(PKG, ".deb"), tmp_path)
    for role, path in CONFIGS.items():
        shipped = (tmp_path / path.relative_to("/")).read_text()
        assert shipped == (packaging.REPO / "deploy/gateway" / path.name).read_text(), role
    # The scripts are the agent's, renamed: no trace of the agent's names.
    with tempfile.TemporaryDirectory() as ctl:
        run("dpkg-deb", "--control", packaging.the_package(PKG, ".deb"), ctl)
        for script in ("preinst", "postinst", "prerm", "postrm"):
            text = Path(ctl, script).read_text()
            assert "otelcol-compiletools" not in text and PKG in text, script


@pytest.fixture(scope="module")
def installed():
    require_root()
    packaging.purge_if_present(PKG)
    started = time.monotonic()
    run("dpkg", "-i", packaging.the_package(PKG, ".deb"))
    deploy_report.record("gateway deb dpkg -i seconds", f"{time.monotonic() - started:.2f}")
    yield
    packaging.purge_if_present(PKG)


def _service_env(**overrides):
    """What systemd gives the unit: the EnvironmentFile's variables."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **read_environment_file(ENV_FILE), **overrides}


def _exec_start(env):
    """The unit's ExecStart with ${VAR} expanded from `env`, as systemd does."""
    (line,) = packaging.unit_settings(UNIT)["ExecStart"]
    for key, value in env.items():
        line = line.replace("${" + key + "}", value)
    assert "${" not in line, f"unexpanded variable in {line!r}"
    return line.split()


def test_gateway_install_creates_user_and_state_directory(installed):
    pw = pwd.getpwnam(PKG)
    assert pw.pw_uid < 1000 and pw.pw_shell.endswith("nologin") and pw.pw_dir == str(STATE)
    st = STATE.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pw.pw_uid, 0o750)
    env_st = ENV_FILE.stat()
    assert (env_st.st_uid, stat.S_IMODE(env_st.st_mode)) == (0, 0o600)


def test_gateway_roles_validate_with_the_packaged_environment(installed):
    # The packaged role is the backend (the lb needs GATEWAY_BACKENDS first).
    assert _exec_start(_service_env())[-1] == str(CONFIGS["backend"])
    ok = run(BINARY, "validate", "--config", CONFIGS["backend"], check=False, env=_service_env())
    assert ok.returncode == 0, ok.stderr
    sampling = run(BINARY, "validate", "--config", CONFIGS["backend"], "--config", CONFIGS["backend-sampling"],
                   check=False, env=_service_env())
    assert sampling.returncode == 0, sampling.stderr
    lb_env = _service_env(GATEWAY_ROLE="lb", GATEWAY_BACKENDS=gateway.static_backends(4317))
    lb = run(BINARY, "validate", "--config", CONFIGS["lb"], check=False, env=lb_env)
    assert lb.returncode == 0, lb.stderr
    # The packaged GATEWAY_BACKENDS is empty: an lb without backends must not start.
    bare = run(BINARY, "validate", "--config", CONFIGS["lb"], check=False, env=_service_env(GATEWAY_ROLE="lb"))
    assert bare.returncode != 0 and "no resolvers" in bare.stderr, bare.stderr


def test_gateway_unit_verifies_and_matches_the_package(installed):
    unit = packaging.unit_settings(UNIT)
    assert unit["User"] == [PKG] and unit["Group"] == [PKG]
    assert unit["EnvironmentFile"] == [str(ENV_FILE)]
    assert unit["ExecStart"] == [f"{BINARY} --config {ETC}/config-${{GATEWAY_ROLE}}.yaml"]
    assert unit["StateDirectory"] == [STATE.name]
    assert unit["ProtectSystem"] == ["strict"], "the gateway reads no build trees: lock the system down"
    packaging.assert_unit_verifies(UNIT)


def test_gateway_service_user_forwards_an_agent_build(installed, sink, collector_binary, tmp_path):
    """The packaged lb and backend roles, each as the unit runs it (the
    service user, the EnvironmentFile, ExecStart): agent -> lb -> backend
    -> sink."""
    backend_env, backend_ports = gateway.instance_env("backend", GATEWAY_EXPORT_ENDPOINT=sink.endpoint)
    set_environment_file(ENV_FILE, **backend_env)
    env = _service_env()
    backend = ServiceCollector(_exec_start(env), tmp_path / "backend", backend_ports["health"], env=env,
                               user=PKG, config_path=CONFIGS["backend"])
    lb_env, lb_ports = gateway.instance_env("lb", GATEWAY_BACKENDS=gateway.static_backends(backend_ports["grpc"]))
    env = _service_env(**lb_env)
    lb = ServiceCollector(_exec_start(env), tmp_path / "lb", lb_ports["health"], env=env, user=PKG,
                          config_path=CONFIGS["lb"])

    def runs_as_the_service_user(service):
        uid = next(int(ln.split()[1]) for ln in Path(f"/proc/{service.proc.pid}/status").read_text().splitlines()
                   if ln.startswith("Uid:"))
        assert uid == pwd.getpwnam(PKG).pw_uid, "the gateway does not run as the service user"

    gateway.assert_lb_and_backend_deliver(lb, backend, collector_binary, tmp_path / "agent", lb_ports["http"], sink,
                                          check_running=runs_as_the_service_user)


def test_gateway_purge_removes_everything(installed):
    run("dpkg", "--purge", PKG)
    leftovers = [str(p) for p in (ETC, STATE, BINARY, UNIT) if p.exists()]
    assert not leftovers, f"purge left {leftovers}"
    assert not user_exists(PKG) and not group_exists(PKG), "purge left the service user or group"
