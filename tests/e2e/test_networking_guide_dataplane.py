"""The Networking Guide's minimum bandwidth scenario (neutron's doc/source/admin/config-qos-min-bw.rst, "Sample
usage") end to end on the plugin-off cloud, whose devstack0 runs the real neutron-openvswitch-agent and plugs VIFs
through os-vif (tests/support/minicloud/ovs_agent.sh), with the data plane read by ``minbw enforcement show`` after
every step, and then the issue's inventory above the link (a 10 Gbit/s NIC given 25 Gbit/s in the agent's file).

The guide's commands are run as it writes them, through the ``openstack`` client, with two changes: its
``--min-kbps 1000000`` is 1000 here (devstack0's br-test has 1500 kbps per direction, where the guide's NIC has
10 Gbit/s), and its flavor and image are the cloud's (``e2e-tiny``, ``e2e-image``: the fake hypervisor boots
nothing). Neutron's placement plugin is off in this cloud: minbw's provider sync writes the providers first (and
removes them at the end)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops.sync import sync_providers
from minbw.placement.client import Placement
from tests.e2e.test_enforcement_cloud import HOST, real_switch, show

EGRESS_PROVIDER = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0:Open vSwitch agent:br-test
KBPS = 1000  # the guide's 1000000, scaled to devstack0's 1500 kbps
OPENSTACK = str(Path(sys.executable).parent / "openstack")  # python-openstackclient, beside minbw


def openstack(cloud, *args: str) -> dict | str:
    """One ``openstack`` command as the guide runs it (as the cloud's admin), ``-f json`` added where it shows a
    resource; fails with its output when it fails."""
    r = subprocess.run([OPENSTACK, *args], env=cloud.env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"openstack {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout) if "json" in args else r.stdout


def mine(document: dict, ports: set[str]) -> list[tuple]:
    """The checks of these ports, in a stable order: (subject, direction, verdict, expected rate, reserved); an
    orphan queue of theirs as (subject, None, verdict, None, None)."""
    return sorted((c["subject"], (c["rule"] or {}).get("direction"), c["verdict"], (c["rule"] or {}).get("expected"),
                   (c["reserved"] or {}).get("amount")) for c in document["checks"] if c["subject"] in ports)


def plane(cloud, ports: set[str], want: list[tuple] | None = None, timeout: float = 60) -> dict:
    """``minbw enforcement show --host devstack0 --backend openvswitch`` on the real agent's switch: the document,
    read again every second until these ports' checks are ``want`` (what earlier tests left on the switch, such as
    the orphans of test_enforcement_cloud's agent restart, is not this test's: its exit code is not looked at)."""
    switch, deadline = real_switch(cloud), time.monotonic() + timeout
    while True:
        code, document, err = show(cloud, switch)
        if document and "checks" in document and (want is None or mine(document, ports) == want):
            return document
        assert time.monotonic() < deadline, f"not within {timeout} s: exit {code}, {document} {err}"
        time.sleep(1)


def test_the_guides_sample_usage_with_the_data_plane_read_at_every_step(demo_plugin_off, cloud_plugin_off):
    cloud, conn = cloud_plugin_off, demo_plugin_off.conn  # the fixture's flavor and image (e2e-tiny, e2e-image)
    api = Placement(conn)
    desired = desired_state([load_agent_ini(cloud.ovs_ini.read_text(), source=str(cloud.ovs_ini), host=HOST)])
    before = {p.uuid for p in api.list_providers()}
    sync_providers(api, desired)
    made: list[tuple[str, ...]] = []  # the delete commands of what the scenario makes, run in reverse at the end
    try:
        # as admin: the network, its subnet, the policy and its two rules. Nothing is bound: no check of them
        net = openstack(cloud, "network", "create", "net0", "--provider-network-type", "vlan",
                        "--provider-physical-network", "physnet0", "--provider-segment", "100", "-f", "json")
        made.append(("network", "delete", net["id"]))
        openstack(cloud, "subnet", "create", "subnet0", "--network", "net0", "--subnet-range", "10.0.4.0/24")
        policy = openstack(cloud, "network", "qos", "policy", "create", "policy0", "-f", "json")
        made.append(("network", "qos", "policy", "delete", policy["id"]))
        openstack(cloud, "network", "qos", "rule", "create", "policy0", "--type", "minimum-bandwidth",
                  "--min-kbps", str(KBPS), "--egress")
        openstack(cloud, "network", "qos", "rule", "create", "policy0", "--type", "minimum-bandwidth",
                  "--min-kbps", str(KBPS), "--ingress")

        # a normal port and a direct one (unused, as in the guide): neither is bound, the data plane has nothing
        normal = openstack(cloud, "port", "create", "port-normal-qos", "--network", "net0", "--qos-policy",
                           "policy0", "-f", "json")
        made.append(("port", "delete", normal["id"]))
        direct = openstack(cloud, "port", "create", "port-direct-qos", "--network", "net0", "--vnic-type",
                           "direct", "--qos-policy", "policy0", "-f", "json")
        made.append(("port", "delete", direct["id"]))
        ports = {normal["id"], direct["id"]}
        assert mine(plane(cloud, ports), ports) == []
        assert normal["resource_request"]["request_groups"][0]["resources"] == {
            "NET_BW_EGR_KILOBIT_PER_SEC": KBPS, "NET_BW_IGR_KILOBIT_PER_SEC": KBPS}

        # the server: Placement reserves both directions on br-test; the agent enforces the egress minimum with a
        # queue of KBPS x 1000 bit/s; the ingress one exists in Placement only (the OVS agent enforces egress only)
        server = openstack(cloud, "server", "create", "server0", "--flavor", "e2e-tiny", "--image", "e2e-image",
                           "--port", "port-normal-qos", "--wait", "-f", "json")
        made.append(("server", "delete", "--wait", server["id"]))
        assert api.get_allocations(server["id"])["allocations"][EGRESS_PROVIDER]["resources"] == {
            "NET_BW_EGR_KILOBIT_PER_SEC": KBPS, "NET_BW_IGR_KILOBIT_PER_SEC": KBPS}
        bound = openstack(cloud, "port", "show", "port-normal-qos", "-f", "json")
        assert set(bound["binding_profile"]["allocation"].values()) == {EGRESS_PROVIDER}
        document = plane(cloud, ports, [(normal["id"], "egress", "enforced", KBPS * 1000, KBPS),
                                        (normal["id"], "ingress", "placement-only", None, KBPS)])
        (egress,) = [c for c in document["checks"] if c["subject"] == normal["id"] and c["rule"]["direction"] == "egress"]
        assert [p["min_rate"] for p in egress["programmed"]] == [KBPS * 1000]
        assert [k["rate"] for k in egress["kernel"]] == [KBPS * 1000]

        # the server deleted: Placement frees both directions; os-vif unplugs the port and the agent removes its
        # queue (no restart in between: nothing is left, no orphan)
        openstack(cloud, "server", "delete", "--wait", server["id"])
        made.pop()
        assert api.get_allocations(server["id"])["allocations"] == {}
        plane(cloud, ports, [])

        # the guide's 10 Gbit/s NIC given 25 Gbit/s in the agent's file (resource_provider_bandwidths =
        # br-test:25000000:25000000), synced into Placement: Placement would admit guarantees the wire cannot
        # give, and the NIC's line says so (exit 3); the file put right again, the NIC is clean
        wrong = cloud.ovs_ini.read_text().replace("br-test:1500:1500", "br-test:25000000:25000000")
        assert wrong != cloud.ovs_ini.read_text()
        sync_providers(api, desired_state([load_agent_ini(wrong, source=str(cloud.ovs_ini), host=HOST)]))
        code, document, err = show(cloud, real_switch(cloud))
        (nic,) = [n for n in document["nics"] if n["bridge"] == "br-test"]
        assert (code, nic["speed_kbps"], nic["inventory_kbps"], nic["errors"]) == (3, 10_000_000, 25_000_000, [
            "Placement's inventory (25000000 kbps) is above the link's speed (10000000 kbps)",
            "Placement's ingress inventory (25000000 kbps) is above the link's speed (10000000 kbps)"]), (document, err)
        sync_providers(api, desired)
        code, document, err = show(cloud, real_switch(cloud))
        (nic,) = [n for n in document["nics"] if n["bridge"] == "br-test"]
        assert (nic["inventory_kbps"], nic["errors"]) == (1500, []), (document, err)
    finally:
        for command in reversed(made):
            subprocess.run([OPENSTACK, *command], env=cloud.env, capture_output=True, timeout=180)
        for provider in reversed(desired.providers):
            if provider.uuid not in before:
                api.delete_provider(provider.uuid)
