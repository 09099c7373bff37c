"""Faults on the Galera Placement (tests/support/galera/server.py's GaleraPlacement), one at a time, for the tests
and the soak (issue 47): each kind put in place with its target picked by a ``random.Random`` (so a seed replays a
schedule), then undone; heal returns once the cluster is whole again or raises naming what is missing.

The kinds, and what "in place" means (what inject waits for):

- ``kill_node``: SIGKILL of a MariaDB node (galera.sh kill-node): the two others are a primary component of 2 and
  HAProxy marks the node DOWN. Heal: galera.sh start-node (its recovered position, then IST).
- ``kill_api``: SIGKILL of a Placement API process, uWSGI master and workers (galera.sh kill-api): HAProxy marks
  it DOWN. Heal: galera.sh start-api.
- ``pause_node``: SIGSTOP of a node's mariadbd: the process is stopped and the two others have evicted it (Galera's
  evs.suspect_timeout, 5 s). HAProxy's clustercheck (galera.sh's default check) gets no answer from it and marks it
  DOWN after 5 checks; a TCP check (GALERA_DB_CHECK=tcp) keeps it UP, the kernel completing the connect for a stopped
  process (docs/galera.md, "HAProxy's check of the Galera nodes"). Heal: SIGCONT, no sooner than PAUSE_AT_LEAST
  seconds after the stop (past HAProxy's 5 failed checks 2 s apart); the node finds itself outside the primary
  component and rejoins by IST.
- ``drop_link``: HAProxy <-> one node's SQL traffic (and its clustercheck responder's) dropped, its group
  communication (gcomm, IST, SST: other ports)
  untouched: an HTB qdisc on the loopback of the cluster's network namespace, a class whose queue holds 0 packets
  (pfifo limit 0: every packet of it dropped) and u32 filters sending it the packets to and from the node's SQL
  port. This kernel has neither netem nor the drop action (gact), and there is no iptables/nft here. Only in a
  network namespace of the tests' own: not pid 1's, and with no interface but ``lo`` (``unshare --net``, as
  ``make galera`` runs the suite); elsewhere the kind is unavailable. In place: HAProxy marks the node DOWN (its
  checks time out). Heal: the qdisc deleted.
- ``fill_disk``: the node's datadir (a file system of its own: GaleraPlacement(datadir_size_mb=...)) filled by a
  preallocated file: in place once less than 1 MiB is free. Heal: the file deleted; a node that died of it is
  started again.
- ``slow_node``: the node's mariadbd in a CPU cgroup of its own (cgroup v1 ``cpu``, a child of the one it is in, so
  the lanes' CPU accounting, cpuacct, still counts it) limited to SLOW_QUOTA of one CPU: a slow machine, the
  kernel's own duty cycle (netem's delay is not in this kernel). Heal: back in its cgroup, ours removed.

One fault at a time per injector (inject refuses while one is in place, or while the cluster is not whole), and
every kind has one target: a kill_node never leaves fewer than 2 nodes up. Every heal ends by starting whatever node or API process is not
running, then waits (HEAL_TIMEOUT) for the cluster to be whole: 3 nodes Synced in a primary component of 3, HAProxy
has every server UP, both API processes answer.
"""
from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.support.galera.server import NODES, GaleraPlacement
from tests.support.soak.faults import FaultNotHealed, Injected  # the soak's interface: kind, target, started, detail

KINDS = ("kill_node", "kill_api", "pause_node", "drop_link", "fill_disk", "slow_node")
APIS = (1, 2)
NODE_KINDS = ("kill_node", "pause_node", "drop_link", "fill_disk", "slow_node")
# HAProxy's members: checked every 2 s, DOWN after 5 failures (galera.sh's write_haproxy): a pause lasts longer
PAUSE_AT_LEAST = 12.0
SLOW_QUOTA = 0.01          # of one CPU (cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us: 1 ms in 100, the least)
SLOW_PERIOD_US = 100_000
IN_PLACE_TIMEOUT = 90.0
HEAL_TIMEOUT = 300.0
QDISC = "4747:"            # the handle of drop_link's qdisc (issue 47)
FILL = "minbw-fill"        # fill_disk's file, in the datadir


@dataclass(frozen=True)
class Healed:
    """A fault undone: seconds from the start of heal to the cluster whole, and what it took."""
    kind: str
    target: str
    seconds: float
    detail: str


# ---------------------------------------------------------------- pure parts

def pick_target(kind: str, rng: random.Random) -> str:
    """The target of a fault of ``kind``, drawn from ``rng``: one of the three nodes, or one of the two API
    processes. Raises ValueError for an unknown kind."""
    if kind == "kill_api":
        return f"api{rng.choice(APIS)}"
    if kind in NODE_KINDS:
        return f"node{rng.choice(NODES)}"
    raise ValueError(f"unknown fault kind {kind!r}: one of {', '.join(KINDS)}")


def schedule(rng: random.Random, kinds: tuple[str, ...], count: int) -> list[tuple[str, str]]:
    """``count`` faults as a soak draws them from ``rng``: a kind (``rng.choice(kinds)``), then its target
    (pick_target). The same seed gives the same schedule."""
    out = []
    for _ in range(count):
        kind = rng.choice(kinds)
        out.append((kind, pick_target(kind, rng)))
    return out


def number(target: str) -> int:
    """``node2`` -> 2, ``api1`` -> 1."""
    return int(target[-1])


def whole_missing(wsreps: dict[int, dict[str, str] | str], servers: dict[tuple[str, str], dict[str, str]] | str,
                  apis: dict[int, str | None]) -> list[str]:
    """What keeps the cluster from being whole, one line each (empty: whole): ``wsreps`` each node's wsrep status
    (or why it could not be read), ``servers`` HAProxy's show stat (or why not), ``apis`` each API process's
    failure to answer (None: it answered)."""
    out = []
    for n in sorted(wsreps):
        w = wsreps[n]
        if isinstance(w, str):
            out.append(f"node{n}: {w}")
            continue
        state = (w.get("wsrep_local_state_comment"), w.get("wsrep_cluster_size"), w.get("wsrep_cluster_status"))
        if state != ("Synced", "3", "Primary"):
            out.append(f"node{n}: {state[0]}, cluster size {state[1]}, {state[2]}")
    if isinstance(servers, str):
        out.append(f"haproxy: {servers}")
    else:
        out += [f"haproxy {px}/{sv}: {row.get('status')} (check {row.get('check_status')}, "
                f"{row.get('last_chk') or 'no detail'})"
                for (px, sv), row in sorted(servers.items()) if row.get("status") != "UP"]
    out += [f"api{a}: {why}" for a, why in sorted(apis.items()) if why]
    return out


def drop_commands(port: int, *more: int) -> list[list[str]]:
    """tc's commands that drop every packet to and from ``port`` (and each of ``more``) on ``lo`` (to run in the
    cluster's namespace)."""
    return [["tc", "qdisc", "add", "dev", "lo", "root", "handle", QDISC, "htb"],   # unclassified: sent at once
            ["tc", "class", "add", "dev", "lo", "parent", QDISC, "classid", "4747:66", "htb", "rate", "8bit"],
            ["tc", "qdisc", "add", "dev", "lo", "parent", "4747:66", "handle", "4766:", "pfifo", "limit", "0"],
            *(["tc", "filter", "add", "dev", "lo", "parent", QDISC, "protocol", "ip", "prio", "1", "u32", "match",
               "ip", way, str(p), "0xffff", "flowid", "4747:66"] for p in (port, *more) for way in ("dport", "sport"))]


# ---------------------------------------------------------------- the injector

class GaleraFaults:
    """The fault injector of one GaleraPlacement (running). ``kinds``: the kinds this machine and cluster allow
    (``unavailable``: the others, with why)."""

    def __init__(self, galera: GaleraPlacement):
        self.galera = galera
        self.unavailable: dict[str, str] = {}
        why = private_netns_problem(galera.pid("haproxy"))
        if why:
            self.unavailable["drop_link"] = why
        if not galera.datadir_size_mb:
            self.unavailable["fill_disk"] = ("the datadirs are no file systems of their own "
                                             "(GaleraPlacement(datadir_size_mb=...), GALERA_DATADIR_SIZE_MB)")
        if not Path("/sys/fs/cgroup/cpu/cgroup.procs").exists():
            self.unavailable["slow_node"] = "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
        self.kinds: tuple[str, ...] = tuple(k for k in KINDS if k not in self.unavailable)
        self.active: Injected | None = None
        self.healed: list[Healed] = []
        self._paused: set[int] = set()
        self._slowed: dict[int, Path] = {}
        self._log_at: dict[int, int] = {}      # each node's log length when the fault was put in place
        self._fc_sent: dict[int, int] = {}     # the slowed node's wsrep_flow_control_sent then

    # ------------------------------------------------------------ inject
    def inject(self, kind: str, rng: random.Random) -> Injected:
        """Put a fault of ``kind`` in place on a target picked with ``rng``; returns once it is observably in place.
        Raises ValueError for an unknown or unavailable kind, RuntimeError while another fault is in place, when the
        cluster is not whole (missing()), or when the fault is not in place within IN_PLACE_TIMEOUT."""
        target = pick_target(kind, rng)
        if kind in self.unavailable:
            raise ValueError(f"{kind} is not available here: {self.unavailable[kind]}")
        if self.active is not None:
            raise RuntimeError(f"{self.active.kind} on {self.active.target} is still in place: one fault at a time")
        left = self.missing()   # a fault on a whole cluster only: never fewer than 2 nodes in its primary component
        if left:
            raise RuntimeError(f"the cluster is not whole ({'; '.join(left)}): heal first")
        n = number(target)
        self._log_at = {m: len(self.galera.node_log(m)) for m in NODES}
        started = time.monotonic()
        detail = getattr(self, f"_inject_{kind}")(n, started)
        self.active = Injected(kind, target, started, detail)
        return self.active

    def _inject_kill_node(self, n: int, t0: float) -> str:
        self.galera.kill_node(n)
        self._survivors_see(n, t0)
        self._haproxy_down("mariadb", f"node{n}", t0)
        return (f"mariadbd SIGKILLed; the others a primary component of 2 and HAProxy DOWN "
                f"{time.monotonic() - t0:.1f} s after")

    def _inject_kill_api(self, a: int, t0: float) -> str:
        self.galera.kill_api(a)
        self._haproxy_down("placement_api", f"api{a}", t0)
        return f"uWSGI master and workers SIGKILLed; HAProxy DOWN {time.monotonic() - t0:.1f} s after"

    def _inject_pause_node(self, n: int, t0: float) -> str:
        pid = self.galera.pid(f"galera-{n}")
        os.kill(pid, signal.SIGSTOP)
        self._paused.add(n)
        self._until(f"node{n}'s mariadbd (pid {pid}) stopped", lambda: proc_state(pid) == "T", t0)
        self._survivors_see(n, t0)
        row = self.galera.haproxy_servers()[("mariadb", f"node{n}")]
        return (f"mariadbd SIGSTOPped; evicted by the others {time.monotonic() - t0:.1f} s after; HAProxy: "
                f"{row['status']} ({row.get('check_status')})")

    def _inject_drop_link(self, n: int, t0: float) -> str:
        port = self.galera.node_ports[n - 1]
        # the node's clustercheck responder too (GALERA_DB_CHECK=clustercheck): on a machine of its own it would be
        # behind the same link as the node's SQL port
        more = [self.galera.check_ports[n - 1]] if self.galera.setting("GALERA_DB_CHECK") == "clustercheck" else []
        why = private_netns_problem(self.galera.pid("haproxy"))
        if why:   # checked again right before tc: never the machine's loopback
            raise ValueError(f"drop_link is not available here: {why}")
        for cmd in drop_commands(port, *more):
            self._tc(cmd)
        self._haproxy_down("mariadb", f"node{n}", t0)
        return (f"packets to and from 127.0.0.1:{', '.join(map(str, [port, *more]))} dropped (tc on the namespace's "
                f"lo); HAProxy DOWN {time.monotonic() - t0:.1f} s after")

    def _inject_fill_disk(self, n: int, t0: float) -> str:
        datadir = self.galera.state_dir / f"mysql-{n}"
        st = os.statvfs(datadir)
        # never fill anything but the node's own small file system (not seen from another mount namespace: a
        # plain directory of the machine's disk)
        if not os.path.ismount(datadir) or st.f_blocks * st.f_frsize > (self.galera.datadir_size_mb or 0) << 20:
            raise RuntimeError(f"{datadir} is not node{n}'s file system of {self.galera.datadir_size_mb} MB here "
                               "(another mount namespace than the cluster's?): not filled")
        size = st.f_bavail * st.f_frsize
        fill = datadir / FILL
        fd = os.open(fill, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while size > 0:   # the file system's own blocks (extents) need a little of what statvfs says is free
                try:
                    os.posix_fallocate(fd, 0, size)
                    break
                except OSError:
                    size -= 1 << 20
        finally:
            os.close(fd)
        free = os.statvfs(datadir)
        left = free.f_bavail * free.f_frsize
        if left >= 1 << 20:
            raise RuntimeError(f"node{n}'s datadir {datadir} still has {left} bytes free after filling it")
        return f"{datadir} filled: a file of {size >> 20} MiB, {left >> 10} KiB left"

    def _inject_slow_node(self, n: int, t0: float) -> str:
        pid = self.galera.pid(f"galera-{n}")
        w = wsrep_quick(self.galera, n)
        self._fc_sent[n] = int(w.get("wsrep_flow_control_sent", 0)) if isinstance(w, dict) else 0
        here = cpu_cgroup(pid)
        slow = here / f"minbw-slow-node{n}"
        slow.mkdir(exist_ok=True)
        (slow / "cpu.cfs_period_us").write_text(str(SLOW_PERIOD_US))
        (slow / "cpu.cfs_quota_us").write_text(str(int(SLOW_PERIOD_US * SLOW_QUOTA)))
        (slow / "cgroup.procs").write_text(str(pid))
        self._slowed[n] = slow
        if cpu_cgroup(pid) != slow:
            raise RuntimeError(f"node{n}'s mariadbd (pid {pid}) is in {cpu_cgroup(pid)}, not {slow}")
        return f"mariadbd limited to {SLOW_QUOTA:.0%} of a CPU (cgroup {slow})"

    # ------------------------------------------------------------ heal
    def heal(self, injected: Injected) -> None:
        """Undo ``injected`` and wait (HEAL_TIMEOUT) until the cluster is whole: 3 nodes Synced in a primary
        component of 3, HAProxy has every server UP, both API processes answer. Raises RuntimeError naming what is
        still missing (wsrep state, HAProxy's view, the nodes' last log lines)."""
        t0 = time.monotonic()
        n = number(injected.target)
        since = {m: len(self.galera.node_log(m)) for m in NODES}
        notes = []
        if injected.kind == "pause_node":
            wait = injected.started + PAUSE_AT_LEAST - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            row = self.galera.haproxy_servers()[("mariadb", f"node{n}")]
            notes.append(f"paused {time.monotonic() - injected.started:.1f} s, HAProxy then {row['status']} "
                         f"({row.get('check_status')})")
            self._resume(n)
        elif injected.kind == "drop_link":
            self._undrop()
        elif injected.kind == "fill_disk":
            full = disk_full_lines(self.galera.node_log(n)[self._log_at.get(n, 0):])
            notes.append(("node alive at heal" if self.galera.node_alive(n) else "node had died") + ", its log: "
                         + (f"{len(full)} lines on the full disk, the first: {full[0]!r}" if full
                            else "nothing on the full disk"))
            (self.galera.state_dir / f"mysql-{n}" / FILL).unlink(missing_ok=True)
        elif injected.kind == "slow_node":
            w = wsrep_quick(self.galera, n)
            if isinstance(w, dict):
                notes.append(f"it sent {int(w.get('wsrep_flow_control_sent', 0)) - self._fc_sent.get(n, 0)} flow "
                             f"control pauses meanwhile (wsrep_flow_control_sent)")
            self._unslow(n)
        notes += self._restart_missing()
        self.wait_whole(f"after {injected.kind} on {injected.target}")
        for m in NODES:
            how = self.galera.rejoined_by(m, since[m])
            if how != "unknown":
                notes.append(f"node{m} rejoined by {how}")
        if self.active == injected:
            self.active = None
        self.healed.append(Healed(injected.kind, injected.target, time.monotonic() - t0, "; ".join(notes)))

    def heal_all(self) -> None:
        """Undo whatever this injector may have left (the fault in place, paused or slowed nodes, the qdisc, the
        fill files), start what is not running, wait until the cluster is whole (heal's checks)."""
        if self.active is not None:
            self.heal(self.active)
        for n in list(self._paused):
            self._resume(n)
        for n in list(self._slowed):
            self._unslow(n)
        if "drop_link" not in self.unavailable:
            self._undrop()
        for n in NODES:
            (self.galera.state_dir / f"mysql-{n}" / FILL).unlink(missing_ok=True)
        self._restart_missing()
        self.wait_whole("heal_all")

    def _resume(self, n: int) -> None:
        try:
            os.kill(self.galera.pid(f"galera-{n}"), signal.SIGCONT)
        except ProcessLookupError:
            pass
        self._paused.discard(n)

    def _undrop(self) -> None:
        out = self._tc(["tc", "qdisc", "show", "dev", "lo"])
        if f"qdisc htb {QDISC}" in out:
            self._tc(["tc", "qdisc", "del", "dev", "lo", "root", "handle", QDISC])

    def _unslow(self, n: int) -> None:
        slow = self._slowed.pop(n)
        if self.galera.node_alive(n):
            (slow.parent / "cgroup.procs").write_text(str(self.galera.pid(f"galera-{n}")))
        slow.rmdir()

    def _restart_missing(self) -> list[str]:
        done = []
        for m in NODES:
            if not self.galera.node_alive(m):
                self.galera.start_node(m)
                done.append(f"node{m} started again")
        for a in APIS:
            if not self.galera.api_alive(a):
                self.galera.start_api(a)
                done.append(f"api{a} started again")
        return done

    # ------------------------------------------------------------ what is seen
    def missing(self) -> list[str]:
        """What keeps the cluster from being whole now (whole_missing's lines; empty: whole)."""
        wsreps: dict[int, dict[str, str] | str] = {}
        for n in NODES:
            if not self.galera.node_alive(n):
                wsreps[n] = "mariadbd is not running"
            elif proc_state(self.galera.pid(f"galera-{n}")) == "T":
                wsreps[n] = "mariadbd is stopped (SIGSTOP)"
            else:
                wsreps[n] = wsrep_quick(self.galera, n)
        try:
            servers: dict[tuple[str, str], dict[str, str]] | str = self.galera.haproxy_servers()
        except OSError as e:
            servers = f"its stats socket: {e}"
        apis = {a: answers(f"http://127.0.0.1:{self.galera.api_ports[a - 1]}/") for a in APIS}
        return whole_missing(wsreps, servers, apis)

    def wait_whole(self, what: str, timeout: float = HEAL_TIMEOUT) -> float:
        """Wait until missing() is empty; the seconds it took. Raises RuntimeError with what is still missing and
        the last wsrep lines of the nodes named."""
        t0 = time.monotonic()
        while True:
            left = self.missing()
            if not left:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                logs = [f"node{n}'s log: " + " | ".join(
                    [line[-200:] for line in self.galera.node_log(n).splitlines() if "WSREP" in line][-4:])
                        for n in NODES if any(line.startswith(f"node{n}") for line in left)]
                raise FaultNotHealed(f"{what}: the cluster is not whole after {timeout:.0f} s: " + "; ".join(left)
                                   + ("\n" + "\n".join(logs) if logs else ""))
            time.sleep(0.5)

    def _until(self, what: str, predicate, t0: float) -> None:
        while not predicate():
            if time.monotonic() - t0 > IN_PLACE_TIMEOUT:
                raise RuntimeError(f"not in place after {IN_PLACE_TIMEOUT:.0f} s: {what}")
            time.sleep(0.5)

    def _survivors_see(self, n: int, t0: float) -> None:
        for m in NODES:
            if m != n:
                self._until(f"node{m} in a primary component of 2 without node{n}",
                            lambda m=m: (lambda w: isinstance(w, dict) and w.get("wsrep_cluster_size") == "2"
                                         and w.get("wsrep_cluster_status") == "Primary")(wsrep_quick(self.galera, m)),
                            t0)

    def _haproxy_down(self, proxy: str, server: str, t0: float) -> None:
        self._until(f"HAProxy marks {proxy}/{server} DOWN",
                    lambda: self.galera.haproxy_servers()[(proxy, server)]["status"].startswith("DOWN"), t0)

    def _tc(self, cmd: list[str]) -> str:
        """A tc command in the cluster's network namespace (HAProxy's), checked to be one of the tests' own."""
        pid = self.galera.pid("haproxy")
        why = private_netns_problem(pid)
        if why:
            raise ValueError(f"tc refused: {why}")
        r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", *cmd], capture_output=True, text=True,
                           timeout=30)
        if r.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout


# ---------------------------------------------------------------- the machine

def private_netns_problem(pid: int) -> str | None:
    """Why process ``pid``'s network namespace is not one of the tests' own (None: it is): it is pid 1's (the
    machine's, where other sessions' services live), or it has interfaces besides ``lo`` (``unshare --net`` makes
    one with ``lo`` only)."""
    try:
        init = os.stat("/proc/1/ns/net").st_ino
    except PermissionError:   # pid 1 not dumpable (a sandbox's init): the interfaces alone tell
        init = None
    if os.stat(f"/proc/{pid}/ns/net").st_ino == init:
        return ("the cluster runs in the machine's network namespace (pid 1's): run it in one of its own "
                "(unshare --net, as `make galera` does)")
    names = [line.split(":", 1)[0].strip() for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]]
    if names != ["lo"]:
        return f"the cluster's network namespace has interfaces besides lo ({', '.join(names)}): not one of its own"
    return None


def disk_full_lines(log: str) -> list[str]:
    """A node's log lines about a full disk (InnoDB's, the server's: "No space left", "disk full", "is full")."""
    return [line[-200:] for line in log.splitlines()
            if re.search(r"No space left|[Dd]isk (is )?full|is full|Errcode: 28|errno 28|error 28", line)]


def proc_state(pid: int) -> str:
    """A process's state letter (R, S, T: stopped, Z, ...); ``gone`` when there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def cpu_cgroup(pid: int) -> Path:
    """The cgroup v1 ``cpu`` directory process ``pid`` is in."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return Path("/sys/fs/cgroup/cpu") / path.lstrip("/")
    raise RuntimeError(f"pid {pid} is in no cgroup v1 cpu hierarchy")


def wsrep_quick(galera: GaleraPlacement, n: int) -> dict[str, str] | str:
    """Node n's wsrep status (a query on its socket, 5 s at most), or why it could not be read."""
    sock = galera.state_dir / "run" / f"mysql-{n}.sock"
    try:
        r = subprocess.run(["mariadb", f"--socket={sock}", "-uroot", "-N", "-B", "--connect-timeout=3", "-e",
                            "SHOW GLOBAL STATUS LIKE 'wsrep%'"], capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return "no answer on its socket in 5 s"
    if r.returncode:
        return f"its socket: {r.stderr.strip()[:200]}"
    return dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)


def answers(url: str) -> str | None:
    """None when ``url`` answers below 500 within 3 s (galera.sh's http_ok), else why not."""
    try:
        with urllib.request.urlopen(url, timeout=3):
            return None
    except urllib.error.HTTPError as e:
        return None if e.code < 500 else f"HTTP {e.code}"
    except OSError as e:
        return f"no answer ({e})"
