"""The exporter's scrapes are served from the last collection and never wait: not for a collection held up in
Placement (a usage read the proxy holds until the test lets it go), not for the slow reports (an allocation read
of the audit's held the same way). Scrapes run concurrently over HTTP while the collection and the slow reports
run in their own threads, against the real embedded Placement behind the fault proxy; and a claim deleted with
``DELETE /allocations/{consumer}`` (no generation moves) is served as freed by the first collection after it."""
from __future__ import annotations

import subprocess
import threading
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import MINBW, free_port
from tests.support import cli_forks
from tests.support.faults.proxy import Rule

OVS = """[DEFAULT]
host = {host}
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:10000:10000
"""
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
HELD = 60.0  # a held request is let go at the latest after this (a failing test does not hang)


def _series(body: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(body) for s in f.samples}


def _value(series: dict, name: str, **labels) -> float | None:
    return next((v for (n, ls), v in series.items() if n == name and set(labels.items()) <= set(ls)), None)


def _scrape(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return _series(r.read().decode())


def _wait(url: str, check, what: str, tries: int = 200) -> dict:
    import time
    got = None
    for _ in range(tries):
        got = _scrape(url)
        if check(got):
            return got
        time.sleep(0.1)
    raise AssertionError(f"{what}: not served after {tries} scrapes; last: "
                         f"{ {k: v for k, v in (got or {}).items() if 'headroom' in k[0] or 'used' in k[0]} }")


def test_scrapes_never_wait_and_a_deleted_claim_is_freed_at_the_next_collection(placement, placement_server,
                                                                                proxied, tmp_path):
    from minbw.neutron import naming
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import ExporterRequest, PortSize, serve
    hosts = ["ea0", "ea1"]
    for host in hosts:
        ini = tmp_path / f"{host}.ini"
        ini.write_text(OVS.format(host=host))
        sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                       "--root-inventory", "VCPU=8"], env=placement_server.env(),
                              capture_output=True, text=True)
        assert sync.returncode == 0, sync.stderr
    bridge = naming.device_rp_uuid(naming.AGENT_KINDS[naming.OVS], "ea0", "br-test")
    said: list[str] = []
    stop, ready = threading.Event(), threading.Event()
    port = free_port()
    request = ExporterRequest(port_sizes=(PortSize.parse("s=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"),),
                              port=port, interval=0.2, slow_interval=0.3, cache=Cache.at(str(tmp_path / "cache.json")))
    server = threading.Thread(target=serve, args=(Cloud(proxied.connect, say=said.append), request),
                              kwargs={"stop": stop, "ready": lambda _: ready.set()}, daemon=True)
    server.start()
    url = f"http://127.0.0.1:{port}/metrics"
    release_usage, release_audit = threading.Event(), threading.Event()
    try:
        assert ready.wait(60), said
        used = dict(name="minbw_bandwidth_used_bits_per_second", provider="ea0:Open vSwitch agent:br-test",
                    direction="egress")
        room = dict(name="minbw_headroom_ports", host="ea0", size="s")
        _wait(url, lambda s: _value(s, **room) == 10, "the empty bridge")

        # a claim of 3,000 kbps each way on ea0's bridge: served by a collection
        consumer = str(uuid.uuid4())
        root = placement.list_providers(name="ea0")[0].uuid
        placement.put_allocations(consumer, {"allocations": {root: {"resources": {"VCPU": 1}},
                                                             bridge: {"resources": {EGR: 3000, IGR: 3000}}},
                                             "project_id": "p", "user_id": "u", "consumer_generation": None})
        _wait(url, lambda s: _value(s, **used) == 3_000_000 and _value(s, **room) == 7, "the claim")

        # the next collection held in Placement (its read of the bridge's usage), then the claim deleted as Nova
        # frees a deleted server: scrapes, 40 at once, are all answered while the collection is still held, with
        # the last collection (the claim still there) and an age that grows
        entered = threading.Event()

        def hold_usage():
            entered.set()
            release_usage.wait(HELD)
        rule = Rule("GET", f"/resource_providers/{bridge}/usages", "call", nth=(1,), call=hold_usage)
        proxied.proxy.add(rule)
        assert entered.wait(30), "no collection read the bridge's usage"
        placement.request("delete", f"/allocations/{consumer}", "1.28")
        before = _scrape(url)
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda _: _scrape(url), range(40)))
        assert not release_usage.is_set() and rule.fired == 1  # every scrape came back while the read was held
        assert all(_value(a, **used) == 3_000_000 for a in answers)  # the last collection's, unchanged
        ages = [_value(a, name="minbw_collection_age_seconds") for a in [before, *answers]]
        assert None not in ages and max(ages) >= ages[0]
        release_usage.set()
        _wait(url, lambda s: _value(s, **used) == 0 and _value(s, **room) == 10, "the deleted claim freed")

        # the slow reports held in Placement (the audit's allocation read of the bridge): collections go on
        audit_entered = threading.Event()

        def hold_audit():
            audit_entered.set()
            release_audit.wait(HELD)
        proxied.proxy.add(Rule("GET", f"/resource_providers/{bridge}/allocations", "call", nth=(1,),
                               call=hold_audit))
        assert audit_entered.wait(30), "the audit did not read the bridge's allocations"
        placement.put_allocations(consumer, {"allocations": {bridge: {"resources": {EGR: 2000, IGR: 2000}}},
                                             "project_id": "p", "user_id": "u", "consumer_generation": None})
        _wait(url, lambda s: _value(s, **used) == 2_000_000 and _value(s, **room) == 8,
              "a claim while the audit is held")
        assert not release_audit.is_set()
        release_audit.set()
        assert not [line for line in said if "failed" in line], said
    finally:
        release_usage.set()
        release_audit.set()
        stop.set()
        server.join(30)
    assert not server.is_alive()


def test_scrapes_are_answered_while_the_collecting_process_is_stopped_and_the_server_ends_with_it(
        placement_server, tmp_path):
    """The scrapes are answered by a process of their own: with ``minbw exporter``'s own process stopped
    (SIGSTOP: no collection, no Python of its runs at all), scrapes are still answered, with the last collection
    and an age that grows; killed (SIGKILL, nothing cleaned up), its server process ends with it."""
    import os
    import re
    import signal
    import time
    ini = tmp_path / "es0.ini"
    ini.write_text(OVS.format(host="es0"))
    env = placement_server.env()
    sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                   "--root-inventory", "VCPU=8"], env=env, capture_output=True, text=True)
    assert sync.returncode == 0, sync.stderr
    port = free_port()
    exporter = subprocess.Popen(MINBW + ["exporter", "--listen-port", str(port), "--interval", "0.5",
                                         "--no-neutron", "--port-size", "s=min_bw:egress:1000,min_bw:ingress:1000"],
                                env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/metrics"
    server_pid = None
    try:
        line = exporter.stderr.readline()
        found = re.search(r"serving on (\S+) \(scrapes answered by process (\d+)\)", line)
        assert found and found[1] == url, line
        server_pid = int(found[2])
        assert server_pid != exporter.pid
        room = dict(name="minbw_headroom_ports", host="es0", size="s")
        _wait(url, lambda s: _value(s, **room) == 10, "the empty bridge")

        os.kill(exporter.pid, signal.SIGSTOP)
        try:
            first = _scrape(url)
            time.sleep(1.5)  # three collection intervals: none can run while the process is stopped
            second = _scrape(url)
        finally:
            os.kill(exporter.pid, signal.SIGCONT)
        assert _value(first, **room) == _value(second, **room) == 10
        ages = [_value(s, name="minbw_collection_age_seconds") for s in (first, second)]
        assert ages[1] - ages[0] >= 1.4, ages  # the same collection served, older

        exporter.kill()
        exporter.wait(10)
        for _ in range(100):
            if not os.path.exists(f"/proc/{server_pid}") or "Z" in _state(server_pid):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the server process {server_pid} outlived the exporter: {_state(server_pid)}")
    finally:
        if exporter.poll() is None:
            exporter.kill()
            exporter.wait(10)
        exporter.stderr.close()
        if server_pid and os.path.exists(f"/proc/{server_pid}"):
            try:
                os.kill(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
