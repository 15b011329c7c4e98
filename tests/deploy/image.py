"""The image of `make image` through buildah: inspect it, and run the
collector in a working container with host directories mounted."""

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

BUILDAH = ["buildah", "--storage-driver", "vfs"]
DEFAULT_IMAGE = "localhost/otelcol-compiletools:latest"


DEFAULT_GATEWAY_IMAGE = "localhost/otelcol-gateway:latest"


def image_name():
    return os.environ.get("CT_IMAGE") or DEFAULT_IMAGE


def gateway_image_name():
    return os.environ.get("CT_GATEWAY_IMAGE") or DEFAULT_GATEWAY_IMAGE


def buildah(*args, check=True):
    return subprocess.run(BUILDAH + [str(a) for a in args], capture_output=True, text=True, check=check)


def require_image(name=None, target="image"):
    """The image `name` (default: the agent's), failing with the make
    target that builds it when it is missing."""
    name = name or image_name()
    if buildah("inspect", "--type", "image", name, check=False).returncode != 0:
        pytest.fail(f"image {name} not found; build it with `make {target}`", pytrace=False)
    return name


def image_config(name):
    """The OCI config of the image: User, Entrypoint, Cmd, Env, Volumes."""
    return json.loads(buildah("inspect", "--type", "image", name).stdout)["OCIv1"]["config"]


class WorkingContainer:
    """`buildah from` the image; removed on exit."""

    def __init__(self, image):
        self.image = image
        self.name = f"ctdeploy-{uuid.uuid4().hex[:12]}"

    def __enter__(self):
        buildah("from", "--pull=false", "--name", self.name, self.image)
        return self

    def __exit__(self, *exc):
        buildah("rm", self.name, check=False)

    def run_argv(self, command, volumes=(), env=None, user=None):
        """The `buildah run` command line for `command` in this container:
        host network (chroot isolation), `volumes` as (host, container[, "ro"])."""
        argv = BUILDAH + ["run", "--isolation", "chroot"]
        for vol in volumes:
            argv += ["--volume", ":".join(str(v) for v in vol)]
        for key, value in (env or {}).items():
            argv += ["--env", f"{key}={value}"]
        if user is not None:
            argv += ["--user", user]
        return argv + [self.name, "--"] + [str(c) for c in command]

    def run(self, command, **kw):
        return subprocess.run(self.run_argv(command, **kw), capture_output=True, text=True)

    def read(self, path):
        result = self.run(["cat", path])
        assert result.returncode == 0, result.stderr
        return result.stdout


def chown_tree(path, uid, gid):
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(Path(root, name), uid, gid)
    os.chown(path, uid, gid)
