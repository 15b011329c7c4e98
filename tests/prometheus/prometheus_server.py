"""A real Prometheus server (Debian's package) as a child process of a test.

It scrapes one target every second, stores exemplars, listens on
127.0.0.1 only, keeps its data in the test's directory, and is always
stopped (SIGTERM, then SIGKILL). Queries go through the HTTP API, as
Grafana's do.
"""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

SCRAPE_INTERVAL_S = 1
JOB = "otelcol-compiletools"


class PrometheusMissing(Exception):
    pass


def binary_path():
    """$PROMETHEUS_BIN, else `prometheus` on PATH (tests/install-deps.sh prometheus)."""
    path = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus")
    if not path or not os.access(path, os.X_OK):
        raise PrometheusMissing(
            "prometheus not found: run tests/install-deps.sh prometheus "
            "(Debian's `prometheus` package) or set PROMETHEUS_BIN")
    return Path(path)


def render_config(target):
    """The scrape configuration: the collector's prometheus exporter only.
    Prometheus asks for OpenMetrics first, the format that carries exemplars."""
    return f"""\
global:
  scrape_interval: {SCRAPE_INTERVAL_S}s
  scrape_timeout: {SCRAPE_INTERVAL_S}s
  evaluation_interval: {SCRAPE_INTERVAL_S}s
scrape_configs:
  - job_name: {JOB}
    static_configs:
      - targets: [{json.dumps(target)}]
"""


class Prometheus:
    def __init__(self, binary, workdir, port, target):
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.config_path = self.workdir / "prometheus.yml"
        self.config_path.write_text(render_config(target))
        self.log_path = self.workdir / "prometheus.log"
        self.proc = None

    def start(self, ready_timeout=60.0):
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(self.binary),
                 f"--config.file={self.config_path}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 # Exemplars are kept only with this feature (2.x).
                 "--enable-feature=exemplar-storage",
                 # The packaged defaults point at /usr/share/prometheus; the
                 # test needs no web UI assets.
                 "--web.console.templates=" + str(self.workdir),
                 "--web.console.libraries=" + str(self.workdir)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.workdir, start_new_session=True)
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.proc.returncode}\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1.0) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.2)
        raise AssertionError(f"prometheus not ready after {timeout:.0f} s ({last})\n{self.log_tail()}")

    def stop(self, grace=10.0):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def log_tail(self, lines=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no prometheus log)"

    # ---- HTTP API --------------------------------------------------------

    def api(self, path, **params):
        """GET /api/v1/<path>; returns `data`, raises with Prometheus' error."""
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.url}/api/v1/{path}?{query}"
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query_range(self, expr, start, end, step):
        return self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step}s")

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.api("query", **params)

    def query_exemplars(self, expr, start, end):
        return self.api("query_exemplars", query=expr, start=f"{start:.3f}", end=f"{end:.3f}")

    def series(self, match, start, end):
        return self.api("series", **{"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"})

    def label_values(self, label, match, start, end):
        return self.api(f"label/{label}/values",
                        **{"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"})

    def targets(self):
        return self.api("targets")["activeTargets"]
