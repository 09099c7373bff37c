"""Where minbw's warm provider sync spends its time at N hosts: a fresh production-style Placement, N roots (8 at a
time, not measured), minbw's cold sync (cache on), a warm run as ``minbw provider sync`` makes it by default (no
safety check due), one with the check due (``check_interval=0``), then the default warm run under cProfile (its top
functions by own time and by cumulative time on stdout). Not a section of bench/run.py.

Usage: nice -n 5 .venv/bin/python bench/sync_warm_profile.py 3000
"""
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python"))
warnings.filterwarnings("ignore")
from bench.common import Servers
from bench.sync_bench import run_minbw
from bench.workload import host_name, make_roots_at_once, write_agent_files
n = int(sys.argv[1])
state = Path(tempfile.mkdtemp(prefix="minbw-warmprof-"))
servers = Servers(state, "prod", 4)
try:
    srv = servers.start("p")
    hosts = [host_name(i) for i in range(1, n + 1)]
    make_roots_at_once(srv, hosts)
    files = write_agent_files(state / "agents", n)
    cache = state / "cache.json"
    r, *_ = run_minbw(srv, files, "cold", cache)
    print("cold", r.seconds, flush=True)
    r, *_ = run_minbw(srv, files, "warm", cache)
    print("warm (no profile)", r.seconds, "client cpu", r.client_cpu, "http", r.http_seconds, "parse", r.extra["parse_desired_s"], flush=True)
    r, *_ = run_minbw(srv, files, "warm (check due)", cache, check_interval=0)
    print("warm, check due (no profile)", r.seconds, "client cpu", r.client_cpu, "http", r.http_seconds, flush=True)
    pr = cProfile.Profile()
    pr.enable()
    r, *_ = run_minbw(srv, files, "warm", cache)
    pr.disable()
    print("warm (profiled)", r.seconds, flush=True)
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45)
    print(s.getvalue())
finally:
    servers.stop_all()
    shutil.rmtree(state, ignore_errors=True)
