"""The soak's invariants (tests/support/soak/runner.py): each counted (checks, violations, the first examples), and
the judges that count them: a database sample, a scrape against the direct reads, the ledgers' claims and frees at
the end, the failures' lines, the exporter at the end, its RSS. Each judge takes the soak (its ``inv``, the state
its samplers keep) and what it judges; the runner says when."""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
BANDWIDTH = dict.fromkeys((EGR, IGR))  # the classes usages_of sums (as a provider's inventories name them)
CLAIM_KBPS = 1000
OVER_AFTER = 15.0     # seconds a provider may stay over capacity while the claim that overfilled it undoes itself
ORPHAN_AFTER = 5.0    # seconds a consumer may stay without allocations while its claim writes them


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


def invariants() -> dict[str, Invariant]:
    """Every topology's invariants, by name, in the report's order."""
    return {i.name: i for i in [
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


def database_time(soak, s: dict) -> float:
    """The seconds the database answered until sample ``s``: the time between two samples that both answered.
    While it does not (paused, killed), a writer between its two transactions, or a claim undoing its write, waits
    for it too: that time does not count towards OVER_AFTER and ORPHAN_AFTER (a MariaDB paused 6-10 s held a claim's
    consumer without its allocations past ORPHAN_AFTER: the cloud soak, docs/soak.md)."""
    prev = getattr(soak, "_last_sample", None)
    clock = getattr(soak, "_database_clock", 0.0)
    if prev is not None and prev["ok"] and s["ok"]:
        clock += s["t"] - prev["t"]
    soak._last_sample, soak._database_clock = s, clock
    return clock


def judge_sample(soak, s: dict) -> None:
    """One database sample (tests/support/soak/orphans.py's ``sample``, its time the soak's): over capacity,
    orphans, the provider count; a sample that failed only stops the database's clock."""
    t = database_time(soak, s)
    if not s["ok"]:
        return
    # stock Placement accepts concurrent claims over capacity (docs/placement-overcommit.md); minbw's
    # verified claim undoes its own write then. Over capacity for a moment is counted (transient); still over
    # OVER_AFTER seconds later is a violation (each provider and class once)
    now_over = {(name, rc): (used, cap) for name, rc, used, cap in s["over"]}
    new, stuck = lasting(soak.over_since, soak.over_seen, now_over, t, OVER_AFTER)
    soak.transient_over += new
    soak.inv["no_overcapacity"].check(not stuck, f"{s['t']:.1f}s over capacity for {OVER_AFTER} s of the "
                                                 "database's: "
                                                 + "; ".join(f"{n} class {rc}: used {now_over[(n, rc)][0]} > "
                                                             f"{now_over[(n, rc)][1]}" for n, rc in stuck))
    # a consumer without allocations for a moment is a claim between its two transactions; one still
    # without them ORPHAN_AFTER seconds later is an orphan (each counted once)
    _, old = lasting(soak.empty_since, soak.orphans_seen, set(s["empty_consumers"]), t, ORPHAN_AFTER)
    a, b = s["orphans"]
    soak.inv["no_orphans"].check(not old and b == 0, f"{s['t']:.1f}s consumers without allocations for "
                                                     f"{ORPHAN_AFTER} s of the database's: {old}; {b} allocations "
                                                     "without consumer")
    soak.inv["no_duplicate_provider"].check(s["providers"] == soak.expected_providers,
                                            f"{s['t']:.1f}s {s['providers']} providers, "
                                            f"{soak.expected_providers} expected")


def judge_scrape(soak, text: str, t: float) -> None:
    """One scrape (taken at ``t``, time.monotonic()) against the direct reads of the claim hosts' bridges."""
    values, age = exporter_values(text)
    duration = exporter_values(text, "minbw_collection_duration_seconds", scalar=True)
    if age is None or duration is None:
        return   # no collection yet
    mine = {n: v for n, v in values.items() if n[0] in soak.claim_bridges.values()}
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
    reads = list(soak.direct)
    before = [d for d in reads if d[1] <= started]
    after = [d for d in reads if d[0] >= ended]
    if not before or not after:
        soak.unjudged += 1
        return
    window = [d for d in reads if before[-1][0] <= d[0] and d[1] <= after[0][1]]
    for u, name in soak.claim_bridges.items():
        for i, d in enumerate(("egress", "ingress")):
            seen = {r[2][u][i] * 1000 for r in window}
            if len(seen) != 1 or len({r[2][u][2] for r in window}) != 1:
                soak.unjudged += 1
                continue
            (held,) = seen
            got = mine.get((name, d))
            soak.inv["exporter_equals_placement"].check(
                got == held, f"{t - soak.t0:.1f}s scrape (collection {started - soak.t0:.1f}-{ended - soak.t0:.1f}s):"
                             f" {name} {d} {got}, Placement held {held} all through it ({len(window)} reads)")


def judge_failures(soak, ops: list[dict]) -> None:
    """Every refused or failed operation of the ledgers printed one line, ``minbw: error: ...``, no traceback."""
    for o in ops:
        # a server operation's cause is Nova's (openstacksdk's exception), not a line minbw printed
        if o["outcome"] != "succeeded" and o["kind"] != "scrape" and o.get("by", "minbw") == "minbw":
            # heal and audit print what they left undone as ``minbw: skipped: ...`` lines (the others were done)
            soak.inv["one_line_failures"].check(o["stderr_lines"] == 1 and not o["traceback"]
                                                and o["cause"].startswith(("minbw: error: ", "minbw: skipped: ")),
                                                f"{o['kind']} exit {o['rc']}: {o['stderr_lines']} lines, "
                                                f"first: {o['cause']!r}")


def judge_claims_and_frees(soak, api, ops: list[dict]) -> None:
    """At the end: each consumer's last claim or free, as its ledger reports it, against its allocations."""
    last: dict[str, dict] = {}
    for o in sorted((o for o in ops if o["kind"] in ("claim", "free")), key=lambda o: o["start"]):
        last[o["consumer"]] = o
    for consumer, o in last.items():
        allocs = api.get_allocations(consumer)["allocations"]
        egr = sum(a["resources"].get(EGR, 0) for a in allocs.values())
        if o["kind"] == "claim" and o["outcome"] in ("succeeded", "written-unverified"):  # exit 5: written too
            soak.inv["claims_present"].check(egr == CLAIM_KBPS, f"claim {consumer} reported {o['outcome']}: "
                                                                f"{egr} kbps present")
        elif o["kind"] == "claim":
            soak.inv["failed_claims_left_nothing"].check(not allocs, f"claim {consumer} {o['outcome']} "
                                                                     f"({o['cause']}) left {allocs}")
        elif o["outcome"] == "succeeded":
            found = {True: "it freed allocations", False: "it found none to free"}.get(o.get("changed"), "")
            soak.inv["frees_gone"].check(not allocs, f"free {consumer} reported done ({found}): {allocs} left")
        # a free that failed last: either state is right; it is freed below


def exporter_end_check(soak, api) -> dict:
    """Once writes stopped: within one collection cycle (plus its own duration), a scrape equals a direct read of
    every bandwidth provider's inventory and usage."""
    # every device provider (host:agent:device; a bridge, or an SR-IOV PF on the cloud), those with bandwidth
    bridges = {p.uuid: p.name for p in api.list_providers() if p.name.count(":") == 2}
    deadline = time.monotonic() + 2 * soak.cfg.interval + 30
    t = time.monotonic()
    diff: list = []
    while True:
        usages = api.usages_of(list(bridges), readers=8)
        invs = {u: api.get_inventories(u)[0] for u in bridges}
        want = {}
        for u, name in bridges.items():
            for rc, d in ((EGR, "egress"), (IGR, "ingress")):
                if rc in invs[u]:   # a bridge with one direction only (the cloud's br-ex: none)
                    want[(name, d)] = (invs[u][rc]["total"] * 1000, usages[u].get(rc, 0) * 1000)
        try:
            got_used, _ = exporter_values(soak.scrape())
            got_inv, _ = exporter_values(soak.scrape(), "minbw_bandwidth_inventory_bits_per_second")
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
    soak.inv["exporter_equals_placement"].check(not diff, f"at the end, after {took} s: {len(diff)} differ: "
                                                          f"{diff[:3]}")
    return {"providers": len(bridges), "seconds_to_equal": took, "differences": len(diff)}


def rss_check(soak, quiet: float) -> None:
    """The exporter's RSS in the last 20 % of the time against its quiet phase's."""
    base = [kb for t, kb in soak.rss if t <= quiet and kb]
    last = [kb for t, kb in soak.rss if t >= soak.cfg.seconds * 0.8 and kb]
    if base and last:
        bound = max(base) * 1.25 + 16 * 1024
        soak.inv["exporter_rss_bounded"].check(max(last) <= bound, f"RSS {max(last) // 1024} MB at the end, "
                                                                   f"bound {bound // 1024:.0f} MB")
    else:
        soak.inv["exporter_rss_bounded"].check(False, f"too few RSS samples ({len(soak.rss)})")


# ------------------------------------------------------------ the cloud topology's (tests/support/soak/cloud.py)
def cloud_invariants() -> dict[str, Invariant]:
    """What the mini-cloud adds (Nova's servers, Neutron's ports): judged at the end, once the faults stopped."""
    return {i.name: i for i in [
        Invariant("servers_allocations_match", "after the faults, every ACTIVE server's allocations match its flavor "
                  "and ports (minbw.ops.servers.verify finds no problem)"),
        Invariant("bindings_name_holders", "after the faults, every port's binding:profile.allocation names a "
                  "provider that holds the port's bandwidth for its server"),
        Invariant("no_allocation_without_owner", "after the faults, every consumer with allocations is a server, a "
                  "migration (one that ended and still holds its allocation: Nova's leak, listed in the report's "
                  "nova_leaks) or a claim reported made and not freed"),
        Invariant("audit_no_false_finding", "after the faults, each finding of `minbw audit` (the claims it is told "
                  "of ignored) is a problem the invariants above see too"),
        Invariant("heal_nothing_to_do", "after the faults, `minbw server heal --dry-run` plans no write, or each it "
                  "plans is for a problem the invariants above see too"),
    ]}


MIGRATION_DONE = frozenset({"confirmed", "reverted", "error", "failed", "cancelled", "completed", "done"})


def settle(conn, bound: float = 180.0) -> list[str]:
    """The soak's servers settled: a VERIFY_RESIZE confirmed, none with a task under way (``bound`` seconds);
    returns those still not settled."""
    from minbw.ops import server_move
    end = time.monotonic() + bound
    while True:
        busy = []
        for s in conn.compute.servers():
            if not s.name.startswith("soak-"):
                continue
            if s.status == "VERIFY_RESIZE":
                try:
                    server_move.confirm(conn, s.id)
                except Exception as e:
                    busy.append(f"{s.id} VERIFY_RESIZE, confirm failed: {e}")
                continue
            if s.task_state or s.status in ("BUILD", "MIGRATING", "RESIZE"):
                busy.append(f"{s.id} {s.status}/{s.task_state}")
        if not busy or time.monotonic() > end:
            return busy
        time.sleep(2.0)


def held_claims(ops: list[dict]) -> set[str]:
    """The claimers' consumers that may hold allocations at the end: last op a claim made (or written, not
    verified), or a free that failed."""
    last: dict[str, dict] = {}
    for o in sorted((o for o in ops if o["kind"] in ("claim", "free")), key=lambda o: o["start"]):
        last[o["consumer"]] = o
    return {c for c, o in last.items() if (o["kind"] == "claim" and o["outcome"] in ("succeeded", "written-unverified"))
            or (o["kind"] == "free" and o["outcome"] != "succeeded")}


def judge_cloud(soak, api, ops: list[dict], consumers: list[str]) -> dict:
    """The cloud's invariants at the end (``consumers``: every consumer with allocations, read from Placement's
    database), then a read-only audit and a dry-run heal judged against them."""
    from minbw.ops import servers as ops_servers
    conn = soak.server.connect()
    end: dict = {"unsettled": settle(conn)}
    every = list(conn.compute.servers(all_projects=True))
    flagged: dict[str, str] = {}   # subject (server, port, consumer) -> the invariant that saw it
    owners = {s.id for s in every} | held_claims(ops)
    # every migration record Nova lists (a deleted server's too): a migration's consumer is its uuid
    migrations = {m["uuid"]: m.get("status") for m in (
        dict(x.to_dict(computed=False), uuid=x.to_dict(computed=False).get("uuid") or x.id)
        for x in conn.compute.migrations())}
    owners |= set(migrations)
    for s in every:
        if s.status != "ACTIVE" or s.task_state:
            continue
        problems = ops_servers.verify(conn, s.id, api).to_dict()["problems"]
        soak.inv["servers_allocations_match"].check(not problems, f"server {s.name} ({s.id}): {problems[:3]}")
        if problems:
            flagged[s.id] = "servers_allocations_match"
    for port in conn.network.ports():
        alloc = (port.binding_profile or {}).get("allocation")
        if not alloc:
            continue
        named = sorted(set(alloc.values()) if isinstance(alloc, dict) else {alloc})
        held = api.get_allocations(port.device_id)["allocations"] if port.device_id else {}
        bad = [rp for rp in named if not any(held.get(rp, {}).get("resources", {}).get(rc, 0) for rc in (EGR, IGR))]
        soak.inv["bindings_name_holders"].check(not bad, f"port {port.name} ({port.id}) of {port.device_id}: its "
                                                         f"binding names {bad}, which hold none of its bandwidth")
        if bad:
            flagged[port.id] = "bindings_name_holders"
    nova_leaks = {}
    for c in consumers:
        soak.inv["no_allocation_without_owner"].check(c in owners, f"consumer {c} holds allocations: no server, "
                                                                   "migration or claim of that id")
        if c not in owners:
            flagged[c] = "no_allocation_without_owner"
        elif migrations.get(c) in MIGRATION_DONE:
            # a migration that ended (confirmed, reverted, error, ...) and still holds its allocation: Nova's
            # clean-up did not happen (a real leak, audit's to find; not minbw's write)
            nova_leaks[c] = migrations[c]
            flagged[c] = f"a {migrations[c]} migration's allocation (Nova's leak)"
    end["nova_leaks"] = nova_leaks
    end["servers"] = {s.status: sum(1 for x in every if x.status == s.status) for s in every}
    end["flagged"] = flagged
    ignore = [a for c in sorted(held_claims(ops)) for a in ("--ignore-consumer", c)]
    service = ("--service-cloud", f"{soak.server.cloud}-nova")
    r = soak.minbw("audit", *service, *ignore, "-f", "json")
    findings = []
    if r.returncode in (0, 3):
        findings = json.loads(r.stdout)["findings"]
        for f in findings:
            real = [s for s in flagged if s in str(f.get("subject", "")) or s in str(f.get("detail", ""))]
            soak.inv["audit_no_false_finding"].check(bool(real), f"audit: {f.get('kind')} {f.get('subject')}: "
                                                                 f"{str(f.get('detail'))[:200]} (no invariant saw it)")
    else:
        soak.inv["audit_no_false_finding"].check(False, f"audit exit {r.returncode}: {r.stderr.strip()[-300:]}")
    if not findings and r.returncode in (0, 3):
        soak.inv["audit_no_false_finding"].check(True)
    end["audit"] = {"exit": r.returncode, "findings": findings, "missed": sorted(
        s for s in flagged if not any(s in str(f.get("subject", "")) for f in findings))}
    r = soak.minbw("server", "heal", *service, "--dry-run", "--json")
    planned = []
    if r.returncode in (0, 3):
        for srv in json.loads(r.stdout):
            groups = [g for g in (srv.get("plan") or {}).get("groups", []) if g.get("status") != "ok"]
            if groups or srv.get("error"):
                planned.append({"server": srv.get("server"), "groups": groups, "error": srv.get("error")})
        for p in planned:
            soak.inv["heal_nothing_to_do"].check(p["server"] in flagged, f"heal would write for server {p['server']}"
                                                                         f" (no invariant saw it): {p}"[:400])
        if not planned:
            soak.inv["heal_nothing_to_do"].check(True)
    else:
        soak.inv["heal_nothing_to_do"].check(False, f"heal --dry-run exit {r.returncode}: {r.stderr.strip()[-300:]}")
    end["heal"] = {"exit": r.returncode, "planned": planned}
    # what the auditor's runs found and did while the soak ran (not judged: moves were under way)
    audits = [o for o in ops if o["kind"] == "audit" and o["outcome"] == "succeeded"]
    end["audits_during"] = {"runs": len(audits),
                            "findings": Counter(f[0] for o in audits for f in o.get("findings", []))}
    end["heals_during"] = [dict(a, t=round(o["start"], 1)) for o in ops if o["kind"] == "heal"
                           for a in o.get("acted", [])]
    return end
