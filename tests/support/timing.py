"""Where a test run's time goes: printed at the end of every pytest run, and written as JSON for `make test`.

Loaded by tests/conftest.py. At the end of a run it prints, per suite (the folder under tests/: unit,
functional, ansible, faults, prodplacement, e2e), the number of tests, their summed time (setup + call +
teardown: a session fixture's start is in the setup of the first test that needs it) and the span from the
first test's start to the last one's end; then the 20 slowest tests. With ``MINBW_TEST_TIMES=path`` (or
``--times-json path``) the same figures go to ``path`` as JSON; tests/support/run_suites.py, which `make test` runs,
merges the files of its parallel lanes into one summary (``python tests/support/timing.py FILE...`` prints it).
Where the run is in a cgroup of its own (``MINBW_CPU_CGROUP``: a lane of run_suites.py), each test also gets the
group's CPU seconds while it ran (the services the lane started included), and each suite their sum.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SLOWEST = 20
CPU_GROUP = "MINBW_CPU_CGROUP"  # a cgroup v1 cpuacct directory: the CPU of this run and what it started
README = Path(__file__).resolve().parents[1] / "README.md"


@dataclass(frozen=True)
class Budget:
    wall: float                 # seconds of wall time: the suite's span (first test's start to last one's end)
    cpu: float | None = None    # CPU seconds of its lane while its tests ran, the services it started included


def budgets(readme: Path | None = None) -> dict[str, Budget]:
    """The time budget of each suite: the rows ``| suite | wall s | CPU s | ...`` of the table under tests/README.md's
    heading "Time budgets" (CPU left empty: none)."""
    readme = readme or README
    text = readme.read_text() if readme.exists() else ""
    section = text.split("## Time budgets", 1)[1].split("\n## ", 1)[0] if "## Time budgets" in text else ""
    return {m.group(1): Budget(float(m.group(2).replace(",", "")),
                               float(m.group(3).replace(",", "")) if m.group(3) else None)
            for m in re.finditer(r"^\| *`?([\w-]+)`? *\| *([\d,]+) *\|(?: *([\d,]+) *\|)?", section, re.M)}


def suite_of(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]


def group_cpu_s(group: str | None) -> float | None:
    if not group:
        return None
    try:
        return int((Path(group) / "cpuacct.usage").read_text()) / 1e9
    except OSError:
        return None


class Timings:
    def __init__(self, group: str | None = None):
        self.tests: dict[str, dict] = {}
        self.started = time.time()
        self.group = group
        self.cpu_seen = group_cpu_s(group)

    def add(self, report) -> None:
        t = self.tests.setdefault(report.nodeid, {"nodeid": report.nodeid, "suite": suite_of(report.nodeid),
                                                  "setup": 0.0, "call": 0.0, "teardown": 0.0,
                                                  "start": report.start, "stop": report.stop, "outcome": "passed"})
        t[report.when] = round(report.duration, 3)
        now = group_cpu_s(self.group)
        if now is not None and self.cpu_seen is not None:  # the group's CPU since the last phase ended
            t["cpu"] = round(t.get("cpu", 0.0) + now - self.cpu_seen, 3)
            self.cpu_seen = now
        t["start"], t["stop"] = min(t["start"], report.start), max(t["stop"], report.stop)
        if report.failed:
            t["outcome"] = "failed"
            t.setdefault("error", failure_line(report))
        elif report.skipped and t["outcome"] == "passed":
            t["outcome"] = "skipped"

    def as_dict(self) -> dict:
        return {"started": self.started, "ended": time.time(), "tests": list(self.tests.values())}


def failure_line(report) -> str:
    """A failed report's one line: the phase and pytest's crash message (its first line), e.g. for the end of a CI
    log, where only the last lines may be read."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    message = getattr(crash, "message", None) or str(getattr(report, "longrepr", "") or "").strip()
    first = message.splitlines()[0] if message else "(no message)"
    return f"{report.when}: {first[:300]}"


def failures(runs: list[dict]) -> list[str]:
    """One line per failed test of these runs: its node id and `failure_line`."""
    return [f"  {t['nodeid']} - {t.get('error', '')}" for r in runs for t in r["tests"] if t["outcome"] == "failed"]


def summarize(runs: list[dict], extra: dict[str, tuple[float, float | None]] | None = None) -> list[str]:
    """The summary lines for one or several runs (``extra``: other steps' wall and CPU seconds, e.g. sanity, or
    the whole ``make-test`` with every lane's CPU; CPU None: not measured)."""
    tests = [t for r in runs for t in r["tests"]]
    suites: dict[str, dict] = {}
    for t in tests:
        s = suites.setdefault(t["suite"], {"n": 0, "failed": 0, "sum": 0.0, "start": t["start"], "stop": t["stop"],
                                           "cpu": 0.0})
        s["n"] += 1
        s["cpu"] = None if s["cpu"] is None or "cpu" not in t else s["cpu"] + t["cpu"]
        s["failed"] += t["outcome"] == "failed"
        s["sum"] += t["setup"] + t["call"] + t["teardown"]
        s["start"], s["stop"] = min(s["start"], t["start"]), max(s["stop"], t["stop"])
    budget = budgets()

    def row(name, n, failed, total, span, cpu=None):
        b = budget.get(name)
        over = (" OVER BUDGET (wall)" if b and span > b.wall else "") + (
            " OVER BUDGET (CPU)" if b and b.cpu is not None and cpu is not None and cpu > b.cpu else "")
        limit = (f"{b.wall:.0f}" + (f" / {b.cpu:.0f}" if b.cpu is not None else "")) if b else ""
        used = f"{cpu:.0f}" if cpu is not None else ""
        return f"  {name:<15}{n:>6}{failed:>8}{total:>10.1f}{span:>10.1f}{used:>8}{limit:>14}{over}"
    lines = ["", "time per suite (sum: its tests' setup+call+teardown; span: first start to last end, wall; cpu: its "
             "lane's CPU while its tests ran, services included; budget: wall / CPU s, tests/README.md)",
             f"  {'suite':<15}{'tests':>6}{'failed':>8}{'sum s':>10}{'span s':>10}{'cpu s':>8}{'budget s':>14}"]
    for name, s in sorted(suites.items(), key=lambda kv: -kv[1]["sum"]):
        lines.append(row(name, s["n"], s["failed"], s["sum"], s["stop"] - s["start"], s["cpu"]))
    for name, (seconds, cpu) in (extra or {}).items():
        lines.append(row(name, "", "", seconds, seconds, cpu))
    if runs:
        wall = max(r["ended"] for r in runs) - min(r["started"] for r in runs)
        lines.append(row("pytest (wall)", len(tests), sum(s["failed"] for s in suites.values()), 0, wall)
                     .replace("       0.0", "          ", 1))
    lines += ["", f"{SLOWEST} slowest tests (wall: setup+call+teardown, s; cpu: its lane's CPU s while it ran, "
                  "services included, where measured; setup shown apart when over 1 s)"]
    for t in slowest(tests):
        total = t["setup"] + t["call"] + t["teardown"]
        cpu = f"{t['cpu']:8.1f}" if "cpu" in t else " " * 8
        setup = f"  (setup {t['setup']:.1f})" if t["setup"] > 1 else ""
        lines.append(f"  {total:8.1f}{cpu}  {t['nodeid']}{setup}")
    return lines


def slowest(tests: list[dict], n: int = SLOWEST) -> list[dict]:
    """The ``n`` tests of longest wall time (setup + call + teardown), the longest first."""
    return sorted(tests, key=lambda t: -(t["setup"] + t["call"] + t["teardown"]))[:n]


class TimingPlugin:
    def __init__(self, config):
        self.config = config
        self.timings = Timings(os.environ.get(CPU_GROUP))

    def pytest_runtest_logreport(self, report):
        self.timings.add(report)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.timings.tests:
            return
        for line in summarize([self.timings.as_dict()]):
            terminalreporter.write_line(line)
        path = self.config.getoption("--times-json")
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(self.timings.as_dict()))


def pytest_addoption(parser):
    parser.addoption("--times-json", default=os.environ.get("MINBW_TEST_TIMES"),
                     help="write the per-test times of this run to this JSON file (env MINBW_TEST_TIMES)")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # under xdist, the controller sees every report
        config.pluginmanager.register(TimingPlugin(config), "minbw-timings")


if __name__ == "__main__":  # python tests/support/timing.py RUN.json... : the merged summary
    print("\n".join(summarize([json.loads(Path(p).read_text()) for p in sys.argv[1:]])))
