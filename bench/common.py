"""What every benchmark section shares: machine facts, progress, servers, HTTP call counting,
and the section result (rows + ratios against targets) with its table rendering.

A section is a function ``run(ctx: Context) -> Section``; ``bench/run.py`` registers it under a
name, runs it, prints its tables (or JSON) and judges its targets. Issue 3's sections (query
overhead, claim throughput) plug in the same way.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # tests.conftest (PlacementServer) and tests.support.oracle (Neutron's sync)
    sys.path.insert(0, str(REPO))


class BenchError(RuntimeError):
    """A correctness check inside a benchmark failed: the numbers would mean nothing."""


# ---------------------------------------------------------------- progress

_T0 = time.perf_counter()


def progress(msg: str) -> None:
    print(f"[bench {time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- machine

def _meminfo_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gib": _meminfo_gib(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_1min_at_end": loadavg(),
        "versions": {d: _version(d) for d in ("openstack-placement", "openstacksdk", "keystoneauth1",
                                              "neutron", "neutron-lib", "SQLAlchemy", "requests")},
    }


# ---------------------------------------------------------------- servers

class Servers:
    """Fresh Placements, all stopped at the end: embedded (``minbw placement serve``: wsgiref, SQLite),
    ``prod`` (tests/prodplacement: openstack-placement under uWSGI with ``workers`` processes on its own
    MariaDB, noauth2; free ports) or ``galera`` (tests/support/galera: two uWSGI API processes of ``workers`` / 2
    workers each behind HAProxy, on a three-node MariaDB Galera cluster behind HAProxy, ``galera_mode``
    single-writer by default, as kolla-ansible; Placement's debug log off, as ``prod``; free ports)."""

    KINDS = ("embedded", "prod", "galera")
    GALERA_MODES = ("single-writer", "multi-writer")

    def __init__(self, state_dir: Path, kind: str = "embedded", workers: int = 4,
                 galera_mode: str = "single-writer"):
        if kind not in self.KINDS:
            raise ValueError(f"placement kind must be one of {', '.join(self.KINDS)}, got {kind!r}")
        if galera_mode not in self.GALERA_MODES:
            raise ValueError(f"galera mode must be one of {', '.join(self.GALERA_MODES)}, got {galera_mode!r}")
        self.state_dir = state_dir
        self.kind = kind
        self.workers = workers
        self.galera_mode = galera_mode
        self.running: list = []

    @property
    def galera_workers(self) -> int:
        """uWSGI workers of each of the Galera topology's two API processes: ``workers`` split over both."""
        return max(1, self.workers // 2)

    def start(self, name: str):
        if self.kind == "prod":
            from tests.support.prodplacement.server import ProdPlacement
            progress(f"starting the production-style Placement {name!r} ({self.workers} uWSGI workers, MariaDB)")
            server = ProdPlacement(self.state_dir / name, workers=self.workers)
        elif self.kind == "galera":
            from tests.support.galera.server import GaleraPlacement
            # the joiners' state transfer (rsync) runs as nobody: every directory above theirs must let it through
            # (the bench's temporary directory is made 0700)
            self.state_dir.chmod(self.state_dir.stat().st_mode | 0o011)
            progress(f"starting the Galera Placement {name!r} (2 API processes x {self.galera_workers} uWSGI "
                     f"workers behind HAProxy, 3 MariaDB Galera nodes, {self.galera_mode})")
            server = GaleraPlacement(self.state_dir / name, mode=self.galera_mode, workers=self.galera_workers,
                                     debug=False)
        else:
            from tests.conftest import PlacementServer
            server = PlacementServer(self.state_dir / name)
        t = time.perf_counter()
        server.start()
        if self.kind == "galera":
            progress(f"Galera Placement {name!r} up in {time.perf_counter() - t:.0f} s")
        self.running.append(server)
        return server

    def stop(self, server) -> None:
        server.stop()
        if server in self.running:
            self.running.remove(server)

    def stop_all(self) -> None:
        for server in list(self.running):
            self.stop(server)

    def describe(self) -> str:
        if self.kind == "prod":
            patched = " with patches/placement" if os.environ.get("PRODPLACEMENT_PATCHED") == "1" else ""
            return (f"production-style: uWSGI, {self.workers} worker processes, MariaDB "
                    f"{_mariadb_version()}, noauth2, allocation_conflict_retry_count 10, openstack-placement"
                    f"{patched or ' stock'}")
        if self.kind == "galera":
            patched = os.environ.get("GALERA_PATCHED", os.environ.get("PRODPLACEMENT_PATCHED", "0")) == "1"
            return (f"Galera: 2 uWSGI API processes x {self.galera_workers} workers behind HAProxy, MariaDB "
                    f"{_mariadb_version()} Galera cluster of 3 nodes behind HAProxy ({self.galera_mode}), noauth2, "
                    f"debug log off, allocation_conflict_retry_count 10, openstack-placement"
                    f"{' with patches/placement' if patched else ' stock'}")
        return "embedded: wsgiref, one request at a time, SQLite"


def _mariadb_version() -> str:
    import subprocess
    try:
        out = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return "?"
    m = re.search(r"Ver (\S+)", out)
    return m.group(1) if m else "?"


def server_cpu_seconds(server) -> float:
    """CPU time of every process serving ``server`` (embedded: its one process; prod: uWSGI master and
    workers and MariaDB; galera: both uWSGI masters and their workers, HAProxy and the three MariaDB nodes)."""
    return sum(cpu_seconds(pid) for pid in server.pids())


# ---------------------------------------------------------------- long-lived worker processes

def spawn_workers(target, args: list[tuple], ready_timeout: float, what: str = "a claimer process",
                  daemon: bool = True):
    """One spawned process per ``args`` entry, running ``target(pipe, *entry)``; waits for each one's first
    message (it is ready). Returns (processes, pipes, first messages). ``daemon=False`` for a process that starts
    processes itself (multiprocessing forbids a daemonic one to); :func:`stop_workers` still ends it."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    procs, pipes = [], []
    for entry in args:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=target, args=(child, *entry), daemon=daemon)
        p.start()
        procs.append(p)
        pipes.append(parent)
    first = []
    for pipe in pipes:
        if not pipe.poll(ready_timeout):
            raise BenchError(f"{what} did not start within {ready_timeout:.0f} s")
        first.append(pipe.recv())
    return procs, pipes, first


def stop_workers(procs, pipes) -> None:
    """Tell each worker to stop (("stop",)), then wait for it; terminated after 10 s."""
    for pipe in pipes:
        try:
            pipe.send(("stop",))
        except (BrokenPipeError, OSError):
            pass
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()


# ---------------------------------------------------------------- HTTP call counting

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class HttpCounter:
    """Counts each HTTP request really sent, via a requests ``response`` hook on a requests.Session.

    For openstacksdk: ``conn.session.session`` (as tests' CallCounter); for neutron-lib's
    client: ``client._client.session`` (the keystoneauth Session's requests session).
    Also keeps ``response.elapsed`` (request sent → response headers parsed): the time spent
    waiting on the server, measured the same way for every client.
    """

    def __init__(self, requests_session):
        self.calls: list[tuple[str, str, float]] = []
        self._session = requests_session
        requests_session.hooks["response"].append(self._hook)

    def _hook(self, resp, *args, **kwargs):
        self.calls.append((resp.request.method, resp.request.path_url, resp.elapsed.total_seconds()))

    def detach(self) -> None:
        try:
            self._session.hooks["response"].remove(self._hook)
        except ValueError:
            pass

    @property
    def total(self) -> int:
        return len(self.calls)

    @property
    def writes(self) -> int:
        return sum(1 for m, _, _ in self.calls if m != "GET")

    @property
    def gets(self) -> int:
        return sum(1 for m, _, _ in self.calls if m == "GET")

    @property
    def http_seconds(self) -> float:
        return sum(e for _, _, e in self.calls)

    def kinds(self) -> dict[str, dict]:
        """Calls by method and path shape (UUIDs, trait names and query values folded): count and HTTP seconds."""
        out: dict[str, dict] = {}
        for m, p, e in self.calls:
            k = out.setdefault(call_kind(m, p), {"calls": 0, "http_s": 0.0})
            k["calls"] += 1
            k["http_s"] += e
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["calls"]))


def call_kind(method: str, path: str) -> str:
    base, _, query = path.partition("?")
    base = _UUID.sub("{uuid}", base)
    base = re.sub(r"^/traits/[A-Z0-9_]+$", "/traits/{name}", base)
    if query:
        base += "?" + "&".join(sorted(k + "=…" for k, _ in urllib.parse.parse_qsl(query, keep_blank_values=True)))
    return f"{method} {base}"


# ---------------------------------------------------------------- results

@dataclass
class Column:
    key: str
    header: str
    fmt: str = "{}"

    def render(self, row: dict) -> str:
        v = row.get(self.key)
        if v is None:
            return "-"
        return self.fmt.format(v)


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[dict] = field(default_factory=list)

    def render(self) -> str:
        cells = [[c.header for c in self.columns]] + [[c.render(r) for c in self.columns] for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]

        def line(row):
            return "  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths))).rstrip()
        out = [self.title, line(cells[0]), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in cells[1:]]
        return "\n".join(out)

    def to_dict(self) -> dict:
        return {"title": self.title, "rows": self.rows}


@dataclass
class Target:
    """One measured ratio (or count) against its target: ``value OP threshold``."""

    name: str
    scope: str          # e.g. "N=500"
    value: float
    op: str             # "<=" | ">=" | "=="
    threshold: float
    unit: str = ""

    @property
    def met(self) -> bool:
        return {"<=": self.value <= self.threshold, ">=": self.value >= self.threshold,
                "==": self.value == self.threshold}[self.op]

    def to_dict(self) -> dict:
        return {"name": self.name, "scope": self.scope, "value": self.value, "op": self.op,
                "threshold": self.threshold, "met": self.met}


def targets_table(targets: list[Target]) -> Table:
    def fmt(v, unit):
        if unit == "×":  # enough digits that a value just under its threshold does not print as equal
            return f"{v:.3f}×" if v < 10 else f"{v:.1f}×"
        return f"{v:.3f}{unit}" if isinstance(v, float) else f"{v}{unit}"
    rows = [{"target": t.name, "scope": t.scope, "measured": fmt(t.value, t.unit),
             "goal": f"{t.op} {fmt(t.threshold, t.unit)}", "met": "met" if t.met else "NOT MET"} for t in targets]
    return Table("Targets", [Column("target", "target"), Column("scope", "scope"), Column("measured", "measured"),
                             Column("goal", "goal"), Column("met", "result")], rows)


@dataclass
class Section:
    name: str
    title: str
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)   # everything else, for --json

    def render(self) -> str:
        parts = [f"== {self.title} =="]
        parts += [t.render() for t in self.tables]
        if self.targets:
            parts.append(targets_table(self.targets).render())
        parts += [f"note: {n}" for n in self.notes]
        return "\n\n".join(parts)

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "tables": [t.to_dict() for t in self.tables],
                "targets": [t.to_dict() for t in self.targets], "notes": self.notes, "data": self.data}


@dataclass
class Context:
    """What run.py hands each section."""

    sizes: list[int]
    servers: Servers
    state_dir: Path
    diagnose: str = "auto"        # "auto" (when a target is missed) | "always" | "never"
    seed: int = 2024
    options: dict = field(default_factory=dict)


SectionFn = Callable[[Context], Section]


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of a process: this one, or another by pid (from /proc)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def percentile(values, p: float) -> float:
    """The p-th percentile (0-100) of ``values``, linear between closest ranks (numpy's default)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
