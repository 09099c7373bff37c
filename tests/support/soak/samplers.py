"""The soak's samplers (tests/support/soak/runner.py), each a thread body taking the soak: Placement's database
(the probe process, tests/support/soak/orphans.py), the claim hosts' bridges read through Placement's API, a
Prometheus scraping the exporter, the exporter's RSS, and the topology's supervisor. What each sample says is judged
by tests/support/soak/judges.py."""
from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

from tests.support.soak.judges import BANDWIDTH, EGR, IGR, judge_sample, judge_scrape

CLIENT_TIMEOUT = 5.0   # every minbw process's Placement timeout (MINBW_PLACEMENT_TIMEOUT): pauses outlast it


def probe_reader(soak) -> None:
    """The database probe's samples, one JSON line each, judged as they come."""
    assert soak.probe.stdout is not None
    for line in soak.probe.stdout:
        s = json.loads(line)
        s["t"] -= soak.t0
        soak.samples.append(s)
        judge_sample(soak, s)


def direct_reader(soak) -> None:
    """The claim hosts' bridges' usages read directly, every 0.5 s (what the scrapes are judged against), with
    the provider's generation: their allocations (``GET .../allocations``, one read at one generation) summed."""
    from minbw.model.providers import usages_of

    api = soak.api()
    while not soak.quit.is_set():
        t = time.monotonic()
        try:
            got = {u: api.provider_allocations(u, with_generation=True) for u in soak.claim_bridges}
            used = {u: usages_of(BANDWIDTH, b["allocations"]) for u, b in got.items()}
            soak.direct.append((t, time.monotonic(), {u: (used[u][EGR], used[u][IGR],
                                                          got[u]["resource_provider_generation"])
                                                      for u in got}))
        except Exception:
            pass
        soak.quit.wait(0.25)


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=CLIENT_TIMEOUT) as r:
        return r.read().decode()


def scraper(soak) -> None:
    """A Prometheus scraping every second; each scrape's used bandwidth of the claim hosts judged against the
    direct reads of the collection's window (when Placement answered them)."""
    ledger = open(soak.out / "ops-scraper.jsonl", "w", buffering=1)
    soak.ledgers.append(soak.out / "ops-scraper.jsonl")
    while not soak.quit.is_set():
        t = time.monotonic()
        try:
            text = soak.scrape()
            entry = {"kind": "scrape", "start": t, "end": time.monotonic(), "outcome": "succeeded", "cause": ""}
            judge_scrape(soak, text, t)
        except Exception as e:
            entry = {"kind": "scrape", "start": t, "end": time.monotonic(), "outcome": "failed",
                     "cause": f"{type(e).__name__}: {e}"}
        ledger.write(json.dumps(entry) + "\n")
        soak.quit.wait(1.0)


def supervisor(soak) -> None:
    """The injector's supervise() (systemd's Restart=) every second, where the topology's injector has one."""
    if not hasattr(soak.faults, "supervise"):
        return
    while not soak.quit.is_set():
        soak.faults.supervise()
        soak.quit.wait(1.0)


def rss_sampler(soak) -> None:
    while not soak.quit.is_set():
        soak.rss.append((soak.now(), group_rss_kb(soak.exporter.pid)))
        soak.quit.wait(1.0)


SAMPLERS = (probe_reader, direct_reader, scraper, rss_sampler, supervisor)


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
