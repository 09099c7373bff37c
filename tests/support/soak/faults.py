"""Faults of the soak (tests/support/soak/runner.py): the interface every topology's injector has, and the
production-style Placement's (tests/support/prodplacement/server.py: uWSGI master and workers, its own MariaDB).

The interface (the Galera injector, tests/support/galera/faults.py, has the same shape)::

    Injected(kind, target, started, detail)          frozen; started is time.monotonic()
    class <Topology>Faults:
        kinds: tuple[str, ...]
        def inject(self, kind: str, rng: random.Random) -> Injected   # returns once the fault is in place
        def heal(self, injected: Injected) -> None   # undoes it; returns once the target serves again (bounded
                                                     # wait; raises FaultNotHealed saying what is still missing)
        def heal_all(self) -> None                   # at the end / on error: undo everything still injected

A killed process is started again by heal, as its supervisor (systemd) would: with the command line, environment
and working directory it ran with (read from /proc when the injector is made), in a session of its own, its pid
written where prodplacement.sh's ``down`` finds it.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Injected:
    kind: str
    target: str
    started: float  # time.monotonic()
    detail: str


class FaultNotHealed(RuntimeError):
    """heal() waited its bound and the target does not serve again; the message says what is missing."""


@dataclass(frozen=True)
class _Launch:
    argv: tuple[str, ...]
    env: dict
    cwd: str
    log: Path
    pidfile: Path


def _launch_of(pid: int, log: Path, pidfile: Path) -> _Launch:
    argv = tuple(a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a)
    env = dict(e.decode(errors="replace").split("=", 1) for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
               if b"=" in e)
    return _Launch(argv, env, os.readlink(f"/proc/{pid}/cwd"), log, pidfile)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (our own child not yet reaped) is not alive
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(_alive(p) for p in _group_pids(pgid))


def _group_pids(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int(d.joinpath("stat").read_text().split(") ", 1)[1].split()[2]) == pgid:
                    out.append(int(d.name))
            except (FileNotFoundError, IndexError, ProcessLookupError):
                pass
    return out


def _http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        urllib.request.urlopen(url, timeout=timeout).close()
        return True
    except urllib.error.HTTPError as e:
        return e.code < 500
    except OSError:
        return False


def _wait(what: str, check, bound: float, why=lambda: "") -> None:
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.3)
    raise FaultNotHealed(f"{what} not back within {bound:.0f} s{(': ' + why()) if why() else ''}")


PROD_KINDS = ("kill_placement_master", "kill_placement_worker", "pause_placement", "pause_placement_worker",
              "kill_mariadb", "pause_mariadb", "slow_placement", "fill_mariadb_disk")


class SlowedGroupFaults:
    """What the topologies' fault injectors share: a process group slowed by a SIGSTOP/SIGCONT duty cycle, a heal
    under the injector's lock (``self.lock``; ``self._heal`` undoes one fault), and the heal of every fault still
    active (``self._active``) with nothing left stopped (``self._stopped``: pids by fault)."""

    SLOW_PERIOD = 0.2     # seconds of one SIGSTOP/SIGCONT cycle of a slowed process group
    SLOW_STOPPED = 0.7    # the share of each cycle the group is stopped

    def _heal(self, injected: Injected) -> None:
        raise NotImplementedError

    def _duty_cycle(self, group: int, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                os.killpg(group, signal.SIGSTOP)
                stop.wait(self.SLOW_PERIOD * self.SLOW_STOPPED)
            finally:
                try:
                    os.killpg(group, signal.SIGCONT)
                except ProcessLookupError:
                    return
            stop.wait(self.SLOW_PERIOD * (1 - self.SLOW_STOPPED))

    def heal(self, injected: Injected) -> None:
        with self.lock:
            self._heal(injected)

    def heal_all(self) -> None:
        errors = []
        for got in list(self._active.values()):
            try:
                self.heal(got)
            except FaultNotHealed as e:
                errors.append(str(e))
        # nothing left stopped, whatever happened
        for pids in self._stopped.values():
            for p in pids:
                try:
                    os.kill(p, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        self._stopped.clear()
        if errors:
            raise FaultNotHealed("; ".join(errors))


class ProdPlacementFaults(SlowedGroupFaults):
    """Faults of a started :class:`tests.support.prodplacement.server.ProdPlacement`.

    ``small_datadir_mb``: when > 0 and the process may mount (root, in a mount namespace of its own: the runner's
    ``--netns``), MariaDB's datadir is moved onto a tmpfs of that size first (MariaDB stopped cleanly and started
    again on it), so ``fill_mariadb_disk`` can fill it; otherwise that kind is left out of ``kinds``.
    """

    HEAL_BOUND = 90.0

    def __init__(self, server, *, small_datadir_mb: int = 0, log=print):
        self.server = server
        self.log = log
        s = Path(server.state_dir)
        self.run, self.logdir = s / "run", s / "log"
        self._launch = {"placement": _launch_of(server.pid("placement"), self.logdir / "placement.out",
                                                self.run / "placement.pid"),
                        "mariadb": _launch_of(server.pid("mariadb"), self.logdir / "mariadb.out",
                                              self.run / "mariadb.pid")}
        self._active: dict[int, Injected] = {}
        self._down: set[str] = set()    # killed by a fault not yet healed: not the supervisor's to start
        self.restarts: list[tuple[float, str]] = []
        self.lock = threading.RLock()   # inject, heal and the supervisor, one at a time
        self._stopped: dict[int, list[int]] = {}    # id(injected) -> pids stopped by it
        self._slow: dict[int, tuple[threading.Event, threading.Thread]] = {}
        self.datadir: Path | None = None
        self.filler: Path | None = None
        kinds = list(PROD_KINDS)
        # MariaDB durable: prodplacement.sh starts it with innodb_flush_log_at_trx_commit=0 (no log write per
        # commit), and a kill -9 then loses what it committed in its last second: a free Placement answered 204
        # came back (seed 47, docs/soak.md). The soak's MariaDB writes its log at each commit.
        launch = self._launch["mariadb"]
        self._launch["mariadb"] = _Launch(
            tuple("--innodb-flush-log-at-trx-commit=1" if a.startswith("--innodb-flush-log-at-trx-commit=") else a
                  for a in launch.argv), launch.env, launch.cwd, launch.log, launch.pidfile)
        if small_datadir_mb > 0 and self._small_datadir(small_datadir_mb):
            self.datadir = s / "mysql"
        else:
            kinds.remove("fill_mariadb_disk")
            self._restart_mariadb()
        self.kinds: tuple[str, ...] = tuple(kinds)

    # ------------------------------------------------------------ what is running
    def placement_group(self) -> int:
        return self.server.pid("placement")

    def expected_processes(self) -> int:
        return 1 + self.server.workers + 1

    def serving_processes(self) -> list[int]:
        """The topology's live processes: uWSGI master and workers, MariaDB (a leak shows as more than
        expected_processes())."""
        mark = str(Path(self.server.state_dir))
        out = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if mark in d.joinpath("cmdline").read_bytes().decode(errors="replace") and _alive(int(d.name)):
                        out.append(int(d.name))
                except (FileNotFoundError, ProcessLookupError):
                    pass
        return out

    def serves(self) -> bool:
        return _http_ok(self.server.url + "/")

    def writes(self) -> bool:
        """A write through Placement reaches its database (a new trait; a full disk or a stopped MariaDB fails it)."""
        try:
            api = self._api()
            api.create_trait(f"CUSTOM_SOAK_PROBE_{os.getpid()}_{time.monotonic_ns()}")
            return True
        except Exception:
            return False

    def _api(self):
        from minbw.placement.client import Placement, RetryPolicy
        return Placement(self.server.connect(), retry=RetryPolicy(attempts=1, timeout=5.0))

    # ------------------------------------------------------------ the datadir on a small file system
    def _stop_mariadb(self) -> None:
        # every worker's app loaded first (lazy-apps): once, MariaDB stopped here while the last worker was still
        # loading Placement's app; the load failed and uWSGI ended itself (need-app)
        _wait("Placement's workers' apps", lambda: self._apps_loaded() >= self.server.workers, 60)
        pid = self.server.pid("mariadb")
        os.kill(pid, signal.SIGTERM)
        _wait("MariaDB's clean stop", lambda: not _alive(pid), 60)

    def _restart_mariadb(self) -> None:
        self._stop_mariadb()
        self._start("mariadb")
        _wait("MariaDB started again (durable)", self.writes, 60)

    def _small_datadir(self, mb: int) -> bool:
        s = Path(self.server.state_dir)
        small = s / "mysql"
        if os.geteuid() != 0 or os.environ.get("SOAK_PRIVATE_MOUNTS") != "1":
            self.log("fill_mariadb_disk left out: needs root in a mount namespace of its own (runner --netns)")
            return False
        self._stop_mariadb()
        big = s / "mysql-big"
        small.rename(big)
        small.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mb}m", "soak-datadir", str(small)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            small.rmdir()
            big.rename(small)
            self.log(f"fill_mariadb_disk left out: mount tmpfs failed: {r.stderr.strip()}")
            self._start("mariadb")
            return False
        for item in big.iterdir():
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, small / item.name)
        shutil.rmtree(big)
        self._start("mariadb")
        _wait("MariaDB on its small datadir", self.writes, 60)
        self.log(f"MariaDB's datadir on a tmpfs of {mb} MB ({shutil.disk_usage(small).free // 2**20} MB free)")
        return True

    def _apps_loaded(self) -> int:
        return (self.logdir / "placement.out").read_text(errors="replace").count("WSGI app 0 (mountpoint='') ready")

    def supervise(self) -> None:
        """What systemd's Restart= does: uWSGI or MariaDB started again when it is gone outside a fault. Each
        restart is recorded in ``restarts``."""
        with self.lock:
            self._supervise()

    def _supervise(self) -> None:
        for name in ("placement", "mariadb"):
            if name in self._down:
                continue
            pid = self.server.pid(name)
            if not _alive(pid):
                self._reap()
                if _group_alive(pid):
                    os.killpg(pid, signal.SIGKILL)
                    _wait(f"{name}'s old processes' exit", lambda gone=pid: not _group_alive(gone), 15)
                self.restarts.append((time.monotonic(), name))
                self.log(f"supervisor: {name} ({pid}) was gone: started again")
                self._start(name)

    # ------------------------------------------------------------ start again what was killed
    def _start(self, name: str) -> int:
        launch = self._launch[name]
        with open(launch.log, "ab") as out:
            proc = subprocess.Popen(launch.argv, env=launch.env, cwd=launch.cwd, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        launch.pidfile.write_text(f"{proc.pid}\n")
        self._children = getattr(self, "_children", [])
        self._children.append(proc)
        return proc.pid

    def _reap(self) -> None:
        for p in getattr(self, "_children", []):
            p.poll()

    # ------------------------------------------------------------ the interface
    def inject(self, kind: str, rng: random.Random) -> Injected:
        with self.lock:
            return self._inject(kind, rng)

    def _inject(self, kind: str, rng: random.Random) -> Injected:
        now = time.monotonic
        if kind == "kill_placement_master":
            pid = self.placement_group()
            self._down.add("placement")
            os.kill(pid, signal.SIGKILL)
            got = Injected(kind, f"placement uWSGI master {pid}", now(), "kill -9; heal: its group killed, started again")
        elif kind == "kill_placement_worker":
            workers = sorted(self.server.worker_pids())
            pid = workers[rng.randrange(len(workers))]
            os.kill(pid, signal.SIGKILL)
            got = Injected(kind, f"placement uWSGI worker {pid}", now(), "kill -9; uWSGI's master starts another")
        elif kind in ("pause_placement", "pause_placement_worker", "pause_mariadb"):
            if kind == "pause_placement":
                pids = _group_pids(self.placement_group())
                target = f"placement uWSGI master and {len(pids) - 1} workers"
            elif kind == "pause_placement_worker":
                workers = sorted(self.server.worker_pids())
                pids = [workers[rng.randrange(len(workers))]]
                target = f"placement uWSGI worker {pids[0]}"
            else:
                pids = [self.server.pid("mariadb")]
                target = f"MariaDB {pids[0]}"
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            got = Injected(kind, target, now(), "SIGSTOP; heal: SIGCONT")
            self._stopped[id(got)] = pids
        elif kind == "kill_mariadb":
            pid = self.server.pid("mariadb")
            self._down.add("mariadb")
            os.kill(pid, signal.SIGKILL)
            _wait("MariaDB's death", lambda: (self._reap(), not _alive(pid))[1], 10)
            got = Injected(kind, f"MariaDB {pid}", now(), "kill -9; heal: started again (InnoDB recovery)")
        elif kind == "slow_placement":
            stop = threading.Event()
            group = self.placement_group()
            t = threading.Thread(target=self._duty_cycle, args=(group, stop), daemon=True, name="slow_placement")
            t.start()
            got = Injected(kind, f"placement uWSGI group {group}", now(),
                           f"SIGSTOP {self.SLOW_STOPPED:.0%} of every {self.SLOW_PERIOD} s")
            self._slow[id(got)] = (stop, t)
        elif kind == "fill_mariadb_disk":
            assert self.datadir is not None, "fill_mariadb_disk needs the small datadir"
            self.filler = self.datadir / "soak-filler"
            free = shutil.disk_usage(self.datadir).free
            with open(self.filler, "wb") as f:
                block = b"\0" * (1 << 20)
                try:
                    for _ in range(free // len(block) + 1):
                        f.write(block)
                    f.flush()
                except OSError:
                    pass
            got = Injected(kind, f"MariaDB datadir {self.datadir}", now(),
                           f"filled ({free // 2**20} MB written, {shutil.disk_usage(self.datadir).free // 1024} kB left)")
        else:
            raise ValueError(f"unknown fault kind {kind!r}; this topology's: {', '.join(self.kinds)}")
        self._active[id(got)] = got
        return got

    def _heal(self, injected: Injected) -> None:
        kind = injected.kind
        self._active.pop(id(injected), None)
        if kind == "kill_placement_master":
            group = int(injected.target.rsplit(" ", 1)[1])
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _wait("the killed master's workers' exit", lambda: not _group_alive(group), 15,
                  lambda: f"still alive: {_group_pids(group)}")
            self._start("placement")
            self._down.discard("placement")
        elif kind in ("pause_placement", "pause_placement_worker", "pause_mariadb"):
            for p in self._stopped.pop(id(injected), []):
                try:
                    os.kill(p, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        elif kind == "kill_mariadb":
            self._start("mariadb")
            self._down.discard("mariadb")
        elif kind == "slow_placement":
            stop, t = self._slow.pop(id(injected))
            stop.set()
            t.join(5)
        elif kind == "fill_mariadb_disk":
            if self.filler is not None:
                self.filler.unlink(missing_ok=True)
        self._wait_serving(injected)

    def _wait_serving(self, injected: Injected) -> None:
        what = f"Placement after {injected.kind} ({injected.target})"
        _wait(what + ": its HTTP answer", lambda: (self._supervise(), self.serves())[1], self.HEAL_BOUND, lambda: self._missing())
        if injected.kind in ("kill_mariadb", "pause_mariadb", "fill_mariadb_disk", "kill_placement_master"):
            _wait(what + ": a write reaching MariaDB", self.writes, self.HEAL_BOUND, lambda: self._missing())
        _wait(what + f": {self.server.workers} uWSGI workers",
              lambda: (self._reap(), len(self.serving_processes()) == self.expected_processes())[1],
              30, lambda: self._missing())

    def _missing(self) -> str:
        procs = self.serving_processes()
        return (f"{len(procs)} of {self.expected_processes()} processes (master, {self.server.workers} workers, "
                f"MariaDB) alive")

    def close(self) -> None:
        """After the server's stop: unmount the small datadir (a private mount namespace drops it anyway)."""
        self._reap()
        if self.datadir is not None:
            subprocess.run(["umount", "-l", str(self.datadir)], capture_output=True)
