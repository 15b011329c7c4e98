"""Run otelcol-compiletools the way a deployment runs it.

`ServiceCollector` starts an explicit command line — the installed binary as
the packaged user with the EnvironmentFile's variables, or `buildah run` of
the image — and reuses the e2e harness's health wait, stop and log access.
"""

import os
import pwd
import signal
import subprocess
from pathlib import Path

from . import collector as collector_mod


def read_environment_file(path):
    """The variables systemd's EnvironmentFile= would set from `path`.

    The subset of systemd's syntax the packaged file uses: `KEY=VALUE` lines,
    `#`/`;` comment lines, blank lines, surrounding whitespace trimmed, and a
    value wholly in single or double quotes unquoted.
    """
    env = {}
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path}: not KEY=VALUE: {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def set_environment_file(path, **values):
    """Rewrite the given KEYs of an EnvironmentFile in place (as an admin
    would edit it); keys not in the file are appended."""
    lines = Path(path).read_text().splitlines()
    todo = dict(values)
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip()
        if not line.lstrip().startswith(("#", ";")) and key in todo:
            lines[i] = f"{key}={todo.pop(key)}"
    lines += [f"{k}={v}" for k, v in todo.items()]
    Path(path).write_text("\n".join(lines) + "\n")


class ServiceCollector(collector_mod.Collector):
    """A collector process from an explicit command line.

    With `user`, it runs as that user with its group list (what systemd's
    User= does through initgroups). `env` replaces the environment. The
    process gets its own process group. stop() sends SIGTERM to the
    collector itself — with `wrapped`, to the otelcol-compiletools process
    below the wrapper, because `buildah run` answers a SIGTERM of its own by
    killing its child — and kill() or an overdue stop SIGKILL both.
    """

    def __init__(self, argv, workdir, health_port, env=None, user=None, config_path=None,
                 wrapped=False, executable="otelcol-compiletools"):
        # With `wrapped`, the process below the wrapper whose executable is
        # named `executable` is the collector.
        # Not Collector.__init__: that writes the e2e harness's own config.
        self.argv = [str(a) for a in argv]
        self.binary = Path(self.argv[0])
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.health_port = health_port
        self.config_path = config_path or "(from the command line)"
        self.env = env
        self.user = user
        self.wrapped = wrapped
        self.executable = executable
        self.stdout_path = self.workdir / "collector.stdout"
        self.stderr_path = self.workdir / "collector.stderr"
        self.proc = None
        self.terminated = False
        self.killed = False

    def start(self, health_timeout=60.0):
        ids = {}
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            ids = dict(user=pw.pw_uid, group=pw.pw_gid,
                       extra_groups=os.getgrouplist(self.user, pw.pw_gid))
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env=self.env, cwd="/", start_new_session=True, **ids)
        try:
            self._wait_healthy(health_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def collector_pid(self):
        """The collector's pid: ours, or the wrapper's descendant whose
        executable is named like `self.executable` (None if there is none)."""
        if not self.wrapped:
            return self.proc.pid
        children = {}
        for stat_file in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat_file.read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(stat_file.parent.name))
        todo = list(children.get(self.proc.pid, []))
        while todo:
            pid = todo.pop()
            try:
                if os.readlink(f"/proc/{pid}/exe").endswith("/" + self.executable):
                    return pid
            except OSError:
                pass
            todo += children.get(pid, [])
        return None

    def _kill_all(self):
        """SIGKILL the collector (it may have left the wrapper's process
        group) and the process group."""
        pid = self.collector_pid()
        for kill, target in ((os.kill, pid), (os.killpg, self.proc.pid)):
            if target is not None:
                try:
                    kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop(self, grace=20.0):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.terminated = True
            pid = self.collector_pid()
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.killed = True
                self._kill_all()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self._kill_all()
            self.proc.wait(timeout=10)

    def describe(self, lines=40):
        tail = "\n".join(self.stderr_text().splitlines()[-lines:])
        return (f"command: {' '.join(self.argv)}\nconfig: {self.config_path}\n"
                f"stderr ({self.stderr_path}), last {lines} lines:\n{tail}")
