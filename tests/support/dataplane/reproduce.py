"""The live facts of docs/enforcement.md, reproduced on Debian's Open vSwitch (as root; tests/functional/
test_dataplane_ovs.py runs these commands as the page shows them):

    python -m tests.support.dataplane.reproduce htb-on-tap
    python -m tests.support.dataplane.reproduce agent-restart
    python -m tests.support.dataplane.reproduce ovn-controller

htb-on-tap: the OVS agent's own QoS driver (tests/support/oracle/neutron_ovs_qos.py) programs a minimum
bandwidth rule on a switch of our own (tests/support/dataplane/switch.py: ovs-vswitchd on the userspace datapath,
the physical bridge's NIC a TAP device); then what OVSDB holds, and the TAP's tc qdiscs and HTB classes read
through pyroute2. agent-restart: three agent runs (each a process of its own, as an agent restart is) on one
switch, and the QoS rows, queues and HTB classes after each. ovn-controller: Debian's ovn-host version, and which
of OVN's two QoS paths its ovn-controller binary holds (the names only one of them uses).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from minbw.dataplane import netlink, ovs
from tests.support.dataplane.switch import NIC, REPO, Switch, unavailable

PORT_A = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
PORT_B = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
NAMES = {PORT_A: "A", PORT_B: "B"}


def package(name: str) -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True).stdout


def agent_run(switch: Switch, *steps: str) -> list[dict]:
    """One OVS agent run (a process: a start, then the steps), as tests/support/oracle/neutron_ovs_qos.py does."""
    r = subprocess.run([sys.executable, "-m", "tests.support.oracle.neutron_ovs_qos",
                        f"--physical-bridges={','.join(switch.physical_bridges)}", switch.remote, *steps],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    if r.returncode:
        raise RuntimeError(f"the OVS agent's driver failed: {r.stderr[-2000:]}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def kernel(switch: Switch) -> list[str]:
    seen = netlink.tc(NIC, switch.netns)
    return ([f"qdisc {q.kind} {q.handle} {q.parent}" for q in seen.qdiscs]
            + [f"class {c.classid} parent {c.parent} rate {c.rate} bit/s ceil {c.ceil} bit/s" for c in seen.classes])


def rows(switch: Switch, runs: dict[str, int]) -> list[str]:
    """The QoS rows (named by the agent run that made them) and every Queue row."""
    def port(queue: ovs.Queue) -> str:
        return NAMES.get(queue.external_ids.get("port"), "?")
    out = []
    db = ovs.read(switch.remote)
    for q in sorted(db.qos, key=lambda q: runs.get(q.external_ids.get("id", ""), len(runs) + 1)):
        run = runs.setdefault(q.external_ids.get("id", ""), len(runs) + 1)
        queues = ", ".join(f"{n}={port(v)}" for n, v in q.queues.items())
        out.append(f"QoS of run {run}: type {q.type}, external_ids:_type={q.external_ids.get('_type')}, "
                   f"queues {queues}, on {', '.join(q.ports) or 'no port'}")
    for v in sorted(db.queues, key=port):
        ids = ", ".join(f"{k}={val}" for k, val in v.external_ids.items())
        out.append(f"Queue of port {port(v)}: min-rate {v.min_rate} max-rate {v.max_rate}, external_ids {ids}")
    return out


def htb_on_tap(switch: Switch) -> None:
    switch.plug("vm-a", PORT_A, 5)
    agent_run(switch, f"update:{PORT_A}:5:4321")
    print(f"the OVS agent's driver: port A ({PORT_A}) at br-int ofport 5, minimum bandwidth egress 4321 kbps")
    print(*rows(switch, {}), sep="\n")
    print(f"tc of {NIC} (pyroute2):", *kernel(switch), sep="\n")


def label(step: str) -> str:
    op, port = step.split(":")[:2]
    return f"{op} {NAMES[port]}"


def agent_restart(switch: Switch) -> None:
    switch.plug("vm-a", PORT_A, 5)
    switch.plug("vm-b", PORT_B, 6)
    runs: dict[str, int] = {}
    for n, steps in enumerate(([f"update:{PORT_A}:5:1000", f"update:{PORT_B}:6:2000"],
                               # port B was deleted while the agent was down: the new run never hears of it
                               [f"update:{PORT_A}:5:1000"],
                               [f"update:{PORT_A}:5:1000", f"delete:{PORT_A}"]), 1):
        results = agent_run(switch, *steps)
        print(f"run {n}: {'; '.join(label(r['step']) for r in results)}")
        failed = [f"{label(r['step'])} failed: {r['error']}" for r in results if r["error"]]
        print(*(f"  {line}" for line in failed + rows(switch, runs) + kernel(switch)), sep="\n")


def ovn_controller() -> None:
    """Which QoS path Debian's ovn-controller takes: OVN 23.06 moved it from tc run by ovn-controller itself (and a
    ``linux-noop`` QoS row keeping ovs-vswitchd off the qdisc) to QoS/Queue rows in OVSDB (``ovn_qos``)."""
    version = package("ovn-host")
    major, minor = (int(x) for x in version.split(".")[:2])
    binary = Path(shutil.which("ovn-controller")).read_bytes()
    print(f"ovn-host {version}: {'23.06 or later' if (major, minor) >= (23, 6) else 'before 23.06'}")
    print(f"  ovn-controller holds \"linux-noop\" (23.03's setup_qos): {'yes' if b'linux-noop' in binary else 'no'}")
    print(f"  ovn-controller holds \"ovn_qos\" (23.06's configure_qos): {'yes' if b'ovn_qos' in binary else 'no'}")


def main(argv: list[str]) -> int:
    what = {"htb-on-tap": htb_on_tap, "agent-restart": agent_restart, "ovn-controller": None}
    if len(argv) != 1 or argv[0] not in what:
        print(f"usage: python -m tests.support.dataplane.reproduce {{{','.join(what)}}}", file=sys.stderr)
        return 2
    why = unavailable(vswitchd=what[argv[0]] is not None)
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 3
    if what[argv[0]] is None:
        ovn_controller()
        return 0
    print(f"openvswitch-switch {package('openvswitch-switch')}: ovs-vswitchd --disable-system, bridges of "
          f"datapath_type netdev, the NIC {NIC} a TAP device (Interface type \"\")")
    with tempfile.TemporaryDirectory() as d, Switch(Path(d)) as switch:
        what[argv[0]](switch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
