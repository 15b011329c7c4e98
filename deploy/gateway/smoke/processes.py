"""Start, probe, measure and stop the smoke's collector processes.

Every process listens on 127.0.0.1 only, on ports picked free at start; each
is stopped by its own pid (SIGTERM, then SIGKILL after a grace period).
"""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """One collector: its command line, environment and log files."""

    def __init__(self, name, argv, workdir, env=None, health_port=None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.env = {**os.environ, **(env or {})}
        self.health_port = health_port
        self.log_path = Path(workdir) / f"{name}.log"
        self.proc = None

    def start(self, healthy_within=60):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if self.health_port is not None:
            self._wait_healthy(healthy_within)
        return self

    def _wait_healthy(self, timeout):
        url = f"http://127.0.0.1:{self.health_port}/"
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(url, timeout=1.0) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not healthy after {timeout} s ({last}):\n{self.tail()}")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self):
        """User + system CPU time so far (the process's own threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of stat; fields[0] is field 3.
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def peak_rss_mib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmHWM for {self.name}")

    def tail(self, lines=30):
        self.log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def kill(self):
        """SIGKILL, as a crash: nothing of the process's shutdown runs."""
        self.proc.kill()
        self.proc.wait(timeout=15)
        self.log.close()

    def stop(self, grace=15):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=grace)
        self.log.close()
