#!/usr/bin/env python3
"""minbw benchmarks (``make bench``): tables on stdout, progress on stderr, ``--json`` for machines.

Sections (each a ``run(ctx) -> Section`` in this directory, registered in SECTIONS):

- ``sync``   provider sync for N hosts, minbw vs Neutron's own algorithm, same Placement.
- ``sync_warm`` (not by default) the warm provider sync of N hosts, files unchanged, beside the listing's own
             fetch + decode measured in the same run (issue 46: ≤ 1.5×); the full path and the CLI's process too.
- ``sync_ovn`` the same for N ML2/OVN chassis, minbw vs Neutron's OVN placement extension.
- ``sync_ovn_isolation`` (not by default) minbw's OVN sync of N chassis from a real southbound database (an
             ovsdb-server of its own, ovn-sbctl), clean vs 10 chassis broken: the others synced as in the clean
             run, each skipped chassis named once, exit 3, wall time broken ÷ clean.
- ``query``  client overhead (query build + parse + mapping) at 1,000 candidates beside
             the raw GET through openstacksdk's placement adapter.
- ``claims`` claim throughput vs raw PUT throughput, 1 and 8 claimer processes (``--placement prod``:
             1, 8, 16 and 32).
- ``overcommit`` Placement's overcommit under concurrent claims (always on production-style Placements,
             stock and patched, retry count 10): raw, plain and verified claims at 8, 16, 32 claimers; the
             cost of the verification; raw throughput stock vs patched.
- ``delete_generation`` (not by default) the delete-generation reproducer (docs/placement-generations.md)
             against a fresh Placement: stock, or patched with ``PRODPLACEMENT_PATCHED=1 ... --placement prod``.
- ``drain``  the drain planner (minbw.plan.drain, pure: no Placement) at N servers x N hosts (the largest of
             ``--sizes``): the greedy path, the forced exact path (HiGHS), a tight case where greedy strands servers.
- ``cli_start`` the command line's start: ``minbw --help`` and ``minbw usage show`` (fresh processes, the embedded
             Placement with 10 providers) beside ``openstack resource provider list`` (osc-placement), in the same run.
- ``exporter_auth`` (not by default) the exporter with TLS and basic authentication (bcrypt, cost 10) scraped by an
             authorised scraper alone, beside 50 clients sending wrong passwords, and beside 50 sending none
             (bench/exporter_auth_flood.py): the authorised scrapes' p50/p99/max, the ratio to the scraper alone.
- ``exporter_scale`` (not by default) the exporter in its own process at each of ``--sizes`` hosts (the
             workload built through the API, minbw's sync, bulk POST /allocations): its collections, peak RSS,
             scrapes from another process.

``--placement prod`` runs every section on the production-style Placement (tests/prodplacement:
uWSGI worker processes on MariaDB) instead of the embedded one; ``--placement galera`` on the Galera topology
(tests/support/galera: two uWSGI API processes behind HAProxy on a three-node MariaDB Galera cluster behind
HAProxy; ``--galera-mode``).

``sync`` options: ``--sync-peer neutron`` (default: Neutron's placement sync), ``raw`` (the same POST/PUT calls
minbw's cold run made, replayed with its parallelism through openstacksdk on a fresh server with the same roots)
or ``none`` (minbw's runs alone); ``--sync-nocache no`` leaves out minbw's warm ``--no-cache`` run.

``query`` and ``claims`` use the same 1,000-host Placement: built once per run, copied for the
second (each still gets its own fresh server process); on ``prod`` the claims section reuses the
query section's running server.

Exit status: 0 done (targets met or not: see the Targets tables; ``--strict`` makes a missed
target exit 2); 1 when a correctness check inside a benchmark failed or a run broke.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.common import BenchError, Context, Servers, progress  # noqa: E402


def _sync(ctx):
    from bench import sync_bench
    return sync_bench.run(ctx)


def _sync_warm(ctx):
    from bench import sync_warm_bench
    return sync_warm_bench.run(ctx)


def _sync_ovn(ctx):
    from bench import sync_ovn_bench
    return sync_ovn_bench.run(ctx)


def _sync_ovn_isolation(ctx):
    from bench import sync_ovn_isolation_bench
    return sync_ovn_isolation_bench.run(ctx)


def _query(ctx):
    from bench import query_bench
    return query_bench.run(ctx)


def _claims(ctx):
    from bench import claims_bench
    return claims_bench.run(ctx)


def _overcommit(ctx):
    from bench import overcommit_bench
    return overcommit_bench.run(ctx)


def _delete_generation(ctx):
    from bench import generations_bench
    return generations_bench.run(ctx)


def _reports(ctx):
    from bench import reports_bench
    return reports_bench.run(ctx)


def _exporter(ctx):
    from bench import reports_bench
    return reports_bench.run(ctx, parts=("exporter",))


def _exporter_scale(ctx):
    from bench import exporter_scale_bench
    return exporter_scale_bench.run(ctx)


def _heal(ctx):
    from bench import reports_bench
    return reports_bench.run(ctx, parts=("heal",))


def _exporter_heal(ctx):
    from bench import reports_bench
    return reports_bench.run(ctx, parts=("heal", "exporter"))


def _drain(ctx):
    from bench import drain_bench
    return drain_bench.run(ctx)


def _exporter_auth(ctx):
    from bench import exporter_auth_flood
    return exporter_auth_flood.run(ctx)


def _cli_start(ctx):
    from bench import cli_start_bench
    return cli_start_bench.run(ctx)


SECTIONS = {
    "sync": _sync,
    "sync_warm": _sync_warm,  # the warm sync (files unchanged) beside the listing's fetch + decode
    "sync_ovn": _sync_ovn,  # ML2/OVN chassis: minbw vs Neutron's OVN placement extension
    "sync_ovn_isolation": _sync_ovn_isolation,  # OVN from a southbound DB: 10 broken chassis vs clean
    "query": _query,     # client overhead at 1,000 candidates vs raw GET
    "claims": _claims,   # claim throughput vs raw PUT, 1 and 8 claimers
    "overcommit": _overcommit,  # Placement's overcommit: raw, plain and verified claims; stock vs patched
    "delete_generation": _delete_generation,  # the delete-generation reproducer (stock; PRODPLACEMENT_PATCHED=1)
    "reports": _reports,  # audit/drift/capacity/heal reads and exporter scrapes at the largest size
    "exporter": _exporter,  # the exporter's scrapes alone (the reports section's workload)
    "exporter_scale": _exporter_scale,  # the exporter in its own process at each of --sizes, scraped from another
    "heal": _heal,  # server heal --dry-run's Placement side alone (the reports section's workload)
    "exporter_heal": _exporter_heal,  # both, on one workload built once
    "drain": _drain,  # the drain planner (pure): greedy and exact at N servers x N hosts
    "cli_start": _cli_start,  # minbw --help and usage show, fresh processes, beside openstack resource provider list
    "exporter_auth": _exporter_auth,  # the exporter (TLS, basic auth) scraped beside 50 wrong-password clients
}
# parts of reports, to measure alone
DEFAULT_SECTIONS = [s for s in SECTIONS if s not in ("exporter", "heal", "exporter_heal", "delete_generation",
                                                     "exporter_scale", "sync_ovn_isolation", "sync_warm",
                                                     "exporter_auth")]
DEFAULT_SIZES = (10, 100, 500)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return sizes


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES),
                   help="numbers of hosts for the sync benchmark (default: 10,100,500)")
    p.add_argument("--sections", default=",".join(DEFAULT_SECTIONS),
                   help=f"which sections to run, comma-separated (default: {','.join(DEFAULT_SECTIONS)}; "
                        f"choices: {','.join(SECTIONS)})")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.add_argument("--json-out", type=Path, help="also write the JSON document to this file")
    p.add_argument("--diagnose", choices=("auto", "always", "never"), default="auto",
                   help="measure where minbw's warm sync time goes: when a speed target is missed (auto)")
    p.add_argument("--state-dir", type=Path, help="where the Placements keep their state (default: a temp dir)")
    p.add_argument("--keep-state", action="store_true", help="do not remove the state directory afterwards")
    p.add_argument("--strict", action="store_true", help="exit 2 when a target is not met")
    p.add_argument("--placement", choices=Servers.KINDS, default="embedded",
                   help="embedded (default: wsgiref, SQLite), prod (uWSGI workers on MariaDB, "
                        "tests/support/prodplacement/prodplacement.sh; installs MariaDB and .venv-cloud when missing) "
                        "or galera (two uWSGI API processes behind HAProxy on a 3-node MariaDB Galera cluster, "
                        "tests/support/galera/galera.sh)")
    p.add_argument("--workers", type=int, default=4,
                   help="uWSGI worker processes with --placement prod (default 4); with galera, split over its two "
                        "API processes (default 4: 2 each)")
    p.add_argument("--galera-mode", choices=Servers.GALERA_MODES, default="single-writer",
                   help="with --placement galera: HAProxy sends every database connection to node 1 (single-writer, "
                        "the default, kolla-ansible's) or round robin to all three (multi-writer)")
    p.add_argument("--sync-peer", choices=("neutron", "raw", "none"), default="neutron",
                   help="the sync section's peer: Neutron's placement sync (default), raw (minbw's cold writes "
                        "replayed with the same parallelism on a fresh server with the same roots) or none")
    p.add_argument("--sync-nocache", choices=("yes", "no"), default="yes",
                   help="the sync section: also minbw's warm run with --no-cache (default yes)")
    args = p.parse_args(argv)
    names = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")

    warnings.filterwarnings("ignore")
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="minbw-bench-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    if args.workers < 1:
        p.error("--workers must be at least 1")
    servers = Servers(state_dir, args.placement, args.workers, args.galera_mode)
    ctx = Context(sizes=args.sizes, servers=servers, state_dir=state_dir, diagnose=args.diagnose,
                  options={"placement": args.placement, "sync_peer": args.sync_peer,
                           "sync_nocache": args.sync_nocache == "yes"})
    started = time.perf_counter()
    load_at_start = common.loadavg()
    sections = []
    status = 0
    try:
        for name in names:
            progress(f"section {name}")
            sections.append(SECTIONS[name](ctx))
    except BenchError as e:
        print(f"\nBENCHMARK FAILED (correctness): {e}", file=sys.stderr)
        status = 1
    except Exception:  # a broken run must not look like a result
        traceback.print_exc()
        print("\nBENCHMARK FAILED: the run broke (see above)", file=sys.stderr)
        status = 1
    finally:
        servers.stop_all()
        if not args.keep_state and not args.state_dir:
            shutil.rmtree(state_dir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    if status:
        return status

    facts = {**common.machine(), "loadavg_1min_at_start": load_at_start, "placement": servers.describe()}
    missed = [t for s in sections for t in s.targets if not t.met]
    doc = {"command": " ".join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])),
           "machine": facts, "elapsed_s": elapsed, "sections": [s.to_dict() for s in sections],
           "targets_missed": len(missed)}
    if args.json_out:
        args.json_out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        v = facts["versions"]
        print(f"minbw benchmarks — {facts['nproc']} CPUs ({facts['cpu']}), {facts['memory_gib']} GiB, "
              f"Python {facts['python']}, openstack-placement {v['openstack-placement']} ({facts['placement']}), "
              f"openstacksdk {v['openstacksdk']}, neutron {v['neutron']}, neutron-lib {v['neutron-lib']}; "
              f"load average {facts['loadavg_1min_at_start']} at start, {facts['loadavg_1min_at_end']} at end")
        for s in sections:
            print()
            print(s.render())
        print()
        print(f"{len(missed)} target(s) not met; {elapsed / 60:.1f} minutes" if missed
              else f"all targets met; {elapsed / 60:.1f} minutes")
    return 2 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
