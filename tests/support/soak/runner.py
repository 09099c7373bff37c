"""The soak: every writer and reader of minbw at once on one topology, for a bounded time, while faults are
injected at random from a seed; invariants checked all along and at the end; a report (docs/soak.md).

    python -m tests.support.soak.runner --topology prod --seconds 600 --seed 1234 --out DIR [--netns]

Phases: set-up (the topology, the fleet's and the claim hosts' providers by minbw's sync, the exporter), a quiet
phase with the workload and no fault (the quiet latencies), the faults phase (the schedule the seed makes: kind, time,
hold, target), then the end: the workload stopped, every fault healed, a sync of the fleet, which must converge
(a check with no cache then plans no write), and the end checks. ``--netns``: the run in a network and mount
namespace of its own (root; tests/support/netns.py), where the MariaDB datadir can be a small tmpfs
(the fault fill_mariadb_disk). Writes DIR/report.json, DIR/report.md, DIR/latency.png, the ledgers and logs.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.support.soak import report as reportlib
from tests.support.soak.faults import FaultNotHealed, Injected
from tests.support.soak.workload import (ROOT_INVENTORY, claim_host_ini, fleet_host, fleet_ini)

ROOT = Path(__file__).resolve().parents[3]
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
BANDWIDTH = dict.fromkeys((EGR, IGR))  # the classes usages_of sums (as a provider's inventories name them)
CLAIM_KBPS = 1000
MINBW = str(Path(sys.executable).parent / "minbw")  # the command line as users run it
OVER_AFTER = 15.0     # seconds a provider may stay over capacity while the claim that overfilled it undoes itself
ORPHAN_AFTER = 5.0    # seconds a consumer may stay without allocations while its claim writes them
CLIENT_TIMEOUT = 5.0   # every minbw process's Placement timeout (MINBW_PLACEMENT_TIMEOUT): pauses outlast it

# hold: seconds a fault stays before heal (a pause outlasts the client's timeout; a kill: the time until the
# supervisor starts the process again)
HOLD = {"kill_placement_master": (1.0, 4.0), "kill_placement_worker": (0.5, 2.0), "pause_placement": (6.0, 10.0),
        "pause_placement_worker": (6.0, 10.0), "kill_mariadb": (1.0, 4.0), "pause_mariadb": (6.0, 10.0),
        "slow_placement": (6.0, 12.0), "fill_mariadb_disk": (4.0, 8.0)}
DEFAULT_HOLD = (2.0, 8.0)


@dataclass(frozen=True)
class Planned:
    at: float      # seconds after the soak's start
    kind: str
    hold: float
    seed: int      # the fault's own rng (its target)


def schedule(seed: int, kinds: tuple[str, ...], seconds: float, quiet: float, gap: tuple[float, float]) -> list[Planned]:
    """The faults the seed makes: the same seed and kinds give the same kinds, targets, times and holds."""
    rng = random.Random(seed)
    out, t = [], quiet
    order = list(kinds)
    while True:
        if not order:   # every kind once before any twice, in a random order
            order = list(kinds)
        kind = order.pop(rng.randrange(len(order)))
        lo, hi = HOLD.get(kind, DEFAULT_HOLD)
        hold = round(rng.uniform(lo, hi), 2)
        at = round(t + (rng.uniform(*gap) if out else 0.0), 2)
        if at + hold > seconds:
            return out
        out.append(Planned(at, kind, hold, rng.getrandbits(32)))
        t = at + hold + 3.0   # a heal takes a few seconds: the next one is planned after it


@dataclass
class Config:
    topology: str
    seconds: float
    seed: int
    out: Path
    hosts: int = 1000
    claim_hosts: int = 2
    claims_per_host: int = 6
    claimers: int = 2
    workers: int = 4
    quiet: float = 0.0
    gap: tuple[float, float] = (0.0, 0.0)   # seconds between a heal and the next fault; 0: by the soak's length
    interval: float = 0.0     # the exporter's collection interval; 0: 3 s up to 100 hosts, else 15 s
    sync_pause: float = 2.0
    datadir_mb: int = 200


@dataclass
class Invariant:
    name: str
    what: str
    checked: int = 0
    violations: int = 0
    examples: list[str] = field(default_factory=list)

    def check(self, ok: bool, example: str = "") -> None:
        self.checked += 1
        if not ok:
            self.violations += 1
            if len(self.examples) < 5:
                self.examples.append(example)


class Soak:
    def __init__(self, cfg: Config):
        if not cfg.interval:
            cfg.interval = 3.0 if cfg.hosts <= 100 else 15.0
        self.cfg = cfg
        self.out = cfg.out
        self.out.mkdir(parents=True, exist_ok=True)
        self.stopfile = self.out / "stop"
        self.gofile = self.out / "go"
        # a run before in the same directory (the same seed): its ledgers and markers go
        for f in (self.stopfile, self.gofile, *self.out.glob("go.*.ready"), *self.out.glob("ops-*.jsonl")):
            f.unlink(missing_ok=True)
        self.procs: list[subprocess.Popen] = []
        self.ledgers: list[Path] = []
        self.injected: list[dict] = []
        self.samples: list[dict] = []
        self.rss: list[tuple[float, int]] = []
        self.scrapes: list[dict] = []
        self.direct: deque = deque(maxlen=600)
        self.quit = threading.Event()
        self.empty_since: dict[str, float] = {}
        self.over_since: dict[tuple, float] = {}
        self.over_seen: set[tuple] = set()
        self.transient_over = 0
        self.unjudged = 0
        self.orphans_seen: set[str] = set()
        self.t0 = 0.0
        self.inv = {i.name: i for i in [
            Invariant("no_overcapacity", "no provider over its capacity at the end, nor at any sample for "
                      f"{OVER_AFTER:.0f} s (SQL over Placement's database; a moment over it: transient_overcapacity)"),
            Invariant("claims_present", "every claim minbw reported as made or written, not verified (and not freed) "
                                        "is present, its bandwidth whole"),
            Invariant("frees_gone", "every free minbw reported as done is gone"),
            Invariant("failed_claims_left_nothing", "a claim reported as not made (refused or failed) left nothing"),
            Invariant("no_orphans", "no consumer without allocations, no allocation without consumer (samples and end)"),
            Invariant("no_duplicate_provider", "the provider count stays what the syncs made (no duplicate, none lost)"),
            Invariant("sync_converges", "after the faults, the next sync succeeds and a check with no cache plans no write"),
            Invariant("exporter_equals_placement", "each scrape's used bandwidth equals a direct read of Placement "
                      "within one collection cycle (claim hosts' bridges, all along; every provider, at the end)"),
            Invariant("one_line_failures", "every failure a tool printed is one line naming the cause, no traceback"),
            Invariant("no_process_leaked", "after each heal and at the end, the topology's processes are exactly "
                      "its own, and none of the soak's is left"),
            Invariant("exporter_rss_bounded", "the exporter's RSS at the end within 1.25x + 16 MB of the quiet phase's"),
            Invariant("faults_healed", "every fault injected was healed: its target serves again"),
        ]}

    def log(self, msg: str) -> None:
        t = time.monotonic() - self.t0 if self.t0 else 0.0
        print(f"[soak {t:6.1f}s] {msg}", flush=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    # ------------------------------------------------------------ the topology
    def start_topology(self):
        """The topology and its fault injector. prod: ProdPlacement and ProdPlacementFaults (here); galera:
        GaleraPlacement (three nodes, HAProxy, two Placement processes) and the injector of
        tests/support/galera/faults.py (the same interface: tests/support/soak/faults.py). Beyond the interface, an
        injector may offer supervise() (start again what died outside a fault), serving_processes() and
        expected_processes() (the leak check after each heal), close() and restarts; the runner uses those it has."""
        if self.cfg.topology == "galera":
            from tests.support.galera.server import GaleraPlacement
            try:
                from tests.support.galera import faults as galera_faults
            except ImportError as e:
                raise SystemExit(f"soak: --topology galera needs tests/support/galera/faults.py ({e})") from e
            self.server = GaleraPlacement(self.out / "galera", datadir_size_mb=max(256, self.cfg.datadir_mb))
            self.log(f"starting {self.server.describe()}")
            self.server.start()
            self.faults = galera_faults.GaleraFaults(self.server)
        else:
            from tests.support.prodplacement.server import ProdPlacement
            from tests.support.soak.faults import ProdPlacementFaults
            self.server = ProdPlacement(self.out / "placement", workers=self.cfg.workers)
            self.log(f"starting {self.server.describe()}")
            self.server.start()
            self.faults = ProdPlacementFaults(self.server, small_datadir_mb=self.cfg.datadir_mb, log=self.log)
        conf = sorted(Path(self.server.state_dir).glob("**/placement.conf"))[0]
        self.db_url = next(line.split("=", 1)[1].strip() for line in conf.read_text().splitlines()
                           if line.strip().startswith("connection"))

    def env(self) -> dict:
        return {**self.server.env(), "MINBW_PLACEMENT_TIMEOUT": str(CLIENT_TIMEOUT),
                "XDG_CACHE_HOME": str(self.out / "cache"), "PYTHONPATH": f"{ROOT / 'python'}:{ROOT}",
                "PYTHONWARNINGS": "ignore"}

    def api(self):
        from minbw.placement.client import Placement, RetryPolicy
        return Placement(self.server.connect(), retry=RetryPolicy(attempts=2, timeout=CLIENT_TIMEOUT))

    def minbw(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([MINBW, "--os-cloud", self.server.cloud, *args],
                              env=self.env(), capture_output=True, text=True, timeout=timeout)

    def setup_hosts(self) -> None:
        cfg = self.cfg
        self.fleet = self.out / "fleet"
        self.fleet.mkdir(exist_ok=True)
        rng = random.Random(cfg.seed ^ 0x5EED)
        for i in range(cfg.hosts):
            (self.fleet / f"{fleet_host(i)}.ini").write_text(fleet_ini(fleet_host(i), rng.choice((10_000_000, 25_000_000))))
        claimdir = self.out / "claim-hosts"
        claimdir.mkdir(exist_ok=True)
        self.claim_hosts = [f"soak-claim-{i}" for i in range(cfg.claim_hosts)]
        for h in self.claim_hosts:
            (claimdir / f"{h}.ini").write_text(claim_host_ini(h, CLAIM_KBPS * cfg.claims_per_host))
        self.cache = self.out / "sync-cache.json"
        t = time.monotonic()
        for what, files, cache in (("claim hosts", sorted(claimdir.glob("*.ini")), ["--no-cache"]),
                                   ("fleet", sorted(self.fleet.glob("*.ini")), ["--cache", str(self.cache)])):
            r = self.minbw("provider", "sync", "--agent-config", *map(str, files), "--create-root", *ROOT_INVENTORY,
                           *cache, "--workers", "8", "-f", "value", "-c", "step")
            if r.returncode != 0:
                raise RuntimeError(f"the first sync of the {what} failed ({r.returncode}): {r.stderr[-2000:]}")
        api = self.api()
        self.claim_bridges = {p.uuid: p.name for p in api.list_providers() if p.name.endswith(":br-phys0")}
        self.expected_providers = 3 * (cfg.hosts + cfg.claim_hosts)
        self.log(f"{cfg.hosts} fleet hosts and {cfg.claim_hosts} claim hosts synced in {time.monotonic() - t:.1f} s "
                 f"({self.expected_providers} providers)")

    # ------------------------------------------------------------ the readers and writers
    def spawn(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        log = open(self.out / f"{name}.err", "w")
        p = subprocess.Popen(argv, env=self.env(), stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=log,
                             start_new_session=True, cwd=ROOT, **kw)
        p.soak_name = name  # type: ignore[attr-defined]
        self.procs.append(p)
        return p

    def hold(self) -> int:
        """How many consumers a claimer holds at most: together a third more than the claim hosts' bandwidth,
        so that claims are refused too."""
        return -(-self.cfg.claims_per_host * self.cfg.claim_hosts * 4 // 3 // self.cfg.claimers)

    def start_workload(self) -> None:
        cfg = self.cfg
        qos = f"min_bw:egress:{CLAIM_KBPS},min_bw:ingress:{CLAIM_KBPS},physnet=physnet0"
        for i in range(cfg.claimers):
            ledger = self.out / f"ops-claimer-{i}.jsonl"
            self.ledgers.append(ledger)
            self.spawn(f"claimer-{i}", [sys.executable, "-m", "tests.support.soak.workload", "claimer",
                                        "--ledger", str(ledger), "--stop", str(self.stopfile),
                                        "--seed", str(cfg.seed * 100 + i), "--cloud", self.server.cloud,
                                        "--qos-port", qos, "--hold", str(self.hold()),
                                        "--go", str(self.gofile)])
        ledger = self.out / "ops-syncer.jsonl"
        self.ledgers.append(ledger)
        self.spawn("syncer", [sys.executable, "-m", "tests.support.soak.workload", "syncer", "--ledger", str(ledger),
                              "--stop", str(self.stopfile), "--seed", str(cfg.seed * 100 + 99),
                              "--cloud", self.server.cloud, "--fleet", str(self.fleet), "--cache", str(self.cache),
                              "--pause", str(cfg.sync_pause), "--go", str(self.gofile)])
        deadline = time.monotonic() + 180
        while len(list(self.out.glob("go.*.ready"))) < cfg.claimers + 1:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError("the workload's processes did not start (see claimer-*.err, syncer.err)")
            time.sleep(0.2)
    def start_readers(self) -> None:
        """The exporter (a Prometheus scrapes it) and the database sampler, started before the soak's clock, the
        exporter's first collection waited for (so that a scrape at the start is not refused)."""
        from tests.support.prodplacement.server import free_port
        self.exporter_port = free_port()
        self.exporter = self.spawn("exporter", [MINBW, "--os-cloud", self.server.cloud,
                                                "exporter", "--listen-port", str(self.exporter_port),
                                                "--interval", str(self.cfg.interval), "--slow-interval", "3600",
                                                "--no-neutron", "--owner-nova", "no", "--cache", str(self.cache)])
        # its first collection reads every provider (1,000 hosts: minutes on a loaded machine)
        bound = 120 + 0.5 * self.cfg.hosts
        deadline = time.monotonic() + bound
        while True:
            try:
                if exporter_values(self.scrape())[1] is not None:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.exporter.poll() is not None:
                raise RuntimeError(f"the exporter served no collection in {bound:.0f} s: "
                                   f"{(self.out / 'exporter.err').read_text()[-2000:]}")
            time.sleep(0.5)
        self.probe = self.spawn("dbprobe", [str(ROOT / ".venv-cloud/bin/python"),
                                            str(ROOT / "tests/support/soak/orphans.py"), self.db_url, "1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def start_threads(self) -> None:
        for target in (self._probe_reader, self._direct_reader, self._scraper, self._rss_sampler, self._supervisor):
            threading.Thread(target=self._guard(target), daemon=True, name=target.__name__).start()

    def _guard(self, fn):
        def run():
            try:
                fn()
            except Exception:
                self.log(f"{fn.__name__} died: {traceback.format_exc()}")
        return run

    def _probe_reader(self) -> None:
        assert self.probe.stdout is not None
        for line in self.probe.stdout:
            s = json.loads(line)
            s["t"] -= self.t0
            self.samples.append(s)
            if not s["ok"]:
                continue
            # stock Placement accepts concurrent claims over capacity (docs/placement-overcommit.md); minbw's
            # verified claim undoes its own write then. Over capacity for a moment is counted (transient); still over
            # OVER_AFTER seconds later is a violation (each provider and class once)
            now_over = {(name, rc): (used, cap) for name, rc, used, cap in s["over"]}
            new, stuck = lasting(self.over_since, self.over_seen, now_over, s["t"], OVER_AFTER)
            self.transient_over += new
            self.inv["no_overcapacity"].check(not stuck, f"{s['t']:.1f}s over capacity for {OVER_AFTER} s: "
                                                         + "; ".join(f"{n} class {rc}: used {now_over[(n, rc)][0]} > "
                                                                     f"{now_over[(n, rc)][1]}" for n, rc in stuck))
            # a consumer without allocations for a moment is a claim between its two transactions; one still
            # without them ORPHAN_AFTER seconds later is an orphan (each counted once)
            _, old = lasting(self.empty_since, self.orphans_seen, set(s["empty_consumers"]), s["t"], ORPHAN_AFTER)
            a, b = s["orphans"]
            self.inv["no_orphans"].check(not old and b == 0, f"{s['t']:.1f}s consumers without allocations for "
                                                             f"{ORPHAN_AFTER} s: {old}; {b} allocations without consumer")
            self.inv["no_duplicate_provider"].check(s["providers"] == self.expected_providers,
                                                    f"{s['t']:.1f}s {s['providers']} providers, "
                                                    f"{self.expected_providers} expected")

    def _direct_reader(self) -> None:
        """The claim hosts' bridges' usages read directly, every 0.5 s (what the scrapes are judged against), with
        the provider's generation: their allocations (``GET .../allocations``, one read at one generation) summed."""
        from minbw.model.providers import usages_of

        api = self.api()
        while not self.quit.is_set():
            t = time.monotonic()
            try:
                got = {u: api.provider_allocations(u, with_generation=True) for u in self.claim_bridges}
                used = {u: usages_of(BANDWIDTH, b["allocations"]) for u, b in got.items()}
                self.direct.append((t, time.monotonic(), {u: (used[u][EGR], used[u][IGR],
                                                              got[u]["resource_provider_generation"])
                                                          for u in got}))
            except Exception:
                pass
            self.quit.wait(0.25)

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.exporter_port}/metrics", timeout=CLIENT_TIMEOUT) as r:
            return r.read().decode()

    def _scraper(self) -> None:
        """A Prometheus scraping every second; each scrape's used bandwidth of the claim hosts judged against the
        direct reads of the collection's window (when Placement answered them)."""
        ledger = open(self.out / "ops-scraper.jsonl", "w", buffering=1)
        self.ledgers.append(self.out / "ops-scraper.jsonl")
        while not self.quit.is_set():
            t = time.monotonic()
            try:
                text = self.scrape()
                entry = {"kind": "scrape", "start": t, "end": time.monotonic(), "outcome": "succeeded", "cause": ""}
                self._judge(text, t)
            except Exception as e:
                entry = {"kind": "scrape", "start": t, "end": time.monotonic(), "outcome": "failed",
                         "cause": f"{type(e).__name__}: {e}"}
            ledger.write(json.dumps(entry) + "\n")
            self.quit.wait(1.0)

    def _judge(self, text: str, t: float) -> None:
        values, age = exporter_values(text)
        duration = exporter_values(text, "minbw_collection_duration_seconds", scalar=True)
        if age is None or duration is None:
            return   # no collection yet
        mine = {n: v for n, v in values.items() if n[0] in self.claim_bridges.values()}
        if not mine:
            return
        # the collection read each provider at a moment of [started, ended]. Judged where Placement held one value
        # all through it: a direct read ended before it started, one started after it ended, and every direct read
        # from the one to the other saw the same provider generation (equal values alone are not enough: a free
        # and a claim between two reads leave the value as it was, and a collection between them read the other).
        # Then the scrape must show that value. A collection during which the provider changed is not judged
        # (counted in the report).
        ended = t - age
        started = ended - duration
        reads = list(self.direct)
        before = [d for d in reads if d[1] <= started]
        after = [d for d in reads if d[0] >= ended]
        if not before or not after:
            self.unjudged += 1
            return
        window = [d for d in reads if before[-1][0] <= d[0] and d[1] <= after[0][1]]
        for u, name in self.claim_bridges.items():
            for i, d in enumerate(("egress", "ingress")):
                seen = {r[2][u][i] * 1000 for r in window}
                if len(seen) != 1 or len({r[2][u][2] for r in window}) != 1:
                    self.unjudged += 1
                    continue
                (held,) = seen
                got = mine.get((name, d))
                self.inv["exporter_equals_placement"].check(
                    got == held, f"{t - self.t0:.1f}s scrape (collection {started - self.t0:.1f}-{ended - self.t0:.1f}s):"
                                 f" {name} {d} {got}, Placement held {held} all through it ({len(window)} reads)")

    def _supervisor(self) -> None:
        if not hasattr(self.faults, "supervise"):
            return
        while not self.quit.is_set():
            self.faults.supervise()
            self.quit.wait(1.0)

    def _rss_sampler(self) -> None:
        while not self.quit.is_set():
            self.rss.append((self.now(), group_rss_kb(self.exporter.pid)))
            self.quit.wait(1.0)

    # ------------------------------------------------------------ the faults
    def run_faults(self, plan: list[Planned]) -> None:
        for p in plan:
            while self.now() < p.at:
                time.sleep(0.1)
            rec = {"kind": p.kind, "planned_at": p.at, "hold": p.hold}
            try:
                got = self.faults.inject(p.kind, random.Random(p.seed))
            except Exception as e:
                rec.update(start=self.now(), end=self.now(), target="", detail="", error=f"inject: {e}")
                self.injected.append(rec)
                self.log(f"inject {p.kind} failed: {e}")
                continue
            rec.update(start=got.started - self.t0, target=got.target, detail=got.detail)
            self.log(f"fault {p.kind}: {got.target} ({got.detail}), held {p.hold} s")
            time.sleep(p.hold)
            rec["healing"] = self.now()
            self._heal(got, rec)
            self.injected.append(rec)

    def _heal(self, got: Injected, rec: dict) -> None:
        try:
            self.faults.heal(got)
            rec["end"] = self.now()
            self.inv["faults_healed"].check(True)
            self.log(f"healed {got.kind} in {rec['end'] - rec['healing']:.1f} s")
        except FaultNotHealed as e:
            rec["end"] = self.now()
            rec["error"] = str(e)
            self.inv["faults_healed"].check(False, f"{got.kind}: {e}")
            self.log(f"NOT healed {got.kind}: {e}")
        if not hasattr(self.faults, "serving_processes"):
            return
        procs = self.faults.serving_processes()
        self.inv["no_process_leaked"].check(len(procs) == self.faults.expected_processes(),
                                            f"after {got.kind}: {len(procs)} processes, "
                                            f"{self.faults.expected_processes()} expected")

    # ------------------------------------------------------------ the end
    def stop_workload(self) -> None:
        self.stopfile.touch()
        for p in self.procs:
            if getattr(p, "soak_name", "").startswith(("claimer", "syncer")):
                try:
                    p.wait(120)
                except subprocess.TimeoutExpired:
                    self.log(f"{p.soak_name} did not stop in 120 s: killed")
                    os.killpg(p.pid, 9)
                    p.wait()

    def end_checks(self, ops: list[dict]) -> dict:
        end: dict = {}
        api = self.api()
        # each claim's and free's last outcome, per consumer
        last: dict[str, dict] = {}
        for o in sorted((o for o in ops if o["kind"] in ("claim", "free")), key=lambda o: o["start"]):
            last[o["consumer"]] = o
        for consumer, o in last.items():
            allocs = api.get_allocations(consumer)["allocations"]
            egr = sum(a["resources"].get(EGR, 0) for a in allocs.values())
            if o["kind"] == "claim" and o["outcome"] in ("succeeded", "written-unverified"):  # exit 5: written too
                self.inv["claims_present"].check(egr == CLAIM_KBPS, f"claim {consumer} reported {o['outcome']}: "
                                                                    f"{egr} kbps present")
            elif o["kind"] == "claim":
                self.inv["failed_claims_left_nothing"].check(not allocs, f"claim {consumer} {o['outcome']} "
                                                                         f"({o['cause']}) left {allocs}")
            elif o["outcome"] == "succeeded":
                found = {True: "it freed allocations", False: "it found none to free"}.get(o.get("changed"), "")
                self.inv["frees_gone"].check(not allocs, f"free {consumer} reported done ({found}): {allocs} left")
            # a free that failed last: either state is right; it is freed below
        # the sync converges on its next run, and a check that trusts no cache plans nothing
        files = sorted(map(str, self.fleet.glob("*.ini")))
        t = time.monotonic()
        r = self.minbw("provider", "sync", "--agent-config", *files, "--create-root", *ROOT_INVENTORY,
                       "--cache", str(self.cache), "-f", "value", "-c", "step")
        end["convergence_sync"] = {"rc": r.returncode, "seconds": round(time.monotonic() - t, 1),
                                   "stderr": r.stderr.strip()[-500:]}
        self.inv["sync_converges"].check(r.returncode == 0, f"the sync after the faults: exit {r.returncode}: "
                                                            f"{r.stderr.strip()[-300:]}")
        r = self.minbw("provider", "sync", "--agent-config", *files, "--create-root", *ROOT_INVENTORY, "--no-cache",
                       "--dry-run", "--json")
        writes = json.loads(r.stdout)["writes"] if r.returncode == 0 else None
        end["check_writes"] = writes
        self.inv["sync_converges"].check(writes == 0, f"a sync with no cache then plans {writes} writes "
                                                      f"(exit {r.returncode}: {r.stderr.strip()[-300:]})")
        # orphans and providers once more, quiet
        sys.path.insert(0, str(ROOT / "tests/support/soak"))
        final = json.loads(subprocess.run([str(ROOT / ".venv-cloud/bin/python"), "-c",
                                           "import json,sys; sys.path.insert(0, sys.argv[2]); import orphans; "
                                           "print(json.dumps(orphans.sample(sys.argv[1])))",
                                           self.db_url, str(ROOT / "tests/support/soak")],
                                          capture_output=True, text=True, check=True).stdout)
        end["final_sample"] = final
        self.inv["no_overcapacity"].check(final["ok"] and not final["over"], f"at the end: {final}")
        self.inv["no_orphans"].check(final["ok"] and final["orphans"] == [0, 0], f"at the end: {final}")
        self.inv["no_duplicate_provider"].check(final["ok"] and final["providers"] == self.expected_providers,
                                                f"at the end: {final.get('providers')} of {self.expected_providers}")
        end["exporter_end"] = self.exporter_end_check(api)
        return end

    def exporter_end_check(self, api) -> dict:
        """Once writes stopped: within one collection cycle (plus its own duration), a scrape equals a direct read of
        every bandwidth provider's inventory and usage."""
        bridges = {p.uuid: p.name for p in api.list_providers() if ":br-" in p.name}
        deadline = time.monotonic() + 2 * self.cfg.interval + 30
        t = time.monotonic()
        diff: list = []
        while True:
            usages = api.usages_of(list(bridges), readers=8)
            invs = {u: api.get_inventories(u)[0] for u in bridges}
            want = {}
            for u, name in bridges.items():
                for rc, d in ((EGR, "egress"), (IGR, "ingress")):
                    want[(name, d)] = (invs[u][rc]["total"] * 1000, usages[u].get(rc, 0) * 1000)
            try:
                got_used, _ = exporter_values(self.scrape())
                got_inv, _ = exporter_values(self.scrape(), "minbw_bandwidth_inventory_bits_per_second")
            except OSError as e:
                got_used, got_inv = {}, {}
                diff = [f"scrape failed: {e}"]
            have = {k: (got_inv.get(k), got_used.get(k)) for k in want}
            diff = [f"{k}: exporter {have[k]}, Placement {want[k]}" for k in want if have[k] != want[k]]
            diff += [f"{k}: exporter only" for k in got_used if k not in want]
            if not diff or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        took = round(time.monotonic() - t, 1)
        self.inv["exporter_equals_placement"].check(not diff, f"at the end, after {took} s: {len(diff)} differ: "
                                                              f"{diff[:3]}")
        return {"providers": len(bridges), "seconds_to_equal": took, "differences": len(diff)}

    def teardown(self) -> list[str]:
        """Everything the soak started, stopped; returns what was still running after."""
        self.quit.set()
        self.stopfile.touch()
        if getattr(self, "probe", None) is not None and self.probe.stdin:
            try:
                self.probe.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, 15)
                    p.wait(15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, 9)
                    except ProcessLookupError:
                        pass
                    p.wait()
        if hasattr(self, "faults"):
            try:
                self.faults.heal_all()
            except Exception as e:
                self.log(f"heal_all at teardown: {e}")
        if hasattr(getattr(self, "faults", None), "serving_processes"):
            # the topology's CPU seconds (its processes alive at the end: those a fault killed are not counted)
            self.topology_cpu = round(sum(cpu_seconds(pid) for pid in self.faults.serving_processes()), 1)
        if hasattr(self, "server"):
            self.server.stop()
            if hasattr(getattr(self, "faults", None), "close"):
                self.faults.close()
        time.sleep(0.5)
        left = [f"{p.soak_name} {p.pid}" for p in self.procs if p.poll() is None]
        if hasattr(getattr(self, "faults", None), "serving_processes"):
            left += [f"topology process {pid}" for pid in self.faults.serving_processes()]
        return left

    # ------------------------------------------------------------ the whole run
    def run(self) -> dict:
        cfg = self.cfg
        print(f"soak: seed {cfg.seed} (replay: --seed {cfg.seed}), topology {cfg.topology}, {cfg.seconds:.0f} s",
              flush=True)
        t_setup = time.monotonic()
        result: dict = {}
        quiet = cfg.quiet or max(10.0, round(cfg.seconds * 0.2))
        try:
            self.start_topology()
            self.setup_hosts()
            gap = cfg.gap if cfg.gap[1] else ((1.0, 3.0) if cfg.seconds < 120 else (3.0, 12.0))
            plan = schedule(cfg.seed, self.faults.kinds, cfg.seconds, quiet, gap)
            self.log(f"set-up {time.monotonic() - t_setup:.0f} s; schedule: "
                     + ", ".join(f"{p.kind}@{p.at:.0f}s/{p.hold:.0f}s" for p in plan))
            self.start_readers()
            self.start_workload()
            self.t0 = time.monotonic()
            self.gofile.touch()
            self.start_threads()
            faults_thread = threading.Thread(target=self._guard(lambda: self.run_faults(plan)), daemon=True)
            faults_thread.start()
            while self.now() < cfg.seconds:
                time.sleep(0.5)
                if any(p.poll() is not None for p in self.procs if p.soak_name != "dbprobe"):
                    dead = [p.soak_name for p in self.procs if p.poll() is not None]
                    raise RuntimeError(f"a workload process ended before the soak's end: {dead}")
            faults_thread.join(120)
            self.log("the soak's time is up: workload stopping, faults healed")
            self.stop_workload()
            self.faults.heal_all()
            self.log("workload stopped")
            self.t_end = self.now()
            ops = reportlib.read_ledgers(self.ledgers, self.t0)
            self.quit.set()
            time.sleep(1.2)
            for o in ops:
                if o["outcome"] != "succeeded" and o["kind"] != "scrape":
                    self.inv["one_line_failures"].check(o["stderr_lines"] == 1 and not o["traceback"]
                                                        and o["cause"].startswith("minbw: error: "),
                                                        f"{o['kind']} exit {o['rc']}: {o['stderr_lines']} lines, "
                                                        f"first: {o['cause']!r}")
            self.log("end checks")
            result["end"] = self.end_checks(ops)
            self.log("end checks done")
            exporter_err = (self.out / "exporter.err").read_text(errors="replace")
            self.inv["one_line_failures"].check("Traceback" not in exporter_err,
                                                "the exporter printed a traceback (exporter.err)")
            self._rss_check(quiet)
        finally:
            left = self.teardown()
        self.inv["no_process_leaked"].check(not left, f"still running after the teardown: {left}")
        ops = reportlib.read_ledgers(self.ledgers, self.t0) if self.t0 else []
        result.update(seed=cfg.seed, topology=cfg.topology, seconds=cfg.seconds, config=_jsonable(asdict(cfg)),
                      describe=self.server.describe() if hasattr(self, "server") else "",
                      replay=f"python -m tests.support.soak.runner --topology {cfg.topology} --seconds {cfg.seconds:g} "
                             f"--seed {cfg.seed} --hosts {cfg.hosts}",
                      kinds=list(self.faults.kinds) if hasattr(self, "faults") else [],
                      quiet_until=quiet, t_end=getattr(self, "t_end", None),
                      faults=self.injected, invariants={k: asdict(v) for k, v in self.inv.items()},
                      supervisor_restarts=[(round(t - self.t0, 1), n) for t, n in getattr(self.faults, "restarts", [])]
                      if hasattr(self, "faults") else [],
                      rss=self.rss, samples_missed=sum(1 for s in self.samples if not s["ok"]),
                      samples=len(self.samples), scrapes_unjudged=self.unjudged,
                      topology_cpu_s=getattr(self, "topology_cpu", None),
                      transient_overcapacity=self.transient_over,
                      not_run={"audit": "needs Nova and Neutron: not on a Placement-only topology",
                               "server heal": "needs Nova and Neutron: not on a Placement-only topology",
                               "server moves": "the mini-cloud only: not in this soak"})
        rep = reportlib.build(result, ops)
        reportlib.write(rep, ops, self.out)
        return rep

    def _rss_check(self, quiet: float) -> None:
        base = [kb for t, kb in self.rss if t <= quiet and kb]
        last = [kb for t, kb in self.rss if t >= self.cfg.seconds * 0.8 and kb]
        if base and last:
            bound = max(base) * 1.25 + 16 * 1024
            self.inv["exporter_rss_bounded"].check(max(last) <= bound, f"RSS {max(last) // 1024} MB at the end, "
                                                                       f"bound {bound // 1024:.0f} MB")
        else:
            self.inv["exporter_rss_bounded"].check(False, f"too few RSS samples ({len(self.rss)})")


def _jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}


def lasting(since: dict, seen: set, now, t: float, after: float) -> tuple[int, list]:
    """A condition sampled at ``t`` (``now``: the keys it holds for), each key's first sample kept in ``since`` (a key
    gone from a sample is forgotten): how many keys are new at this sample, and the keys held ``after`` seconds or
    more that ``seen`` lacks (added to it: each is reported once)."""
    new = 0
    for k in now:
        if k not in since:
            since[k] = t
            new += 1
    for k in list(since):
        if k not in now:
            del since[k]
    stuck = [k for k, first in since.items() if t - first >= after and k not in seen]
    seen.update(stuck)
    return new, stuck


def exporter_values(text: str, family: str = "minbw_bandwidth_used_bits_per_second", scalar: bool = False):
    """{(provider, direction): value} of one metric family of a scrape, and its collection's age (None: none yet);
    ``scalar``: the one value of an unlabelled family (None: absent)."""
    from prometheus_client.parser import text_string_to_metric_families
    values, age = {}, None
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == family:
                if scalar:
                    return s.value
                values[(s.labels["provider"], s.labels["direction"])] = s.value
            elif s.name == "minbw_collection_age_seconds":
                age = s.value
    return None if scalar else (values, age)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process (its waited-for children's included)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()
    except (FileNotFoundError, IndexError):
        return 0.0
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


def group_rss_kb(pgid: int) -> int:
    total = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = d.joinpath("stat").read_text().split(") ", 1)[1].split()
            if int(stat[2]) == pgid:
                for line in d.joinpath("status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (FileNotFoundError, IndexError, ProcessLookupError):
            pass
    return total


def in_namespace(argv: list[str]) -> int:
    """This runner again, in a network and mount namespace of its own (its loopback up: tests/support/netns.py)."""
    env = {**os.environ, "SOAK_PRIVATE_MOUNTS": "1"}
    cmd = ["unshare", "--net", "--mount", "--propagation", "private", "--", sys.executable,
           str(ROOT / "tests/support/netns.py"), sys.executable, "-m", "tests.support.soak.runner",
           *[a for a in argv if a != "--netns"]]
    return subprocess.run(cmd, env=env, cwd=ROOT).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--topology", choices=["prod", "galera"], default="prod")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_S", 600)))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--hosts", type=int, default=1000, help="the fleet the syncs keep (default 1000)")
    p.add_argument("--claimers", type=int, default=2)
    p.add_argument("--workers", type=int, default=4, help="Placement's uWSGI workers")
    p.add_argument("--netns", action="store_true", help="run in a network and mount namespace of its own (root)")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.hosts < 1 or args.claimers < 1:
        p.error("--seconds, --hosts and --claimers must be positive")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    out = args.out or ROOT / ".state" / "soak" / f"{args.topology}-{seed}"
    if args.netns and os.environ.get("SOAK_PRIVATE_MOUNTS") != "1":
        return in_namespace(["--topology", args.topology, "--seconds", str(args.seconds), "--seed", str(seed),
                             "--out", str(out), "--hosts", str(args.hosts), "--claimers", str(args.claimers),
                             "--workers", str(args.workers)])
    cfg = Config(args.topology, args.seconds, seed, out, hosts=args.hosts, claimers=args.claimers,
                 workers=args.workers)
    rep = Soak(cfg).run()
    print(rep["table"], flush=True)
    print(f"soak: report in {out}/report.json, report.md, latency.png; seed {seed}", flush=True)
    return 0 if rep["violations"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
