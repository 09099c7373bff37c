"""The soak's writers, each a process of its own running minbw's command line as users do (its ``main``, stdout and
stderr captured per run, so a failure's message is checked as printed), until the stop file appears:

    python -m tests.support.soak.workload claimer --name N --ledger FILE --stop FILE --seed S --qos-port RULES --hold K
    python -m tests.support.soak.workload syncer  --name N --ledger FILE --stop FILE --seed S --fleet DIR --cache FILE

Each run is one line of the ledger (JSON): kind, start and end (time.monotonic, the same clock in every process),
outcome (succeeded, refused, written-unverified, failed), the cause (the first line of what it printed on stderr, for a refusal or a
failure), the number of lines it printed there and whether one was a traceback, and what it changed (the consumer of
a claim or a free; a sync's writes).

A claimer claims (``minbw allocation create``) with a new consumer, or frees (``minbw allocation delete``) one it
holds: half of the time when it holds any, always when it holds ``--hold``. A claim refused (exit 4: no valid host)
is a refusal; a claim written whose verification's read failed (exit 5) is "written-unverified": its consumer is
held (freed later, and judged at the end as a claim made); any other non-zero exit a failure. A free that failed leaves its consumer among those held (tried
again later); its state is unknown until then, and the ledger says so.

A syncer changes the bandwidth of 1 to 5 random hosts of the fleet (their agent files in ``--fleet``), then runs
``minbw provider sync`` of the whole fleet with its cache, as a periodic sync job does.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time
import traceback
import uuid
import warnings
from pathlib import Path

FLEET_BANDWIDTHS = (5_000_000, 10_000_000, 20_000_000, 25_000_000)
FLEET_PHYSNET = "physnet9"  # the claims ask for physnet0: the fleet's bridges never serve them
ROOT_INVENTORY = ("--root-inventory", "VCPU=1000", "--root-inventory", "MEMORY_MB=1000000",
                  "--root-inventory", "DISK_GB=100000")


def fleet_ini(host: str, kbps: int) -> str:
    return (f"[DEFAULT]\nhost = {host}\n\n[ovs]\nbridge_mappings = {FLEET_PHYSNET}:br-phys9\n"
            f"resource_provider_bandwidths = br-phys9:{kbps}:{kbps}\n")


def claim_host_ini(host: str, kbps: int, physnet: str = "physnet0") -> str:
    return (f"[DEFAULT]\nhost = {host}\n\n[ovs]\nbridge_mappings = {physnet}:br-phys0\n"
            f"resource_provider_bandwidths = br-phys0:{kbps}:{kbps}\n")


def fleet_host(i: int) -> str:
    return f"soak-fleet-{i:04d}"


def run_cli(argv: list[str]) -> tuple[int | str, str, str]:
    """minbw's command line, in this process: (exit code or "traceback", stdout, stderr)."""
    from minbw.cli.shell import main
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc: int | str = main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except BaseException:
        rc = "traceback"
        err.write(traceback.format_exc())
    return rc, out.getvalue(), err.getvalue()


class Ledger:
    def __init__(self, path: Path):
        self.f = open(path, "a", buffering=1)

    def record(self, kind: str, start: float, rc, err: str, *, refused: bool = False, written: bool = False,
               **extra) -> str:
        lines = [line for line in err.splitlines() if line.strip()]
        outcome = "succeeded" if rc == 0 else "refused" if refused else "written-unverified" if written else "failed"
        entry = {"kind": kind, "start": start, "end": time.monotonic(), "outcome": outcome, "rc": rc,
                 "cause": lines[0][:300] if lines and outcome != "succeeded" else "",
                 "stderr_lines": len(lines), "traceback": "Traceback" in err,
                 "stderr": "\n".join(lines[:5])[:1500] if len(lines) > 1 else "", **extra}
        self.f.write(json.dumps(entry) + "\n")
        return outcome


def claimer(args) -> None:
    rng = random.Random(args.seed)
    ledger = Ledger(args.ledger)
    held: list[str] = []
    claim_args = ["--project-id", "soak", "--user-id", "soak", "--resource", "VCPU=1", "--qos-port", args.qos_port]
    while not Path(args.stop).exists():
        if held and (len(held) >= args.hold or rng.random() < 0.5):
            consumer = held.pop(rng.randrange(len(held)))
            t = time.monotonic()
            rc, out, err = run_cli(["--os-cloud", args.cloud, "allocation", "delete", "--consumer", consumer, "--json"])
            changed = None   # whether the free found allocations to free (a claim reported made: it should)
            if rc == 0:
                try:
                    changed = json.loads(out).get("changed")
                except ValueError:
                    pass
            if ledger.record("free", t, rc, err, consumer=consumer, changed=changed) != "succeeded":
                held.append(consumer)
        else:
            consumer = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            t = time.monotonic()
            rc, out, err = run_cli(["--os-cloud", args.cloud, "allocation", "create", "--consumer", consumer,
                                    *claim_args, "--json"])
            claimed = False
            if rc in (0, 5):   # 5: written, not verified (its JSON says claimed, written_unverified)
                try:
                    claimed = json.loads(out).get("claimed") is True
                except ValueError:
                    pass
            outcome = ledger.record("claim", t, rc, err, refused=rc == 4, written=rc == 5, consumer=consumer,
                                    claimed=claimed)
            if outcome in ("succeeded", "written-unverified"):
                held.append(consumer)
        time.sleep(args.pause)


def syncer(args) -> None:
    rng = random.Random(args.seed)
    ledger = Ledger(args.ledger)
    fleet = Path(args.fleet)
    files = sorted(fleet.glob("*.ini"))
    while not Path(args.stop).exists():
        changed = rng.sample(files, min(len(files), rng.randint(1, 5)))
        for f in changed:
            f.write_text(fleet_ini(f.stem, rng.choice(FLEET_BANDWIDTHS)))
        t = time.monotonic()
        rc, out, err = run_cli(["--os-cloud", args.cloud, "provider", "sync", "--agent-config", *map(str, files),
                                "--create-root", *ROOT_INVENTORY, "--cache", args.cache, "-f", "value", "-c", "step",
                                *(["--ignore-nova-compute"] if args.ignore_nova_compute else [])])
        ledger.record("sync", t, rc, err, hosts_changed=len(changed))
        # a periodic job: the next run a moment later
        rest(args.pause, args.stop)


def rest(seconds: float, stop: str) -> None:
    """A periodic job's pause before its next run: ``seconds``, or less once the runner's ``stop`` file exists."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not Path(stop).exists():
        time.sleep(0.2)

def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["claimer", "syncer"])
    p.add_argument("--ledger", type=Path, required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--cloud", default=os.environ.get("OS_CLOUD", "prodplacement"))
    p.add_argument("--qos-port")
    p.add_argument("--hold", type=int, default=4)
    p.add_argument("--fleet")
    p.add_argument("--cache")
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--ignore-nova-compute", action="store_true", help="syncer: the fleet is no Nova compute's")
    p.add_argument("--go", help="a file to wait for after the warm-up (the soak's start); FILE.ready says it waits")
    args = p.parse_args(argv)
    if args.go:
        # minbw's command line imported and its commands loaded before the soak's clock starts: the first
        # operation's latency is not the process's start
        run_cli(["allocation", "create", "--help"] if args.role == "claimer" else ["provider", "sync", "--help"])
        Path(args.go + "." + args.role + "-" + str(args.seed) + ".ready").touch()
        while not Path(args.go).exists() and not Path(args.stop).exists():
            time.sleep(0.1)
    (claimer if args.role == "claimer" else syncer)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
