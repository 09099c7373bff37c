"""`make test`: every suite, in parallel lanes, then one summary; exit 1 when anything failed.

The suites are independent of each other (tests/README.md), so they run as separate processes side by side:

    e2e         pytest tests/e2e but E2E_2   the mini-cloud (fixed ports of 127.0.0.1)
    e2e-2       pytest E2E_2                 a second mini-cloud in a network namespace of its own
                                             (tests/support/netns.py) and state dir (.state/minicloud-2)
    placement   pytest tests/galera          the reduced Galera and production-style suites (free ports), in a
                tests/prodplacement          network namespace of its own; then pytest tests/unit
    local-1     pytest tests/functional and some of tests/ansible (ANSIBLE_LOCAL_1)
    local-2     pytest the rest of tests/ansible
    collection  tests/support/ansible/sanity.sh, then tests/support/ansible/lint.sh, then pytest tests/faults

The e2e lanes mostly wait for the mini-cloud (boots, heartbeats, agents going down), which leaves CPU to the
other lanes (run at nice 10, so the cloud gets the CPU first when it needs it); the two local lanes are split so
that their CPU time is about even (tests/README.md has the figures).
Each lane writes its output to .state/test-logs/LANE.log, printed whole when the lane ends, and its tests'
times to .state/test-logs/LANE.json (a second pytest step's to LANE.2.json); the end of the run prints the time
per suite and the 20 slowest tests of all lanes (tests/support/timing.py), and each lane's wall time. As root,
each lane runs in a cgroup of its own (cgroup v1 cpuacct, tests/support/cpu_profile.py's CpuGroup): the run
prints each lane's CPU seconds, the services it started included (the mini-clouds, the Placements), and the
pytest lanes each suite's (the lane's CPU while its tests ran), beside the machine's.

    python tests/support/run_suites.py                 every lane (what `make test` runs)
    python tests/support/run_suites.py e2e local-2     only these lanes
    MINBW_PYTEST_ARGS="-x" python tests/support/run_suites.py   extra pytest arguments for every pytest lane
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.cpu_profile import CpuGroup  # noqa: E402
from tests.support.timing import CPU_GROUP, failures, summarize  # noqa: E402

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
# tests/ansible is the largest CPU user (each playbook run starts ansible-playbook and, per task, a Python that
# imports openstacksdk): these of its files go to local-1, the rest (and any new one) to local-2
# (about even CPU in the two lanes: tests/README.md, "Where the time goes")
ANSIBLE_LOCAL_1 = ["tests/ansible/test_demo.py", "tests/ansible/test_allocation_modules.py",
                   "tests/ansible/test_capacity_module.py", "tests/ansible/test_placement_local_role.py",
                   "tests/ansible/test_openstack_cloud_options.py"]
# The e2e suite mostly waits on its cloud (Neutron's notifier batches, boots, agents going down): its slowest
# modules get a cloud of their own, side by side (about half of the suite's time; tests/README.md)
E2E_2 = ["tests/e2e/test_routed_scheduling.py", "tests/e2e/test_server_move.py",
         # the two lanes' measured wall and CPU (tests/README.md, "Where the time goes"): this one evens them
         "tests/e2e/test_heal_beside_nova_manage.py",
         # the three-host cloud (a warm start of its own, after this lane's two-host tests): here, not in the e2e
         # lane, the longest
         "tests/e2e/test_host_drain_three_hosts_cloud.py",
         # the drain's faults (about 520 s on the two-host cloud this lane has already): the e2e lane runs tempest's
         # variant instead
         "tests/e2e/test_host_drain_faults_cloud.py",
         # the default cloud's spare compute (about 120 s, mostly waiting on nova-compute): with the reduced Galera
         # and production-style suites in a lane of their own, this evens the two e2e lanes
         "tests/e2e/test_create_root_cloud.py",
         # Nova's migration leak reproduced (about 45 s on the two-host cloud this lane has): the shorter e2e lane
         # of the last run (tests/README.md)
         "tests/e2e/test_migration_leak_cloud.py"]
NETNS = ["unshare", "--net", "--", sys.executable, "tests/support/netns.py"]
# tests/galera: one claim storm and one fault; tests/prodplacement: the storm of 32 claimers, not those of 8 and 16
REDUCED = ["env", "MINBW_GALERA=reduced", "MINBW_PRODPLACEMENT=reduced"]
UNIT = ("unit", PYTEST + ["tests/unit"])
LANES: dict[str, list[tuple[str, list[str]]]] = {
    # the two e2e lanes set the run's wall (mostly waiting on their clouds): nothing else runs after them
    "e2e": [("e2e", PYTEST + ["tests/e2e"] + [f"--ignore={f}" for f in E2E_2])],
    "e2e-2": [("e2e", NETNS + PYTEST + E2E_2)],
    # the Galera Placement's reduced form (one claim storm, one fault: tests/galera, MINBW_GALERA=reduced) and the
    # production-style Placement's suite (its storm of 32 claimers: MINBW_PRODPLACEMENT=reduced), on free ports in
    # a network namespace of their own (as when they ran after e2e-2's e2e half), then the unit suite (CPU alone,
    # about 85 CPU s): about 450 s beside the e2e lanes' 1,000 (tests/README.md), at the e2e lanes' priority
    "placement": [("galera prodplacement", NETNS + REDUCED + PYTEST + ["tests/galera", "tests/prodplacement"]),
                  UNIT],
    "local-1": [("functional ansible", PYTEST + ["tests/functional"] + ANSIBLE_LOCAL_1)],
    "local-2": [("ansible", PYTEST + ["tests/ansible"] + [f"--ignore={f}" for f in ANSIBLE_LOCAL_1])],
    # tests/faults mostly waits (killed processes, retries' back-off, the exporter's collections: about 500 s and
    # 110 CPU s): after the collection's checks (about 300 s), not in a lane that has CPU work to do meanwhile
    "collection": [("sanity", ["bash", "tests/support/ansible/sanity.sh"]),
                   ("lint", ["bash", "tests/support/ansible/lint.sh"]), ("faults", PYTEST + ["tests/faults"])],
}
# The e2e lane is the longest and mostly waits on the mini-cloud's services, which need the CPU when they do work
# (its cold start, boots): the other lanes run at a lower priority (nice 10) and take the CPU it leaves.
NICE = {"local-1": 10, "local-2": 10, "collection": 10}
ENV = {"e2e-2": {"MINICLOUD_STATE": str(REPO / ".state" / "minicloud-2")}}


def separate_namespaces() -> bool:
    """Whether this process may make a network namespace (root, and a kernel that allows it)."""
    return subprocess.run(NETNS + ["true"], cwd=REPO, capture_output=True, check=False).returncode == 0


def lanes_here() -> dict[str, list[tuple[str, list[str]]]]:
    """LANES, or, where no second network namespace can be made, the whole e2e suite in one lane."""
    if separate_namespaces():
        return LANES
    print("no network namespace can be made here (unshare --net): the e2e suite runs in one lane", flush=True)
    lanes = {k: v for k, v in LANES.items() if k not in ("e2e-2", "placement")}
    lanes["e2e"] = [("e2e galera prodplacement", REDUCED + PYTEST + ["tests/e2e", "tests/galera",
                                                                      "tests/prodplacement"]), UNIT]
    return lanes


class Lane:
    def __init__(self, name: str, steps: list[tuple[str, list[str]]], logs: Path):
        self.name, self.steps = name, list(steps)
        self.log = logs / f"{name}.log"
        self.logs = logs
        self.times: list[Path] = []  # each pytest step's times: LANE.json, then LANE.2.json, ...
        self.proc: subprocess.Popen | None = None
        self.out = None
        self.started = self.step_started = time.monotonic()
        self.failed: list[str] = []
        self.step_times: dict[str, float] = {}
        for old in [logs / f"{name}.json", *logs.glob(f"{name}.*.json")]:
            old.unlink(missing_ok=True)
        self.cpu = CpuGroup.make(f"minbw-lane-{name}")  # None: not measured (not root, no cgroup v1 cpuacct)
        self.cpu_s: float | None = None

    def start_next(self) -> bool:
        if not self.steps:
            return False
        label, cmd = self.steps[0]
        if "pytest" in cmd:
            times = self.logs / (f"{self.name}.json" if not self.times else f"{self.name}.{len(self.times) + 1}.json")
            self.times.append(times)
            cmd = cmd + shlex.split(os.environ.get("MINBW_PYTEST_ARGS", "")) + ["--times-json", str(times)]
        self.out = open(self.log, "a")
        self.out.write(f"$ {shlex.join(cmd)}\n")
        self.out.flush()
        self.step_started = time.monotonic()
        niceness = NICE.get(self.name, 0)

        def child():
            if self.cpu is not None:
                self.cpu.join()
            if niceness:
                os.nice(niceness)
        env = dict(os.environ, **ENV.get(self.name, {}), **({CPU_GROUP: str(self.cpu.path)} if self.cpu else {}))
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL, preexec_fn=child)
        return True

    def poll(self) -> bool:
        """True when the lane has finished all its steps."""
        if self.proc is None:
            return not self.start_next()
        rc = self.proc.poll()
        if rc is None:
            return False
        label, _ = self.steps.pop(0)
        self.step_times[label] = time.monotonic() - self.step_started
        self.out.close()
        if rc != 0:
            self.failed.append(f"{label} (exit {rc})")
        self.proc = None
        done = not self.start_next()
        if done and self.cpu is not None:
            self.cpu_s = self.cpu.cpu_s()
        return done


def machine_cpu_s() -> float:
    """The machine's busy CPU seconds since boot (/proc/stat: user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in LANES]
    if unknown:
        print(f"unknown lane(s) {', '.join(unknown)}; lanes: {', '.join(LANES)}", file=sys.stderr)
        return 2
    here = lanes_here()
    # a lane asked for that cannot run here (e2e-2, placement without a namespace): its tests are in the one e2e lane
    names = list(dict.fromkeys(n if n in here else "e2e" for n in names)) or list(here)
    logs = REPO / ".state" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    t0, machine0 = time.monotonic(), machine_cpu_s()
    lanes = []
    for name in names:
        lane = Lane(name, here[name], logs)
        lane.log.write_text("")
        lanes.append(lane)
    print(f"lanes: {', '.join(f'{lane.name} ({lane.log.relative_to(REPO)})' for lane in lanes)}", flush=True)
    running = list(lanes)
    for lane in running:
        lane.start_next()
    try:
        while running:
            time.sleep(1)
            for lane in [lane for lane in running if lane.poll()]:
                running.remove(lane)
                verdict = f"FAILED: {', '.join(lane.failed)}" if lane.failed else "passed"
                print(f"\n===== lane {lane.name}: {verdict} in {time.monotonic() - lane.started:.0f} s "
                      f"({lane.log.relative_to(REPO)})", flush=True)
                sys.stdout.write(lane.log.read_text())
                sys.stdout.flush()
    except KeyboardInterrupt:
        for lane in running:
            if lane.proc:
                lane.proc.terminate()
        raise
    finally:
        for lane in lanes:
            if lane.cpu is not None:
                lane.cpu.close()
    runs = [json.loads(times.read_text()) for lane in lanes for times in lane.times if times.exists()]
    steps = {label: (t, None) for lane in lanes for label, t in lane.step_times.items() if label in ("sanity", "lint")}
    lanes_cpu = sum(lane.cpu_s for lane in lanes) if all(lane.cpu_s is not None for lane in lanes) else None
    if len(lanes) == len(here):
        steps["make-test"] = (time.monotonic() - t0, lanes_cpu)
    print("\n".join(summarize(runs, extra=steps)))
    print("\nlanes (wall s): " + ", ".join(f"{lane.name} {sum(lane.step_times.values()):.0f}" for lane in lanes)
          + f"; all: {time.monotonic() - t0:.0f}")
    if lanes_cpu is not None:
        print("lanes (CPU s, user+sys, the services each started included): "
              + ", ".join(f"{lane.name} {lane.cpu_s:.0f}" for lane in lanes)
              + f"; all lanes: {lanes_cpu:.0f}; the machine: {machine_cpu_s() - machine0:.0f}")
    else:
        print("lanes (CPU s): not measured (a cgroup v1 cpuacct group of their own needs root)")
    failed = [f"{lane.name}: {', '.join(lane.failed)}" for lane in lanes if lane.failed]
    if failed:
        # last, so that the end of a CI log names them: which tests failed and how, then which lanes
        named = failures(runs)  # none when a step failed with no test failing (a collection error, sanity)
        if named:
            print("\n".join(["failed tests (the lanes' logs have the rest):"] + named))
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
