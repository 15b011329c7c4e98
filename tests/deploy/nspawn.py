"""A Debian machine with systemd as PID 1, booted with systemd-nspawn, to
test the package under real systemd (the CI machine itself runs no systemd).

The root file system is made once by deploy/container/make-rootfs.sh with
systemd added, cached as a tarball under _build/deploy/, and unpacked fresh
for each machine. The machine shares this machine's network (loopback
included), so an OTLP sink here is reachable from its services.
"""

import hashlib
import shutil
import signal
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAKE_ROOTFS = REPO / "deploy" / "container" / "make-rootfs.sh"
CACHE = REPO / "_build" / "deploy"
PACKAGES = "systemd,systemd-sysv,dbus,passwd"


class BootFailed(Exception):
    pass


def root_tarball():
    """The cached tarball, rebuilt when make-rootfs.sh or PACKAGES change."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tar = CACHE / "nspawn-bookworm.tar"
    stamp = tar.with_suffix(".recipe")
    recipe = hashlib.sha256(MAKE_ROOTFS.read_bytes() + PACKAGES.encode()).hexdigest()
    if not (tar.exists() and stamp.exists() and stamp.read_text() == recipe):
        stamp.unlink(missing_ok=True)
        subprocess.run([str(MAKE_ROOTFS), str(tar), "bookworm", PACKAGES], check=True,
                       capture_output=True, text=True)
        stamp.write_text(recipe)
    return tar


class Machine:
    """Boots on enter, powers off and deletes its root on exit."""

    def __init__(self, workdir):
        self.root = Path(workdir) / "root"
        self.name = f"ctdeploy-{uuid.uuid4().hex[:8]}"
        self.log = Path(workdir) / "nspawn.log"
        self.proc = None
        self.leader = None

    def __enter__(self):
        self.root.mkdir(parents=True)
        with tarfile.open(root_tarball()) as tar:
            tar.extractall(self.root, numeric_owner=True, filter="fully_trusted")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["systemd-nspawn", "--quiet", "-D", str(self.root), "-b", "--register=no",
                 "--keep-unit", f"--machine={self.name}", "--console=passive"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_booted(60)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_booted(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BootFailed(f"systemd-nspawn exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True)
            if children.stdout.split():
                self.leader = int(children.stdout.split()[0])
                state = self.sh("systemctl is-system-running", check=False).stdout.strip()
                if state in ("running", "degraded"):
                    return
            time.sleep(0.5)
        raise BootFailed(f"not booted after {timeout} s: {self.log.read_text()[-2000:]}")

    def sh(self, script, check=True):
        """Run a shell script inside the machine (all its namespaces)."""
        result = subprocess.run(["nsenter", "-t", str(self.leader), "-a", "bash", "-ec", script],
                                capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"in the machine: {script}\nexit {result.returncode}\n{result.stdout}{result.stderr}")
        return result

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            if self.leader:
                self.sh("systemctl poweroff --no-block", check=False)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
