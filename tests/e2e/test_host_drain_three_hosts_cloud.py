"""``minbw host drain`` with a choice of destinations (issue 45 item 4): three computes on the mini-cloud's real Nova
(``cloud_three_hosts``: devstack0, devstack1, devstack2; FakeLiveMigrateDriverWithPciResources, one VF on
<host>-ens1 each), servers with several guaranteed ports (minimum bandwidth on Open vSwitch and SR-IOV, minimum
packet rate) and an anti-affinity group.

br-test has 1500 kbps each way on devstack0, 750 on devstack1 and on devstack2; every OVS agent 1000 kpps. On
devstack0, six servers fill br-test: a 375 kbps (three ports: 225 kbps + 50 kpps, 150 kbps, 2000 kbps on SR-IOV),
b 300 (two ports, 50 kpps), c 225 (+20 kpps), d 225 (two ports), e 225 and f 150 (+10 kpps). c shares an
anti-affinity group with x on devstack1: never devstack1. The only complete plans fill both destinations exactly,
{375, 225, 150} and {300, 225, 225}; greedy by size, whichever destination it tries first, puts a and b together and
leaves one server without a host (f, or c for the anti-affinity). The drain executes the joint plan with real Nova
(live migrations, the target given, never forced, three at a time) and every move is checked here against Nova,
Placement and Neutron directly: the allocations on the planned providers (packet rate and SR-IOV too), each port's
``binding:profile.allocation`` on them, no migration consumer left holding anything, devstack0's usage freed, no
destination overcommitted, the group's members on different hosts.
"""
from __future__ import annotations

from minbw.ops import server_move
from minbw.placement.client import Placement

from tests.e2e.test_host_drain_cloud import GUIDE, drain, minbw, plan
from tests.e2e.test_operators_checks import checks, run_checks

EGRESS, INGRESS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
KPPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
HOSTS = ("devstack0", "devstack1", "devstack2")


def providers(api: Placement) -> dict[str, str]:
    """Provider name → uuid: the roots, each host's OVS agent (packet rate), its br-test and its SR-IOV PF."""
    out = {}
    for host in HOSTS:
        for name in (host, f"{host}:Open vSwitch agent", f"{host}:Open vSwitch agent:br-test",
                     f"{host}:NIC Switch agent:{host}-ens1"):
            [rp] = api.list_providers(name=name)
            out[name] = rp.uuid
    return out


def held(api: Placement, consumer: str) -> dict[str, dict[str, int]]:
    """Placement's allocations of ``consumer``: provider uuid → class → amount."""
    return {rp: dict(a["resources"]) for rp, a in api.get_allocations(consumer)["allocations"].items()}


def port_allocation(conn, port_id: str) -> dict[str, str]:
    """Neutron's ``binding:profile.allocation`` of a port as request group → provider (a port of one group may
    hold the provider alone: keyed on its only group then)."""
    port = conn.network.get_port(port_id)
    allocation = (port.binding_profile or {}).get("allocation")
    if isinstance(allocation, str):
        [group] = [g["id"] for g in port.resource_request["request_groups"]]
        return {group: allocation}
    return dict(allocation or {})


def test_drain_chooses_between_two_hosts_where_greedy_fails(demo_three_hosts, cloud_three_hosts):
    demo, conn = demo_three_hosts, demo_three_hosts.conn
    api = Placement(conn)
    env = dict(cloud_three_hosts.env)
    rp = providers(api)
    group = conn.compute.create_server_group(name="e2e-drain3-sg", policy="anti-affinity")
    try:
        _run(demo, conn, api, env, rp, group)
    finally:
        demo.cleanup()
        demo.servers.clear()
        conn.compute.delete_server_group(group, ignore_missing=True)
        if server_move.compute_service(conn, "devstack0").status != "enabled":
            minbw(env, "host", "drain", "devstack0", "--undo")


def _create(demo, conn, name: str, ports: list, host: str, group=None):
    """Ask Nova for a server on ``host`` (not waited for: the seven boots run side by side)."""
    hints = {"scheduler_hints": {"group": group.id}} if group is not None else {}
    server = conn.compute.create_server(name=name, flavor_id=demo.flavor.id, image_id=demo.image.id,
                                        networks=[{"port": p.id} for p in ports], host=host, **hints)
    demo.servers.append(server)
    return server


BR_TEST = 750  # each destination's br-test, each way
# a's SR-IOV port: more than any br-test has. Neutron's openvswitch mechanism driver lists vnic type direct too (OVS
# hardware offload), so the bridge's provider has CUSTOM_VNIC_TYPE_DIRECT and Placement may put a direct port's
# bandwidth there: the binding then fails (the openvswitch driver cannot bind it) and the boot is rescheduled until
# it fails. Too large for any bridge, it can only go to the NIC Switch agent's PF.
SRIOV = 2000
# name → its ports: (kbps each way, kpps in any direction or 0, vnic type)
SERVERS = {
    "e2e-drain3-a": ((225, 50, "normal"), (150, 0, "normal"), (SRIOV, 0, "direct")),
    "e2e-drain3-b": ((150, 50, "normal"), (150, 0, "normal")),
    "e2e-drain3-c": ((225, 20, "normal"),),
    "e2e-drain3-d": ((150, 0, "normal"), (75, 0, "normal")),
    "e2e-drain3-e": ((225, 0, "normal"),),
    "e2e-drain3-f": ((150, 10, "normal"),),
}


def on_br_test(name: str) -> int:
    """What a server of SERVERS takes of br-test, each way."""
    return sum(kbps for kbps, _kpps, vnic in SERVERS[name] if vnic == "normal")


def _run(demo, conn, api, env, rp, group):
    # x: no guarantee, devstack1, in c's anti-affinity group
    x = _create(demo, conn, "e2e-drain3-x", [demo.port("e2e-drain3-x-p0")], "devstack1", group)
    servers, ports = {}, {}
    for name, spec in SERVERS.items():
        ports[name] = [
            demo.port(f"{name}-p{i}", demo.policy(f"{name}-q{i}", bw=[("egress", kbps), ("ingress", kbps)],
                                                  pps=[("any", kpps)] if kpps else ()), vnic_type=vnic)
            for i, (kbps, kpps, vnic) in enumerate(spec)]
        servers[name] = _create(demo, conn, name, ports[name], "devstack0", group if name == "e2e-drain3-c" else None)
    for server in (x, *servers.values()):
        demo.wait_active(server)
    # where they are, as Placement holds them: a's SR-IOV port on devstack0's PF, packet rate on the OVS agent
    a = held(api, servers["e2e-drain3-a"].id)
    assert a[rp["devstack0:NIC Switch agent:devstack0-ens1"]] == {EGRESS: SRIOV, INGRESS: SRIOV}
    assert a[rp["devstack0:Open vSwitch agent:br-test"]] == {EGRESS: 375, INGRESS: 375}
    assert a[rp["devstack0:Open vSwitch agent"]] == {KPPS: 50}
    assert api.provider_usages(rp["devstack0:Open vSwitch agent:br-test"]) == {EGRESS: 1500, INGRESS: 1500}

    # the plan: greedy places five (a and b together, then one server finds no room), the joint plan all six
    code, got = plan(env)
    assert code == 0, got
    assert (got["complete"], got["method"], got["greedy_moves"], got["stuck"]) == (True, "exact", 5, []), got
    moves = {m["server_name"]: m for m in got["moves"]}
    assert sorted(moves) == sorted(SERVERS) and {m["kind"] for m in moves.values()} == {"live"}
    assert moves["e2e-drain3-c"]["host"] == "devstack2"  # the anti-affinity
    assert moves["e2e-drain3-a"]["host"] != moves["e2e-drain3-b"]["host"]
    for host in ("devstack1", "devstack2"):
        assert sum(on_br_test(n) for n, m in moves.items() if m["host"] == host) == BR_TEST
    for name, m in moves.items():
        host = m["host"]
        kpps = sum(k for _kbps, k, _vnic in SERVERS[name])
        want = {rp[host]: {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1},
                rp[f"{host}:Open vSwitch agent:br-test"]: {EGRESS: on_br_test(name), INGRESS: on_br_test(name)}}
        if kpps:
            want[rp[f"{host}:Open vSwitch agent"]] = {KPPS: kpps}
        if name == "e2e-drain3-a":
            want[rp[f"{host}:NIC Switch agent:{host}-ens1"]] = {EGRESS: SRIOV, INGRESS: SRIOV}
        assert m["allocations"] == want, (name, m["allocations"])

    # the guide's commands ("A choice of destinations"), as written; a difference is reported at the end, after the
    # drain's own checks
    try:
        run_checks(checks(GUIDE.read_text(), "choice of destinations", kind="walk"), env)
        guide = None
    except AssertionError as e:
        guide = e

    # the drain, for real, three moves at a time
    code, done, err = drain(env, "devstack0", "--reason", "e2e three hosts", "--parallel", "3")
    assert code == 0, (done, err)
    assert (done["state"], done["changed"]) == ("drained", True), done
    service = server_move.compute_service(conn, "devstack0")
    assert (service.status, service.disabled_reason) == ("disabled", "e2e three hosts")

    # each move checked against Nova, Placement and Neutron directly
    for name, server in servers.items():
        planned = moves[name]
        assert conn.compute.get_server(server.id).compute_host == planned["host"], name
        assert held(api, server.id) == planned["allocations"], name
        tree = {u for n, u in rp.items() if n.split(":")[0] == planned["host"]}
        for port in ports[name]:
            allocation = port_allocation(conn, port.id)
            groups = {g["id"] for g in conn.network.get_port(port.id).resource_request["request_groups"]}
            assert set(allocation) == groups, (port.name, allocation)
            assert set(allocation.values()) <= tree, (port.name, allocation)
            assert {g: [u] for g, u in allocation.items()} == {g: planned["mappings"][g] for g in groups}, port.name
        # Nova's record of the move (its uuid: the consumer of the source's allocation while it ran) holds nothing
        migrations = [m.to_dict(computed=False) for m in conn.compute.migrations(server_id=server.id)]
        assert [(m["migration_type"], m["status"], m["dest_compute"]) for m in migrations] == [
            ("live-migration", "completed", planned["host"])], name
        assert held(api, migrations[0].get("uuid") or migrations[0]["id"]) == {}, name
    for name in ("devstack0:Open vSwitch agent:br-test", "devstack0:Open vSwitch agent",
                 "devstack0:NIC Switch agent:devstack0-ens1"):
        assert not any(api.provider_usages(rp[name]).values()), name
    for host in ("devstack1", "devstack2"):  # full, not over
        assert api.provider_usages(rp[f"{host}:Open vSwitch agent:br-test"]) == {EGRESS: BR_TEST, INGRESS: BR_TEST}
    # the anti-affinity group's members on different hosts
    members = conn.compute.get_server_group(group.id).member_ids
    assert sorted(conn.compute.get_server(m).compute_host for m in members) == ["devstack1", "devstack2"]
    assert conn.compute.get_server(x.id).compute_host == "devstack1"

    assert guide is None, guide
    # --undo: devstack0 back in service
    code, undo, _err = drain(env, "devstack0", "--undo")
    assert code == 0 and (undo["state"], undo["changed"]) == ("enabled", True), undo
