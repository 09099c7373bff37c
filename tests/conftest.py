"""Shared fixtures: a real openstack-placement (the embedded default) for the whole session."""
from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import timing

REPO = Path(__file__).resolve().parent.parent
MINBW = [sys.executable, "-m", "minbw.cli"]


def doc_commands(page: Path, section: str) -> list[str]:
    """The commands (``$ ...`` lines) of the first console block under ``section`` of a page of docs/: what a test
    runs, exactly as the page shows them."""
    text = page.read_text()
    block = text[text.index(section):].split("```console", 1)[1].split("```", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


# the time per suite and the slowest tests at the end of every run (tests/support/timing.py)
pytest_addoption = timing.pytest_addoption
pytest_configure = timing.pytest_configure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PlacementServer:
    """``minbw placement serve`` in a subprocess. ``schemas_checked_once``: through tests/support/placement_serve.py
    (the tests' session server; the benchmarks' embedded Placement, bench/common.py, stays as users run it)."""

    def __init__(self, state_dir: Path, schemas_checked_once: bool = False):
        self.state_dir = state_dir
        self.serve = [sys.executable, "-m", "tests.support.placement_serve"] if schemas_checked_once else MINBW
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.clouds_yaml = state_dir / "clouds.yaml"
        self.log = state_dir / "serve.out"
        self.cloud = "minbw-local"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "w")
        self.proc = subprocess.Popen(self.serve + ["placement", "serve", "--port", str(self.port),
                                                   "--state-dir", str(self.state_dir)], stdout=out,
                                     stderr=subprocess.STDOUT, cwd=None if self.serve is MINBW else REPO)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if "placement ready on" in self.log.read_text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"placement did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc else []

    def env(self) -> dict:
        # the provider cache (on by default in the CLI and modules) goes to this server's state dir
        return {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": "minbw-local",
                "XDG_CACHE_HOME": str(self.state_dir / "xdg-cache")}

    def connect(self):
        import openstack.config
        from openstack import connection
        cfg = openstack.config.OpenStackConfig(config_files=[str(self.clouds_yaml)])
        return connection.Connection(config=cfg.get_one(cloud="minbw-local"))


def run_drift(conn, api, *, agent_configs=(), host=None, neutron=True, chassis=(), southbound=None):
    """The drift use case's rows on ``api``'s cloud (``conn`` None: no Neutron to read); ``chassis`` and
    ``southbound``: OVN chassis already read (the ini and the agent side)."""
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.drift import DriftRequest, drift
    from minbw.usecases.providers import OvnSources
    request = DriftRequest(tuple(agent_configs), host, neutron and conn is not None,
                           chassis=OvnSources(values=tuple(chassis)),
                           southbound=OvnSources(values=tuple(southbound)) if southbound is not None else OvnSources())
    return list(drift(Cloud(lambda: conn or api.conn), request).rows)


class CallCounter:
    """Counts every HTTP request the connection really sends (requests' response hook)."""

    def __init__(self, conn):
        self.calls: list[tuple[str, str]] = []
        conn.session.session.hooks["response"].append(self._hook)

    def _hook(self, resp, *args, **kwargs):
        self.calls.append((resp.request.method, resp.request.path_url))

    def reset(self) -> None:
        self.calls.clear()

    @property
    def total(self) -> int:
        return len(self.calls)

    @property
    def writes(self) -> int:
        return sum(1 for m, _ in self.calls if m != "GET")

    def by_method(self) -> dict:
        return dict(collections.Counter(m for m, _ in self.calls))


def wipe(api) -> None:
    """Remove every allocation and provider: each test starts from an empty Placement."""
    provs = api.list_providers()
    consumers = set()
    for p in provs:
        consumers |= set(api.provider_allocations(p.uuid))
    for c in consumers:
        api.request("delete", f"/allocations/{c}", "1.0")
    by_uuid = {p.uuid: p for p in provs}

    def depth(p):
        d = 0
        while p.parent_uuid and p.parent_uuid in by_uuid:
            p, d = by_uuid[p.parent_uuid], d + 1
        return d
    for p in sorted(provs, key=depth, reverse=True):
        api.delete_provider(p.uuid)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The command line's wheel, as `make dist` builds it (without its sdist and the collection), built once.

    From a copy: setuptools writes build/ and *.egg-info next to pyproject.toml (the copy also follows python/LICENSE,
    a symlink). pip builds in an isolated environment with the setuptools that [build-system] asks for (PEP 639)."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(REPO / "python", tmp / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(tmp / "python")],
                   check=True, capture_output=True)
    (built,) = (tmp / "dist").glob("minbw-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="session")
def placement_server(tmp_path_factory):
    server = PlacementServer(tmp_path_factory.mktemp("placement"), schemas_checked_once=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prod_placement(tmp_path_factory):
    """The production-style Placement (tests/support/prodplacement/prodplacement.sh): uWSGI, 4 workers, its own
    MariaDB, noauth2, upstream's allocation_conflict_retry_count 10; free ports. Stock openstack-placement,
    or with patches/placement/*.patch when PRODPLACEMENT_PATCHED=1 (docs/placement-overcommit.md). Installs
    what it needs on a fresh machine (mariadb-server, .venv-cloud)."""
    from tests.support.prodplacement.server import ProdPlacement
    server = ProdPlacement(tmp_path_factory.mktemp("prodplacement"), workers=4)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def prod_placement_keystone(tmp_path_factory):
    """As prod_placement, behind a real Keystone whose tokens live 20 seconds."""
    from tests.support.prodplacement.server import ProdPlacement
    server = ProdPlacement(tmp_path_factory.mktemp("prodplacement-ks"), workers=2, keystone=True,
                           token_expiration=KEYSTONE_TOKEN_SECONDS)
    try:
        server.start()
        yield server
    finally:
        server.stop()


KEYSTONE_TOKEN_SECONDS = 20


@pytest.fixture
def placement(placement_server):
    """A Placement API client on an empty real Placement, with an HTTP call counter."""
    from minbw.placement.client import Placement
    conn = placement_server.connect()
    api = Placement(conn)
    wipe(api)
    api.counter = CallCounter(conn)
    return api
