"""Neutron's network nodes and its placement plugin, on the real Neutron (docs/operators.md, "Network nodes: no
bandwidth"): an Open vSwitch agent on a host where no nova-compute runs (no compute node provider in Placement)
reports ``resource_provider_hypervisors`` for every mapped bridge and ``rp_tunnelled`` whatever its bandwidth, so
Neutron 29's placement plugin fails to sync it - ``resources_synced`` false, one warning per heartbeat, nothing in
Placement - with or without ``resource_provider_bandwidths``; the computes' agents stay synced. minbw's drift
leaves the host without bandwidth out and names the other's bandwidth as on a host without a compute node. Two
emulated agents (the real agents' option parsing and heartbeat, tests/support/minicloud/agent_emulator.py) on the
default cloud, deleted at the end."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support import cli_forks

REPO = Path(__file__).resolve().parents[2]
EMULATOR = REPO / "tests" / "support" / "minicloud" / "agent_emulator.py"
FAILED = "Synchronization of resources of agent type Open vSwitch agent at host {host} to placement failed."
# a network node's files as kolla-ansible renders them (its bridge mapping, no bandwidth), and the same with the
# bandwidth a shared override put on every agent
NETWORK_NODES = {"network-1": "[ovs]\nbridge_mappings = physnet0:br-net\n",
                 "network-2": "[ovs]\nbridge_mappings = physnet0:br-net\n"
                              "resource_provider_bandwidths = br-net:1000000:1000000\n"}


def _log_lines(cloud, text: str) -> int:
    log_dir = Path(cloud.env["MINICLOUD_LOG_DIR"])
    return sum(p.read_text(errors="replace").count(text) for p in log_dir.glob("neutron-*.log"))


def test_an_ovs_agent_without_a_compute_node_fails_neutrons_sync_on_every_heartbeat(cloud, tmp_path):
    conn = cloud.connect()
    before = {host: _log_lines(cloud, FAILED.format(host=host)) for host in NETWORK_NODES}
    procs = []
    try:
        for host, ini in NETWORK_NODES.items():
            path = tmp_path / f"{host}.ini"
            path.write_text(ini)
            procs.append(subprocess.Popen(
                [f"{cloud.env['MINICLOUD_VENV']}/bin/python", str(EMULATOR), "--kind", "openvswitch", "--host", host,
                 "--config-file", cloud.env["MINICLOUD_NEUTRON_CONF"], "--config-file", str(path), "--interval", "2",
                 "--log-file", str(tmp_path / f"{host}.log")], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 90
        while True:  # three failed syncs each: the first report and two retries
            agents = {a.host: a for a in conn.network.agents(agent_type="Open vSwitch agent")}
            counts = {host: _log_lines(cloud, FAILED.format(host=host)) - before[host] for host in NETWORK_NODES}
            if all(host in agents for host in NETWORK_NODES) and min(counts.values()) >= 3:
                break
            assert all(p.poll() is None for p in procs), [(tmp_path / f"{h}.log").read_text() for h in NETWORK_NODES]
            assert time.monotonic() < deadline, (counts, sorted(agents))
            time.sleep(1)
        for host in NETWORK_NODES:
            agent = agents[host]
            assert agent.resources_synced is False, (host, agent.resources_synced)
            # what the agent reports: a hypervisor for its bridge and for rp_tunnelled, its own name (no compute
            # node of that name exists), with or without bandwidth
            assert agent.configuration["resource_provider_hypervisors"] == {"br-net": host, "rp_tunnelled": host}
        assert agents["network-1"].configuration["resource_provider_bandwidths"] == {}
        assert agents["network-2"].configuration["resource_provider_bandwidths"] == {
            "br-net": {"egress": 1000000, "ingress": 1000000}}
        # nothing reaches Placement; the compute's agent is synced as before
        names = [p.name for p in conn.placement.resource_providers()]
        assert not [n for n in names if n.startswith("network-")], names
        assert agents[cloud.env["MINICLOUD_HYPERVISOR"]].resources_synced is True
        # minbw's drift (and the exporter's, which runs it) from what the agents report: network-1 has nothing to
        # compare; network-2's bandwidth is named as on a host without a compute node
        out = cli_forks.run([sys.executable, "-m", "minbw.cli", "drift", "show", "-f", "json"], env=cloud.env,
                            capture_output=True, text=True, timeout=300)
        assert out.returncode == 3, out.stdout + out.stderr
        rows = {r["name"]: r for r in json.loads(out.stdout)["providers"]}
        assert not [n for n in rows if n.startswith("network-1")], rows
        assert sorted(n for n in rows if n.startswith("network-2")) == [
            "network-2:Open vSwitch agent", "network-2:Open vSwitch agent:br-net"]
        assert rows["network-2:Open vSwitch agent:br-net"]["differences"][-1].startswith(
            "no compute node provider 'network-2' in Placement")
        assert all(r["agree"] for n, r in rows.items() if not n.startswith("network-")), rows
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        for agent in conn.network.agents(agent_type="Open vSwitch agent"):
            if agent.host in NETWORK_NODES:
                conn.network.delete_agent(agent)


def test_the_failure_line_is_neutrons_own():
    """The line the guide quotes is the format of Neutron's placement plugin, filled in (not a paraphrase)."""
    plugin = next((REPO / ".venv-cloud" / "lib").glob("python3*/site-packages/neutron/services/placement_report/"
                                                      "plugin.py"))
    text = plugin.read_text()
    fmt = re.search(r"log_msg = \(\s*'([^']*)'\s*'([^']*)'\s*'([^']*)'\s*'([^']*)'\)", text)
    assert fmt, "Neutron's placement plugin has no log_msg of this shape any more"
    line = "".join(fmt.groups()) % {"type": "Open vSwitch agent", "host": "{host}", "result": "failed"}
    assert line == FAILED
    assert FAILED.format(host="network-1") in (REPO / "docs" / "operators.md").read_text()
