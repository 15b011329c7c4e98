"""Run one real `ct-cake` build the way a CI job would, and watch it.

* A minimal, explicit environment: ct-cake maps every long option to an
  environment variable (`--backend` <- BACKEND, ...), so the caller's
  environment is not passed through; HOME is a scratch directory so no
  user-level ct.conf applies.
* The compiletools venv's bin/ first on PATH (ct-cake, ct-lock-helper).
  "no flock": PATH holds every system executable except flock(1), so the
  make/ninja backends route rules through ct-lock-helper (formats.md §5.1).
* `--otel-export --otel-protocol=http` to an OtlpSink (the reference; it keeps every body as sent).
* A watcher thread hard-links the transient `ccache.statslog` and
  `rule_outcomes.log` of the invocation directory the moment they appear
  (same inode, so later appends are kept): our own record of what ct-cake
  deleted, to judge the receiver's per-TU attribution against. It is
  independent of the receiver, which captures the same files itself.
"""

import glob
import os
import shutil
import subprocess
import threading
import time

BUILD_TIMEOUT_S = 300
TRANSIENT_FILES = ("ccache.statslog", "rule_outcomes.log")
VARIANT = "ccache-gcc.cxx17.debug"   # compiletools' own ccache axis: CXX = ccache g++


def ct_venv():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("CT_VENV") or os.path.join(repo, "_build", "ct-venv")


def noflock_bin(root):
    """A PATH directory with a symlink to every system executable but flock."""
    d = os.path.join(root, "noflock-bin")
    if os.path.isdir(d):
        return d
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for src in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(src):
            continue
        for name in os.listdir(src):
            dst = os.path.join(tmp, name)
            if name != "flock" and not os.path.lexists(dst):
                os.symlink(os.path.join(src, name), dst)
    os.rename(tmp, d)
    return d


def build_env(work_root, ccache_dir, no_flock=False):
    venv_bin = os.path.join(ct_venv(), "bin")
    home = os.path.join(work_root, "home")
    os.makedirs(home, exist_ok=True)
    path = f"{venv_bin}:{noflock_bin(work_root)}" if no_flock else f"{venv_bin}:/usr/local/bin:/usr/bin:/bin"
    return {
        "PATH": path,
        "HOME": home,
        "VIRTUAL_ENV": ct_venv(),
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "COLUMNS": "120",
        "TERM": "dumb",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "CCACHE_DIR": ccache_dir,
    }


class TransientWatcher(threading.Thread):
    """Hard-link <parent>/*/{ccache.statslog,rule_outcomes.log} into keep_dir."""

    def __init__(self, diag_parent, keep_dir):
        super().__init__(daemon=True, name="transient-watcher")
        self.diag_parent = diag_parent
        self.keep_dir = keep_dir
        self.linked = {}
        self._halt = threading.Event()

    def run(self):
        os.makedirs(self.keep_dir, exist_ok=True)
        while not self._halt.is_set() and len(self.linked) < len(TRANSIENT_FILES):
            for name in TRANSIENT_FILES:
                if name in self.linked:
                    continue
                for path in glob.glob(os.path.join(glob.escape(self.diag_parent), "*", name)):
                    try:
                        os.link(path, os.path.join(self.keep_dir, name))
                        self.linked[name] = path
                    except FileExistsError:
                        self.linked[name] = path
                    except OSError:
                        pass  # vanished between glob and link: try again
            self._halt.wait(0.002)

    def stop(self):
        self._halt.set()
        self.join(timeout=5)


def ct_cake_argv(backend, diag_parent, statslog_arg, endpoint, metrics_as_spans=False, variant=None):
    argv = ["ct-cake", f"--variant={variant or VARIANT}", f"--backend={backend}", "--timing",
            f"--diagnostics-dir={diag_parent}", f"--ccache-statslog={statslog_arg}",
            "--otel-export", "--otel-protocol=http", f"--otel-endpoint={endpoint}"]
    if metrics_as_spans:
        argv.append("--otel-metrics-as-spans")
    return argv


def run_ct_cake(argv, cwd, env, stdout_path, stderr_path, diag_parent, keep_dir):
    """Run ct-cake (bounded); returns (exit code, wall seconds, watcher.linked)."""
    watcher = TransientWatcher(diag_parent, keep_dir)
    watcher.start()
    t0 = time.monotonic()
    try:
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            try:
                rc = proc.wait(timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # Its own session: the whole build (compilers, make/ninja) goes.
                os.killpg(proc.pid, 9)
                proc.wait(timeout=30)
                raise AssertionError(f"ct-cake did not finish within {BUILD_TIMEOUT_S} s: {argv}")
    finally:
        watcher.stop()
    return rc, time.monotonic() - t0, dict(watcher.linked)


def clean_outputs(ws):
    for sub in ("cas-objdir", "cas-exedir", "cas-pchdir", "cas-pcmdir", "bin"):
        shutil.rmtree(os.path.join(ws, sub), ignore_errors=True)
