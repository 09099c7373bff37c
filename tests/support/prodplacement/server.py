"""The production-style Placement (tests/support/prodplacement/prodplacement.sh) as an object for tests and bench.

Same surface as tests.conftest.PlacementServer (state_dir, url, clouds_yaml, cloud, start/stop, env,
connect, pids), so a test or a bench section takes either.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "prodplacement.sh"
CLOUD = "prodplacement"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProdPlacement:
    """openstack-placement under uWSGI (``workers`` processes) on its own MariaDB; Keystone optional;
    upstream's ``allocation_conflict_retry_count`` (10) unless ``conflict_retries`` says otherwise; stock, or
    ``patched`` with patches/placement/*.patch (docs/placement-overcommit.md).

    Ports are free ones picked here unless given, so it never clashes with the mini-cloud or with a
    ``make prod-placement-up`` instance.
    """

    def __init__(self, state_dir: Path, *, workers: int = 4, keystone: bool = False, token_expiration: int = 3600,
                 conflict_retries: int = 10, patched: bool | None = None,
                 port: int | None = None, db_port: int | None = None, keystone_port: int | None = None):
        self.state_dir = Path(state_dir)
        self.workers = workers
        self.keystone = keystone
        self.token_expiration = token_expiration
        self.conflict_retries = conflict_retries
        # patches/placement/*.patch applied or not; None: as PRODPLACEMENT_PATCHED says (the test option:
        # PRODPLACEMENT_PATCHED=1 make test), stock by default, as upstream ships it
        self.patched = os.environ.get("PRODPLACEMENT_PATCHED", "0") == "1" if patched is None else patched
        self.port = port or free_port()
        self.db_port = db_port or free_port()
        self.keystone_port = keystone_port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.keystone_url = f"http://127.0.0.1:{self.keystone_port}/v3" if keystone else None
        self.clouds_yaml = self.state_dir / "clouds.yaml"
        self.cloud = CLOUD
        self.log = self.state_dir / "prodplacement.out"

    def _script_env(self) -> dict:
        return {**os.environ, "PRODPLACEMENT_STATE": str(self.state_dir), "PRODPLACEMENT_WORKERS": str(self.workers),
                "PRODPLACEMENT_AUTH": "keystone" if self.keystone else "noauth2",
                "PRODPLACEMENT_TOKEN_EXPIRATION": str(self.token_expiration),
                "PRODPLACEMENT_CONFLICT_RETRIES": str(self.conflict_retries),
                "PRODPLACEMENT_PATCHED": "1" if self.patched else "0",
                "PRODPLACEMENT_PORT": str(self.port), "PRODPLACEMENT_DB_PORT": str(self.db_port),
                "PRODPLACEMENT_KEYSTONE_PORT": str(self.keystone_port)}

    def _script(self, cmd: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SCRIPT), cmd], env=self._script_env(), capture_output=True, text=True,
                              timeout=timeout)

    def start(self, timeout: float = 900) -> None:
        """``prodplacement.sh up`` (installs on a fresh machine: apt mariadb-server, the .venv-cloud)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        r = self._script("up", timeout)
        self.log.write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"prodplacement.sh up failed ({r.returncode}):\n{r.stderr[-4000:]}")

    def stop(self) -> None:
        self._script("down", 120)

    def describe(self) -> str:
        return (f"openstack-placement 16.0.0 {'patched (patches/placement)' if self.patched else 'stock'}, "
                f"allocation_conflict_retry_count {self.conflict_retries}, {self.workers} uWSGI workers, MariaDB")

    def status(self) -> str:
        return self._script("status", 30).stdout

    @property
    def proc(self):
        """For code written for PlacementServer: ``proc.pid`` is uWSGI's master (see pids() for all)."""
        return _Pid(self.pid("placement"))

    def pid(self, service: str) -> int:
        return int((self.state_dir / "run" / f"{service}.pid").read_text())

    def worker_pids(self) -> list[int]:
        """Placement's uWSGI worker processes (children of the master)."""
        master = self.pid("placement")
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def pids(self) -> list[int]:
        """Every process serving Placement: uWSGI master and workers, MariaDB (for CPU accounting)."""
        return [self.pid("placement"), *self.worker_pids(), self.pid("mariadb")]

    def env(self) -> dict:
        return {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": self.cloud}

    def connect(self):
        import openstack.config
        from openstack import connection
        cfg = openstack.config.OpenStackConfig(config_files=[str(self.clouds_yaml)])
        return connection.Connection(config=cfg.get_one(cloud=self.cloud))

    def placement_log(self) -> str:
        return (self.state_dir / "log" / "placement.out").read_text(errors="replace")

    def serving_pids(self) -> set[int]:
        """The worker pids uWSGI's request log names (``[pid: N|app: 0|req: ...]``)."""
        return {int(p) for p in re.findall(r"^\[pid: (\d+)\|app", self.placement_log(), re.M)}

    def tokens_issued(self) -> int:
        """Tokens Keystone issued so far (its uWSGI request log: POST /v3/auth/tokens answered 201)."""
        text = (self.state_dir / "log" / "keystone.out").read_text(errors="replace")
        return len(re.findall(r"POST /v3/auth/tokens => .*\(HTTP/1\.[01] 201\)", text))


class _Pid:
    def __init__(self, pid: int):
        self.pid = pid

    def poll(self):
        try:
            os.kill(self.pid, 0)
            return None
        except OSError:
            return 1
