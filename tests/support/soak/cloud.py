"""The soak's ``cloud`` topology (tests/support/soak/runner.py ``--topology cloud``): the mini-cloud
(tests/support/minicloud: Keystone, Placement, Neutron, Nova with two fake computes, MariaDB, RabbitMQ) and its
fault injector, of the interface tests/support/soak/faults.py describes.

The cloud is the running one ``MINICLOUD_STATE`` names (default .state/minicloud), with two computes in service
(devstack0 and devstack1): the soak adopts it and leaves it running (the runner deletes what it made there). It is
started by ``make soak SOAK_TOPOLOGY=cloud`` (``cloud.sh up`` in a network namespace of its own, ``down`` after) or
by the e2e fixtures (``cloud_two_hosts``, tests/e2e/test_soak_cloud.py): never here (tests/unit/test_shared_fixtures.py).

Faults (each healed within a bounded wait; ``heal`` raises FaultNotHealed saying what is missing):

    kill_placement     kill -9 of Placement's uWSGI master (its workers stay behind, holding the port);
                       heal: the group killed, ``cloud.sh start-api placement`` (as systemd would)
    kill_neutron_api   the same of neutron-server's API (uWSGI)
    kill_nova_api      the same of nova-api (uWSGI)
    pause_neutron_api  SIGSTOP of neutron-server's API group, past the clients' timeouts; heal: SIGCONT
    pause_nova_api     the same of nova-api
    pause_mariadb      SIGSTOP of MariaDB (every service's database), past the clients' timeouts; heal: SIGCONT
    slow_placement     Placement's group stopped 70 % of every 0.2 s; heal: the duty cycle ended

A heal returns once every API answers HTTP again and a read through each (Placement, Neutron, Nova: one that reaches
their databases) succeeds, and ``cloud.sh status`` says every process runs.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.support.soak.faults import (FaultNotHealed, Injected, SlowedGroupFaults, _group_alive, _group_pids,
                                       _http_ok, _wait)

ROOT = Path(__file__).resolve().parents[3]
CLOUD_SH = ROOT / "tests" / "support" / "minicloud" / "cloud.sh"
CLOUD = "minicloud"
# the mode the soak's cloud runs in: two computes in service (moves between them), Neutron's placement plugin on
MODE = {"MINICLOUD_PLACEMENT_PLUGIN": "1", "MINICLOUD_SRIOV_COMPUTE": "0", "MINICLOUD_COMPUTES": "2",
        "MINICLOUD_SPARE_COMPUTE": "0"}
APIS = {"placement": 8778, "nova-api": 8774, "neutron-api": 9696}

CLOUD_KINDS = ("kill_placement", "kill_neutron_api", "kill_nova_api", "pause_neutron_api", "pause_nova_api",
               "pause_mariadb", "slow_placement")
# seconds a fault stays before its heal (a pause past the clients' 5 s timeout; a kill: until "systemd" restarts it)
CLOUD_HOLD = {"kill_placement": (1.0, 4.0), "kill_neutron_api": (1.0, 4.0), "kill_nova_api": (1.0, 4.0),
              "pause_neutron_api": (6.0, 10.0), "pause_nova_api": (6.0, 10.0), "pause_mariadb": (6.0, 10.0),
              "slow_placement": (6.0, 12.0)}


def state_dir() -> Path:
    return Path(os.environ.get("MINICLOUD_STATE") or ROOT / ".state" / "minicloud")


class MiniCloudTopology:
    """The running mini-cloud as the soak's ``server``: env(), connect(), cloud, state_dir, describe(), start() (it
    runs), stop() (nothing)."""

    def __init__(self):
        self.state_dir = state_dir()
        self.cloud = CLOUD
        self.clouds_yaml = self.state_dir / "clouds.yaml"

    def cloud_sh(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(CLOUD_SH), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **MODE, "MINICLOUD_STATE": str(self.state_dir)})

    def start(self) -> None:
        """The cloud runs, with two computes in service (it is not started here)."""
        r = self.cloud_sh("status", timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"the mini-cloud at {self.state_dir} is not running (cloud.sh status):\n{r.stdout}")
        mode = (self.state_dir / "run" / "mode.env").read_text()
        if "COMPUTES=2" not in mode or ("SPARE=1" in mode and "SPARE_ACTIVE=1" not in mode):
            raise RuntimeError(f"the soak's cloud needs two computes in service; the running one: {mode!r}")

    def stop(self) -> None:
        """Nothing: the cloud is left running (its starter stops it)."""

    def describe(self) -> str:
        return ("the mini-cloud: Keystone, openstack-placement 16.0.0 (uWSGI), Neutron 29 (placement plugin), "
                "Nova 34 with two fake computes, MariaDB, RabbitMQ")

    def env(self) -> dict:
        return {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": self.cloud,
                "MINICLOUD_STATE": str(self.state_dir)}

    def connect(self):
        import openstack.config
        from openstack import connection
        cfg = openstack.config.OpenStackConfig(config_files=[str(self.clouds_yaml)])
        return connection.Connection(config=cfg.get_one(cloud=self.cloud))

    def pid(self, service: str) -> int:
        return int((self.state_dir / "run" / f"{service}.pid").read_text())


class CloudFaults(SlowedGroupFaults):
    """Faults of a running mini-cloud (CLOUD_KINDS), the soak's injector interface."""

    HEAL_BOUND = 120.0

    def __init__(self, server: MiniCloudTopology, *, log=print):
        self.server = server
        self.log = log
        self.kinds: tuple[str, ...] = CLOUD_KINDS
        self.lock = threading.RLock()
        self._active: dict[int, Injected] = {}
        self._stopped: dict[int, list[int]] = {}
        self._slow: dict[int, tuple[threading.Event, threading.Thread]] = {}
        self._expected = len(self.serving_processes())

    # ------------------------------------------------------------ what is running
    def _groups(self) -> list[int]:
        run = self.server.state_dir / "run"
        out = []
        for f in sorted(run.glob("*.pid")):
            if f.stem in ("mariadb", "rabbitmq"):  # wrappers: mariadbd.pid and rabbitmq.beam.pid name the servers
                continue
            try:
                out.append(int(f.read_text().split()[0]))
            except (ValueError, IndexError):
                pass
        return out

    def serving_processes(self) -> list[int]:
        """The cloud's live processes: those of the process groups its pid files name."""
        return sorted(p for g in self._groups() for p in _group_pids(g))

    def expected_processes(self) -> int:
        return self._expected

    def serves(self) -> tuple[bool, str]:
        """Every API answers HTTP, and a read through Placement, Neutron and Nova reaches their databases."""
        for name, port in APIS.items():
            if not _http_ok(f"http://127.0.0.1:{port}/"):
                return False, f"{name} does not answer HTTP"
        try:
            from minbw.placement.client import Placement, RetryPolicy
            conn = self.server.connect()
            Placement(conn, retry=RetryPolicy(attempts=1, timeout=5.0)).list_providers()
            list(conn.network.networks(limit=1))
            list(conn.compute.servers(limit=1))
        except Exception as e:
            return False, f"a read failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        return True, ""

    # ------------------------------------------------------------ the interface
    def inject(self, kind: str, rng: random.Random) -> Injected:
        with self.lock:
            got = self._inject(kind, rng)
            self._active[id(got)] = got
            return got

    def _inject(self, kind: str, rng: random.Random) -> Injected:
        now = time.monotonic
        if kind.startswith("kill_"):
            name = {"kill_placement": "placement", "kill_neutron_api": "neutron-api", "kill_nova_api": "nova-api"}[kind]
            pid = self.server.pid(name)
            os.kill(pid, signal.SIGKILL)
            return Injected(kind, f"{name} uWSGI master {pid}", now(),
                            f"kill -9; heal: its group killed, cloud.sh start-api {name}")
        if kind.startswith("pause_"):
            name = {"pause_neutron_api": "neutron-api", "pause_nova_api": "nova-api", "pause_mariadb": "mariadbd"}[kind]
            pids = _group_pids(self.server.pid(name)) if name != "mariadbd" else [self.server.pid(name)]
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            got = Injected(kind, f"{name} ({len(pids)} processes)", now(), "SIGSTOP; heal: SIGCONT")
            self._stopped[id(got)] = pids
            return got
        if kind == "slow_placement":
            stop = threading.Event()
            group = self.server.pid("placement")
            t = threading.Thread(target=self._duty_cycle, args=(group, stop), daemon=True, name="slow_placement")
            t.start()
            got = Injected(kind, f"placement uWSGI group {group}", now(),
                           f"SIGSTOP {self.SLOW_STOPPED:.0%} of every {self.SLOW_PERIOD} s")
            self._slow[id(got)] = (stop, t)
            return got
        raise ValueError(f"unknown fault kind {kind!r}; this topology's: {', '.join(self.kinds)}")

    def _heal(self, injected: Injected) -> None:
        kind = injected.kind
        self._active.pop(id(injected), None)
        if kind.startswith("kill_"):
            name = injected.target.split()[0]
            group = int(injected.target.rsplit(" ", 1)[1])
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _wait(f"{name}'s killed group's exit", lambda: not _group_alive(group), 15,
                  lambda: f"still alive: {_group_pids(group)}")
            r = self.server.cloud_sh("start-api", name, timeout=self.HEAL_BOUND)
            if r.returncode != 0:
                raise FaultNotHealed(f"cloud.sh start-api {name} failed ({r.returncode}): "
                                     f"{(r.stderr.strip().splitlines() or [''])[-1][:300]}")
        elif kind.startswith("pause_"):
            for p in self._stopped.pop(id(injected), []):
                try:
                    os.kill(p, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        elif kind == "slow_placement":
            stop, t = self._slow.pop(id(injected))
            stop.set()
            t.join(5)
        last = [""]

        def serving() -> bool:
            ok, why = self.serves()
            last[0] = why
            return ok
        _wait(f"the cloud after {kind} ({injected.target})", serving, self.HEAL_BOUND, lambda: last[0])
        _wait(f"the cloud's processes after {kind}", lambda: len(self.serving_processes()) == self._expected, 30,
              lambda: f"{len(self.serving_processes())} of {self._expected} processes")
