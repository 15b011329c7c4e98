"""Run the built collector (otelcol-compiletools) as a child process for a test.

The collector gets a config written into its own work directory, logs to
files there, is probed through the health_check extension, and is always
stopped: SIGTERM, then SIGKILL after a grace period, then reaped.
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = REPO / "_build" / "otelcol-compiletools" / "otelcol-compiletools"

POLL_INTERVAL_S = 0.2     # receiver poll_interval written into every config
HOST_NAME = "e2e-host"    # receiver host_name, so host.name is deterministic


class CollectorMissing(Exception):
    pass


def binary_path():
    """The collector binary from $OTELCOL_BIN or the ocb output path."""
    path = Path(os.environ.get("OTELCOL_BIN") or DEFAULT_BINARY)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise CollectorMissing(
            f"collector binary {path} does not exist or is not executable. "
            f"Build it first (ocb output, see tests/e2e/README.md) or point "
            f"OTELCOL_BIN at it.")
    return path


def free_port():
    """A port on 127.0.0.1 that was free a moment ago (the collector binds it
    itself, so there is a small window for a clash; tests here are serial)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _q(text):
    # A JSON string is a valid YAML double-quoted scalar: safe for any path.
    return json.dumps(str(text))


def render_config(include, exporter_endpoint, health_port, receiver_extra=None, storage_dir=None, logs=False):
    """The collector config the harness runs with (YAML text).

    Receiver keys assumed of `compiletools`: include, poll_interval, host_name,
    plus `receiver_extra` ({key: scalar}); a `host_name` or `poll_interval`
    there replaces the harness's own. With `storage_dir`, a file_storage
    extension keeps the receiver's checkpoints and the exporter's queue there.
    With `logs`, a logs pipeline too (the receiver's live build records).
    """
    includes = ", ".join(_q(p) for p in include)
    receiver_extra = dict(receiver_extra or {})
    poll = receiver_extra.pop("poll_interval", f"{int(POLL_INTERVAL_S * 1000)}ms")
    host_name = receiver_extra.pop("host_name", HOST_NAME)
    extra = "".join(f"    {k}: {_q(v) if isinstance(v, str) else json.dumps(v)}\n"
                    for k, v in receiver_extra.items())
    storage_ext, storage_names, queue, receiver_storage = "", "", "", ""
    if storage_dir is not None:
        storage_ext = f"  file_storage:\n    directory: {_q(storage_dir)}\n    create_directory: true\n"
        storage_names = ", file_storage"
        receiver_storage = "    storage: file_storage\n"
        # A persistent exporter queue: what the receiver handed over before
        # a crash is not lost with the process (README, delivery semantics).
        queue = "    sending_queue:\n      enabled: true\n      storage: file_storage\n"
    logs_pipeline = ("    logs:\n      receivers: [compiletools]\n      exporters: [otlp_http]\n"
                     if logs else "")
    return f"""\
receivers:
  compiletools:
    include: [{includes}]
    poll_interval: {poll}
    host_name: {_q(host_name)}
{receiver_storage}{extra}exporters:
  # "otlp_http" is the exporter's type since v0.16x; the old "otlphttp" alias
  # still works but logs a deprecation warning.
  otlp_http:
    endpoint: {_q(exporter_endpoint)}
    # Compression stays at its default (gzip), so the sink's gzip path is used.
    timeout: 5s
    # Fail fast: a test waits at most ~30 s for data, retries must not outlast it.
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 500ms
      max_elapsed_time: 10s
{queue}extensions:
{storage_ext}  health_check:
    endpoint: {_q(f"127.0.0.1:{health_port}")}
service:
  extensions: [health_check{storage_names}]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [compiletools]
      exporters: [otlp_http]
    metrics:
      receivers: [compiletools]
      exporters: [otlp_http]
{logs_pipeline}"""


class Collector:
    """One collector process. Use as a context manager or call stop()."""

    def __init__(self, binary, workdir, include, exporter_endpoint, receiver_extra=None, storage_dir=None,
                 logs=False):
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.health_port = free_port()
        self.config_path = self.workdir / "config.yaml"
        self.config_path.write_text(render_config(include, exporter_endpoint, self.health_port,
                                                  receiver_extra, storage_dir, logs))
        self.stdout_path = self.workdir / "collector.stdout"
        self.stderr_path = self.workdir / "collector.stderr"
        self.proc = None
        self.terminated = False  # we sent SIGTERM (it had not exited by itself)
        self.killed = False      # SIGTERM was not enough

    def start(self, health_timeout=20.0):
        """Start the process and wait until the health endpoint says 200."""
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [str(self.binary), "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                cwd=self.workdir,
                # Own process group, so a Ctrl-C of pytest does not race us.
                start_new_session=True)
        try:
            self._wait_healthy(health_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self, timeout):
        url = f"http://127.0.0.1:{self.health_port}/"
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"collector exited with status {self.proc.returncode} before "
                    f"becoming healthy.\n{self.describe()}")
            try:
                with urllib.request.urlopen(url, timeout=1.0) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:   # e.g. 503 while starting
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.1)
        raise AssertionError(
            f"collector not healthy at {url} after {timeout:.0f} s (last: {last}).\n"
            f"{self.describe()}")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace=10.0):
        """SIGTERM, wait `grace` s, then SIGKILL; always reaps. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.terminated = True
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.killed = True
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def kill(self):
        """SIGKILL now, like a crash: no shutdown, no checkpoint flush."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def stderr_text(self):
        """Everything the collector logged so far (zap logs go to stderr)."""
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def describe(self, lines=40):
        tail = "\n".join(self.stderr_text().splitlines()[-lines:])
        return (f"binary: {self.binary}\nconfig: {self.config_path}\n"
                f"stderr ({self.stderr_path}), last {lines} lines:\n{tail}")
