"""Neutron's placement plugin off: minbw's provider sync alone lets the real Nova schedule and the real Neutron
bind - an OVS port on br-test and an SR-IOV direct port on a VF of nova's fake PCI PFs."""
from __future__ import annotations

from minbw.ops import claims
from minbw.neutron import naming
from minbw.ops import servers
from minbw.neutron.agentconf import load_agent_ini
from minbw.placement.client import Placement
from minbw.neutron.provider_tree import desired_state
from minbw.ops.sync import sync_providers

HYPERVISOR = "devstack0"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"


def test_our_sync_alone_lets_nova_schedule_and_neutron_bind(demo_plugin_off, cloud_plugin_off):
    conn = demo_plugin_off.conn
    api = Placement(conn)
    from tests.e2e.test_doctor_cloud import _doctor
    checks = _doctor(cloud_plugin_off.env)[1]  # minbw doctor: nobody syncs the agents, minbw's sync is to write
    assert "placement plugin is off" in checks["provider writer"]["detail"], checks["provider writer"]
    desired = desired_state([load_agent_ini(p.read_text(), source=str(p), host=HYPERVISOR)
                             for p in (cloud_plugin_off.ovs_ini, cloud_plugin_off.sriov_ini)])
    assert not [p for p in api.list_providers() if p.uuid in desired.by_uuid()], "nobody reported providers yet"

    plan, applied = sync_providers(api, desired)
    assert applied.writes == plan.writes() > 0
    assert sync_providers(api, desired, check=True)[0].writes() == 0

    # the OVS port: bandwidth on our br-test provider, the binding names it
    policy = demo_plugin_off.policy("e2e-off", bw=[("egress", 1000), ("ingress", 1000)])
    port = demo_plugin_off.port("e2e-off-normal", policy)
    server = demo_plugin_off.boot("e2e-off-normal", [port])
    assert server.status == "ACTIVE"
    group = port.resource_request["request_groups"][0]["id"]
    allocs = api.get_allocations(server.id)["allocations"]
    assert allocs[BR_TEST]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    bound = conn.network.get_port(port.id)
    assert bound.binding_profile["allocation"] == {group: BR_TEST}
    assert bound.binding_vif_type == "ovs"
    verdict = servers.verify(conn, server.id).to_dict()
    assert verdict["ok"], verdict["problems"]

    # the SR-IOV direct port: a VF of PF devstack0-ens1, the bandwidth on our provider of that PF
    pf = f"{HYPERVISOR}-ens1"
    pf_rp = naming.device_rp_uuid(naming.AGENT_KINDS["sriov"], HYPERVISOR, pf)
    assert pf_rp in desired.by_uuid(), "the SR-IOV ini maps physnet0 to nova's fake PF"
    direct = demo_plugin_off.port("e2e-off-direct", policy, vnic_type="direct")
    vm = demo_plugin_off.boot("e2e-off-direct", [direct])
    assert vm.status == "ACTIVE"
    bound = conn.network.get_port(direct.id)
    direct_group = direct.resource_request["request_groups"][0]["id"]
    assert bound.binding_profile["allocation"] == {direct_group: pf_rp}
    assert bound.binding_vif_type == "hw_veb" and bound.binding_profile["physical_network"] == "physnet0"
    assert api.get_allocations(vm.id)["allocations"][pf_rp]["resources"] == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    verdict = servers.verify(conn, vm.id).to_dict()
    assert verdict["ok"], verdict["problems"]
