"""Where one ``minbw usage show`` at 10 providers spends its time (issue 46 item 4), beside the peer and the floor:
the embedded Placement of ``bench/cli_start_bench.py`` (10 providers with inventory), fresh processes, RUNS runs of
each, interleaved, after one that is not counted. Not a section of bench/run.py.

- the CPU seconds (user + system) of each command's process and of the embedded Placement's process while it ran
  (``/proc/PID/stat``; the server answers one request at a time, so its CPU is the time the requests wait for it):
  Python's start (``python -S -c pass``, ``python -c pass``), ``minbw --help``, ``minbw usage show`` (``-f value``:
  without cliff's table), the peer ``openstack resource provider list``, and the floor of any such command in Python
  (:data:`FLOOR`: openstacksdk's config loader reading clouds.yaml and keystoneauth sending the same 21 requests one
  after the other, with what minbw's shell defers deferred the same way);
- the CPU of each phase inside ``usage show`` (:data:`PHASES`: the shell's import, the global options, the cloud's
  configuration, the use case's import and run, the rendering);
- the modules ``usage show`` imports, by top package (``python -X importtime``, 5 runs: each module's least self
  time, summed).

Usage: .venv/bin/python bench/cli_start_profile.py [RUNS]   (PYTHONPATH: the code measured)
"""

from __future__ import annotations

import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cli_start_bench import BIN, populate  # noqa: E402
from bench.common import Servers  # noqa: E402

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 8

# Any Python command that reads clouds.yaml and sends Placement's 21 requests of `usage show` with keystoneauth:
# openstacksdk's package loaded without its __init__ (every service's proxy) and netaddr, statsd, prometheus_client,
# osprofiler deferred, as minbw's shell does; no command line framework, no table, no threads.
FLOOR = r"""
import importlib.machinery, importlib.util, sys, types
spec = importlib.util.find_spec("openstack")
pkg = importlib.util.module_from_spec(spec)
sys.modules["openstack"] = pkg
class Lazy:
    def find_spec(self, name, path, target=None):
        if name not in ("netaddr", "statsd", "prometheus_client", "osprofiler.profiler"):
            return None
        found = importlib.machinery.PathFinder.find_spec(name, path)
        if found is not None:
            found.loader = importlib.util.LazyLoader(found.loader)
        return found
sys.meta_path.insert(0, Lazy())
web = types.ModuleType("osprofiler.web")
web.get_trace_id_headers = lambda: {}
sys.modules["osprofiler.web"] = web
from openstack.config import loader
from keystoneauth1 import adapter
region = loader.OpenStackConfig().get_one()
api = adapter.Adapter(session=region.get_session(), service_type="placement",
                      endpoint_override=region.get_endpoint("placement"))
providers = api.get("/resource_providers").json()["resource_providers"]
for p in providers:
    api.get(f"/resource_providers/{p['uuid']}/inventories").json()
    api.get(f"/resource_providers/{p['uuid']}/allocations").json()
print(len(providers), len(sys.modules))
"""

# The phases of one `minbw usage show` in its process (CPU seconds of the process: the reader threads included).
PHASES = r"""
import json, os, sys, time
start = time.process_time()
marks = {}
def timed(label, fn):
    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            marks[label] = marks.get(label, 0) + time.process_time() - t
    return wrapper
t = time.process_time()
from minbw.cli import shell
marks["import the shell (osc-lib's shell, keystoneauth, openstacksdk's config, cliff)"] = time.process_time() - t
import cliff.lister
from osc_lib.api import auth
from minbw.cli import usage as cli_usage
shell.auth.build_auth_plugins_option_parser = timed("global options (every keystoneauth plugin's)",
                                                    auth.build_auth_plugins_option_parser)
shell.MinbwShell.initialize_app = timed("initialize_app (clouds.yaml, the cloud's configuration)",
                                        shell.MinbwShell.initialize_app)
cliff.lister.Lister.produce_output = timed("render (cliff's table)", cliff.lister.Lister.produce_output)
view = cli_usage.ShowUsage.view
def timed_view(self, parsed_args):
    t = time.process_time()
    import minbw.usecases.usage
    marks["import the use case (readers, Placement's client)"] = time.process_time() - t
    return timed("the use case (Placement's connection, 21 requests, reader threads)", view)(self, parsed_args)
cli_usage.ShowUsage.view = timed_view
t = time.process_time()
code = shell.MinbwShell(stdout=open(os.devnull, "w")).run(["usage", "show"])
marks["the shell's run, all of it"] = time.process_time() - t
marks["the process after Python's start"] = time.process_time() - start
print(json.dumps(marks))
"""


def server_cpu(pid: int) -> float:
    """The CPU seconds (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def once(argv: list[str], env: dict, pid: int) -> tuple[float, float, float, str]:
    """Wall s, the command's CPU s, the server's CPU s while it ran, its stdout."""
    before, served = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(pid)
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr[-400:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, server_cpu(pid) - served, proc.stdout


def by_package(importtimes: list[str]) -> list[tuple[str, float, int]]:
    """(top package, self seconds summed, modules) from runs of ``-X importtime`` (each module's least self time of
    the runs), largest first."""
    own: dict[str, float] = {}
    for importtime in importtimes:
        for line in importtime.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                us, _cumulative, name = line.split(":", 1)[1].split("|")
                own[name.strip()] = min(own.get(name.strip(), float("inf")), int(us) / 1e6)
    seconds: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for name, s in own.items():
        seconds[name.split(".")[0]] += s
        count[name.split(".")[0]] += 1
    return [(top, s, count[top]) for top, s in seconds.most_common()]


def main() -> None:
    python = sys.executable
    commands = {
        "python -S -c pass": [python, "-S", "-c", "pass"],
        "python -c pass": [python, "-c", "pass"],
        "floor: config + keystoneauth + the 21 requests": [python, "-c", FLOOR],
        "minbw --help": [str(BIN / "minbw"), "--help"],
        "minbw usage show -f value": [str(BIN / "minbw"), "usage", "show", "-f", "value"],
        "minbw usage show": [str(BIN / "minbw"), "usage", "show"],
        "openstack resource provider list (peer)": [str(BIN / "openstack"), "resource", "provider", "list"],
    }
    with tempfile.TemporaryDirectory(prefix="minbw-cli-profile-") as tmp:
        servers = Servers(Path(tmp))
        try:
            server = servers.start("profile")
            populate(server)
            env = {k: v for k, v in server.env().items() if k != "PYTHONDONTWRITEBYTECODE"}
            pid = server.proc.pid
            load = os.getloadavg()[0]
            times: dict[str, list] = {label: [] for label in commands}
            phases: dict[str, list] = collections.defaultdict(list)
            for i in range(RUNS + 1):
                for label, argv in commands.items():
                    wall, cpu, served, _out = once(argv, env, pid)
                    if i:
                        times[label].append((wall, cpu, served))
                _w, _c, _s, out = once([python, "-c", PHASES], env, pid)
                if i:
                    for phase, seconds in json.loads(out.splitlines()[-1]).items():
                        phases[phase].append(seconds)
            importtimes = [subprocess.run([python, "-X", "importtime", "-m", "minbw.cli", "usage", "show"], env=env,
                                          capture_output=True, text=True, timeout=120).stderr for _ in range(5)]
        finally:
            servers.stop_all()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; {RUNS} runs of each, interleaved (medians)\n")
    print(f"{'command':48s} {'wall s':>7s} {'CPU s':>7s} {'server CPU s':>13s}")
    for label, ts in times.items():
        print(f"{label:48s} {statistics.median(t[0] for t in ts):7.3f} {statistics.median(t[1] for t in ts):7.3f} "
              f"{statistics.median(t[2] for t in ts):13.3f}")
    print("\nminbw usage show, its phases (CPU s of its process, medians)")
    for phase, seconds in phases.items():
        print(f"  {statistics.median(seconds):6.3f}  {phase}")
    packages = by_package(importtimes)
    print(f"\nminbw usage show imports {sum(n for _t, _s, n in packages)} modules; by top package (self s, the least "
          "of 5 runs of each module, summed):")
    for top, seconds, n in packages[:20]:
        print(f"  {seconds:6.3f}  {n:4d}  {top}")


if __name__ == "__main__":
    main()
