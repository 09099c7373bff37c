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
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.support.soak import report as reportlib
from tests.support.soak import samplers
from tests.support.soak.cloud import CLOUD_HOLD
from tests.support.soak.faults import FaultNotHealed, Injected
from tests.support.soak.judges import (CLAIM_KBPS, cloud_invariants, exporter_end_check, exporter_values, invariants,
                                       held_claims, judge_claims_and_frees, judge_cloud, judge_failures,
                                       rss_check)
from tests.support.soak.samplers import CLIENT_TIMEOUT, cpu_seconds
from tests.support.soak.workload import (ROOT_INVENTORY, claim_host_ini, fleet_host, fleet_ini)

ROOT = Path(__file__).resolve().parents[3]
MINBW = str(Path(sys.executable).parent / "minbw")  # the command line as users run it
CLOUD_HOSTS = 200   # the cloud topology's fleet by default: what the mini-cloud's Placement (keystone auth) bears

# hold: seconds a fault stays before heal (a pause outlasts the client's timeout; a kill: the time until the
# supervisor starts the process again)
HOLD = {"kill_placement_master": (1.0, 4.0), "kill_placement_worker": (0.5, 2.0), "pause_placement": (6.0, 10.0),
        "pause_placement_worker": (6.0, 10.0), "kill_mariadb": (1.0, 4.0), "pause_mariadb": (6.0, 10.0),
        "slow_placement": (6.0, 12.0), "fill_mariadb_disk": (4.0, 8.0)}
HOLD.update(CLOUD_HOLD)
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
    servers: int = 2            # cloud: servers at most at once


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
        self.inv = invariants()
        # the claims' physnet: the cloud's computes have br-test on physnet0 (the servers' ports): the claim hosts
        # there are on a physnet of their own, so the claimers and Nova do not take each other's bandwidth
        self.claim_physnet = "physnet7" if cfg.topology == "cloud" else "physnet0"
        # where Nova runs, the soak's hosts are none of its computes: their roots are the sync's (a demo's way)
        self.not_nova = ("--ignore-nova-compute",) if cfg.topology == "cloud" else ()

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
        if self.cfg.topology == "cloud":
            from tests.support.soak import cloud
            self.server = cloud.MiniCloudTopology()
            self.log(f"adopting {self.server.describe()} at {self.server.state_dir}")
            self.server.start()
            self.faults = cloud.CloudFaults(self.server, log=self.log)
            self.inv.update(cloud_invariants())
        elif self.cfg.topology == "galera":
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
            (claimdir / f"{h}.ini").write_text(claim_host_ini(h, CLAIM_KBPS * cfg.claims_per_host,
                                                               self.claim_physnet))
        self.cache = self.out / "sync-cache.json"
        # the providers there before the soak's (the cloud's own: its computes, agents and bridges)
        self.base_providers = len(self.api().list_providers())
        t = time.monotonic()
        for what, files, cache in (("claim hosts", sorted(claimdir.glob("*.ini")), ["--no-cache"]),
                                   ("fleet", sorted(self.fleet.glob("*.ini")), ["--cache", str(self.cache)])):
            r = self.minbw("provider", "sync", "--agent-config", *map(str, files), "--create-root", *ROOT_INVENTORY,
                           *self.not_nova,
                           *cache, "--workers", "8", "-f", "value", "-c", "step")
            if r.returncode != 0:
                raise RuntimeError(f"the first sync of the {what} failed ({r.returncode}): {r.stderr[-2000:]}")
        api = self.api()
        self.claim_bridges = {p.uuid: p.name for p in api.list_providers() if p.name.endswith(":br-phys0")}
        self.expected_providers = self.base_providers + 3 * (cfg.hosts + cfg.claim_hosts)
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
        qos = f"min_bw:egress:{CLAIM_KBPS},min_bw:ingress:{CLAIM_KBPS},physnet={self.claim_physnet}"
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
                              "--pause", str(cfg.sync_pause), "--go", str(self.gofile), *self.not_nova])
        deadline = time.monotonic() + 180
        if cfg.topology == "cloud":
            for role in ("servers", "auditor"):
                ledger = self.out / f"ops-{role}.jsonl"
                self.ledgers.append(ledger)
                self.spawn(role, [sys.executable, "-m", "tests.support.soak.cloudwork", role, "--ledger", str(ledger),
                                  "--stop", str(self.stopfile), "--seed", str(cfg.seed), "--cloud", self.server.cloud,
                                  "--max", str(cfg.servers), "--pause", "1" if role == "servers" else "4",
                                  "--go", str(self.gofile)])
        roles = cfg.claimers + 1 + (2 if cfg.topology == "cloud" else 0)
        while len(list(self.out.glob("go.*.ready"))) < roles:
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
        for target in samplers.SAMPLERS:
            threading.Thread(target=self._guard(target, self), daemon=True, name=target.__name__).start()

    def _guard(self, fn, *args):
        def run():
            try:
                fn(*args)
            except Exception:
                self.log(f"{fn.__name__} died: {traceback.format_exc()}")
        return run

    def scrape(self) -> str:
        return samplers.scrape(self.exporter_port)

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
            if getattr(p, "soak_name", "").startswith(("claimer", "syncer", "servers", "auditor")):
                try:
                    p.wait(240 if p.soak_name == "servers" else 120)
                except subprocess.TimeoutExpired:
                    self.log(f"{p.soak_name} did not stop in 120 s: killed")
                    os.killpg(p.pid, 9)
                    p.wait()

    def end_checks(self, ops: list[dict]) -> dict:
        end: dict = {}
        api = self.api()
        # each claim's and free's last outcome, per consumer
        judge_claims_and_frees(self, api, ops)
        if self.cfg.topology == "cloud":
            end["cloud"] = judge_cloud(self, api, ops, self.db("consumers"))
        # the sync converges on its next run, and a check that trusts no cache plans nothing
        files = sorted(map(str, self.fleet.glob("*.ini")))
        t = time.monotonic()
        r = self.minbw("provider", "sync", "--agent-config", *files, "--create-root", *ROOT_INVENTORY,
                       *self.not_nova, "--cache", str(self.cache), "-f", "value", "-c", "step")
        end["convergence_sync"] = {"rc": r.returncode, "seconds": round(time.monotonic() - t, 1),
                                   "stderr": r.stderr.strip()[-500:]}
        self.inv["sync_converges"].check(r.returncode == 0, f"the sync after the faults: exit {r.returncode}: "
                                                            f"{r.stderr.strip()[-300:]}")
        r = self.minbw("provider", "sync", "--agent-config", *files, "--create-root", *ROOT_INVENTORY,
                       *self.not_nova, "--no-cache",
                       "--dry-run", "--json")
        writes = json.loads(r.stdout)["writes"] if r.returncode == 0 else None
        end["check_writes"] = writes
        self.inv["sync_converges"].check(writes == 0, f"a sync with no cache then plans {writes} writes "
                                                      f"(exit {r.returncode}: {r.stderr.strip()[-300:]})")
        # orphans and providers once more, quiet
        final = self.db("sample")
        end["final_sample"] = final
        self.inv["no_overcapacity"].check(final["ok"] and not final["over"], f"at the end: {final}")
        self.inv["no_orphans"].check(final["ok"] and final["orphans"] == [0, 0], f"at the end: {final}")
        self.inv["no_duplicate_provider"].check(final["ok"] and final["providers"] == self.expected_providers,
                                                f"at the end: {final.get('providers')} of {self.expected_providers}")
        end["exporter_end"] = exporter_end_check(self, api)
        return end

    def db(self, what: str):
        """tests/support/soak/orphans.py's ``what`` (sample, consumers) over Placement's database, in .venv-cloud
        (its pymysql)."""
        return json.loads(subprocess.run([str(ROOT / ".venv-cloud/bin/python"), "-c",
                                          "import json,sys; sys.path.insert(0, sys.argv[2]); import orphans; "
                                          f"print(json.dumps(orphans.{what}(sys.argv[1])))",
                                          self.db_url, str(ROOT / "tests/support/soak")],
                                         capture_output=True, text=True, check=True).stdout)

    def cleanup_cloud(self) -> None:
        """On a cloud the soak adopted: its servers, ports, network, policy, flavors and image, the claims' allocations
        and the providers its syncs made (children first) gone."""
        from tests.support.soak import cloudwork
        try:
            gone = cloudwork.cleanup(self.server.connect())
            ops = reportlib.read_ledgers(self.ledgers, self.t0)
            # the claims held, and those that failed (a write whose outcome the claim did not learn may have stayed)
            failed = {o["consumer"] for o in ops if o["kind"] == "claim" and o["outcome"] == "failed"}
            for c in sorted(held_claims(ops) | failed):
                self.minbw("allocation", "delete", "--consumer", c)
            api = self.api()
            mine = [p for p in api.list_providers() if p.name.startswith(("soak-fleet-", "soak-claim-"))]
            for p in sorted(mine, key=lambda p: -p.name.count(":")):
                api.delete_provider(p.uuid)
            self.log(f"the cloud cleaned: {gone}, {len(mine)} providers deleted")
        except Exception as e:
            self.log(f"cleaning the cloud failed: {type(e).__name__}: {e}")

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
            if self.cfg.topology == "cloud":
                self.cleanup_cloud()   # the cloud stays (its starter's): what the soak made goes
            self.server.stop()
            if hasattr(getattr(self, "faults", None), "close"):
                self.faults.close()
        time.sleep(0.5)
        left = [f"{p.soak_name} {p.pid}" for p in self.procs if p.poll() is None]
        if hasattr(getattr(self, "faults", None), "serving_processes") and self.cfg.topology != "cloud":
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
            judge_failures(self, ops)
            self.log("end checks")
            result["end"] = self.end_checks(ops)
            self.log("end checks done")
            exporter_err = (self.out / "exporter.err").read_text(errors="replace")
            self.inv["one_line_failures"].check("Traceback" not in exporter_err,
                                                "the exporter printed a traceback (exporter.err)")
            rss_check(self, quiet)
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
                      not_run={} if cfg.topology == "cloud" else {
                               "audit": "needs Nova and Neutron: not on a Placement-only topology",
                               "server heal": "needs Nova and Neutron: not on a Placement-only topology",
                               "server moves": "the mini-cloud only: not in this soak"})
        rep = reportlib.build(result, ops)
        reportlib.write(rep, ops, self.out)
        return rep


def _jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}



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
    p.add_argument("--topology", choices=["prod", "galera", "cloud"], default="prod",
                   help="cloud: the running mini-cloud MINICLOUD_STATE names (default .state/minicloud; "
                        "make soak SOAK_TOPOLOGY=cloud starts one)")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_S", 600)))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--hosts", type=int, default=None,
                   help=f"the fleet the syncs keep (default 1000; the cloud's Placement: {CLOUD_HOSTS})")
    p.add_argument("--servers", type=int, default=2, help="cloud: servers at most at once (default 2)")
    p.add_argument("--claimers", type=int, default=2)
    p.add_argument("--workers", type=int, default=4, help="Placement's uWSGI workers")
    p.add_argument("--netns", action="store_true", help="run in a network and mount namespace of its own (root)")
    args = p.parse_args(argv)
    if args.hosts is None:
        args.hosts = CLOUD_HOSTS if args.topology == "cloud" else 1000
    if args.seconds <= 0 or args.hosts < 1 or args.claimers < 1 or args.servers < 1:
        p.error("--seconds, --hosts, --claimers and --servers must be positive")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    out = args.out or ROOT / ".state" / "soak" / f"{args.topology}-{seed}"
    if args.netns and os.environ.get("SOAK_PRIVATE_MOUNTS") != "1":
        return in_namespace(["--topology", args.topology, "--seconds", str(args.seconds), "--seed", str(seed),
                             "--out", str(out), "--hosts", str(args.hosts), "--claimers", str(args.claimers),
                             "--workers", str(args.workers), "--servers", str(args.servers)])
    cfg = Config(args.topology, args.seconds, seed, out, hosts=args.hosts, claimers=args.claimers,
                 workers=args.workers, servers=args.servers)
    rep = Soak(cfg).run()
    print(rep["table"], flush=True)
    print(f"soak: report in {out}/report.json, report.md, latency.png; seed {seed}", flush=True)
    return 0 if rep["violations"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
