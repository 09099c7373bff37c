"""The container image of contrib/container/Containerfile, built from the wheel with buildah (no daemon; Debian's
package, installed when missing) on a Debian 12 base made by debootstrap (tests/support/container/image.sh: no
container registry is reached here), then run: its user not root, its entrypoint the exporter, which collects from
the session's embedded Placement with a mounted config. About 4 minutes the first time on a machine (the base made,
kept in .state/container), 1-2 after; run by ``make container`` (MINBW_CONTAINER=1), skipped by ``make test``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(os.environ.get("MINBW_CONTAINER") != "1",
                                reason="builds a container image: make container (MINBW_CONTAINER=1)")
IMAGE = ["bash", str(REPO / "tests/support/container/image.sh")]
TAG = f"localhost/minbw-exporter:test-{os.getpid()}"


def buildah(*args: str) -> str:
    return subprocess.run([*IMAGE, "buildah", *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def image(tmp_path, wheel):
    for step in ("install", "base"):
        subprocess.run([*IMAGE, step], check=True, capture_output=True, text=True)
    context = tmp_path / "dist"  # as `make dist` leaves it: the wheel (the build copies no other file)
    context.mkdir()
    shutil.copy(wheel, context)
    built = subprocess.run([*IMAGE, "build", str(context), TAG], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    yield TAG
    buildah("rmi", "--force", TAG)


def test_the_image_runs_the_exporter_as_its_own_user(image, tmp_path, placement_server):
    config = json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"]
    assert config["User"] == "10001:10001" and "9817/tcp" in config["ExposedPorts"]
    assert config["Entrypoint"] == ["/opt/minbw/bin/minbw", "exporter"]
    assert config["Cmd"] == ["--config", "/etc/minbw/exporter.yaml"]
    assert {"XDG_CACHE_HOME=/var/cache/minbw", "OS_CLIENT_CONFIG_FILE=/etc/minbw/clouds.yaml"} <= set(config["Env"])

    # the config and clouds.yaml as an operator mounts them (readable by the image's user); chroot isolation shares
    # this machine's network, where the embedded Placement listens
    etc = tmp_path / "etc-minbw"
    etc.mkdir()
    shutil.copy(placement_server.clouds_yaml, etc / "clouds.yaml")
    (etc / "exporter.yaml").write_text(yaml.safe_dump({"port_sizes": {"small": "min_bw:egress:1000"},
                                                       "neutron": False, "audit": False}))
    for path in (etc, *etc.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    container = buildah("from", image)
    try:
        def run(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run([*IMAGE, "buildah", "run", "--isolation", "chroot", "--volume", f"{etc}:/etc/minbw:ro",
                                   container, "--", *argv], capture_output=True, text=True, timeout=300)
        assert run("id", "-u").stdout.strip() == "10001"
        once = run(*config["Entrypoint"], *config["Cmd"], "--once")
        assert once.returncode == 0 and "minbw_collection_duration_seconds" in once.stdout, once.stderr[-3000:]
        # its code is root's: the exporter cannot change it
        assert run("touch", "/opt/minbw/bin/minbw").returncode != 0
    finally:
        buildah("rm", container)
