"""Hosts reserved for QoS ports, with the real Nova of the mini-cloud (two fake computes, devstack0 and devstack1).

The role ``minbw.openstack.bandwidth_host_separation`` reserves devstack1 (the trait CUSTOM_MINBW_QOS_HOST on its
root provider) in strict mode and sets the flavors' extra specs: the plain flavor ``trait:CUSTOM_MINBW_QOS_HOST=
forbidden``, the QoS flavor ``=required``. Nova's scheduler then puts a server without QoS ports on devstack0 and a
server with a QoS port on devstack1, without being told a host.

nova-compute keeps the trait: ResourceTracker._get_traits (nova/compute/resource_tracker.py) starts from the
provider tree's traits, which hold "the set of virt-owned traits plus any externally defined traits set on the
provider that aren't owned by the virt driver", and only adds or removes the driver's capability traits
(COMPUTE_*) and COMPUTE_STATUS_DISABLED; the report client then replaces the traits with that set at the
provider's generation (a conflict re-reads it). The test checks the trait is still there after both boots.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from minbw.placement.client import Placement

HERE = Path(__file__).resolve().parent
TRAIT = "CUSTOM_MINBW_QOS_HOST"
SPEC = f"trait:{TRAIT}"
PLAIN, QOS = "e2e-sep-plain", "e2e-sep-qos"


@pytest.fixture
def flavors(demo_two_hosts, playbook):
    conn = demo_two_hosts.conn
    made = {name: conn.compute.find_flavor(name) or conn.compute.create_flavor(name=name, ram=256, vcpus=1, disk=1)
            for name in (PLAIN, QOS)}
    yield made
    # undo: devstack1 serves every server again, the flavors lose the spec (and are deleted)
    run = playbook(HERE / "playbooks" / "host_separation.yml", dict(reserve=[], flavors_qos=[QOS],
                                                                    flavors_plain=[PLAIN], state="absent"))
    assert not run.failed, run.output
    for flavor in made.values():
        conn.compute.delete_flavor(flavor, ignore_missing=True)


def boot(demo, name, flavor, ports):
    conn = demo.conn
    server = conn.compute.create_server(name=name, flavor_id=flavor.id, image_id=demo.image.id,
                                        networks=[{"port": p.id} for p in ports])
    demo.servers.append(server)
    return conn.compute.get_server(demo.wait_active(server).id)


def test_nova_keeps_plain_servers_off_the_reserved_host(demo_two_hosts, playbook, flavors):
    demo, conn = demo_two_hosts, demo_two_hosts.conn
    api = Placement(conn)
    roots = {h: api.list_providers(name=h)[0].uuid for h in ("devstack0", "devstack1")}
    nova_traits = {h: api.get_provider_traits(rp)[0] for h, rp in roots.items()}
    assert all(any(t.startswith("COMPUTE_") for t in traits) for traits in nova_traits.values())
    args = dict(reserve=["devstack1"], flavors_qos=[QOS], flavors_plain=[PLAIN], state="present")

    check = playbook(HERE / "playbooks" / "host_separation.yml", args, check=True)
    assert not check.failed, check.output
    assert [op["action"] for op in check.result["ops"]][-3:] == ["reserve", "set_extra_spec", "set_extra_spec"]
    assert TRAIT not in api.get_provider_traits(roots["devstack1"])[0]  # check mode wrote nothing

    run = playbook(HERE / "playbooks" / "host_separation.yml", args)
    assert not run.failed, run.output
    assert run.result["writes"] == check.result["writes"]
    assert api.get_provider_traits(roots["devstack1"])[0] == nova_traits["devstack1"] | {TRAIT}
    assert conn.compute.get_flavor_extra_specs_property(flavors[PLAIN], SPEC) == "forbidden"
    assert conn.compute.get_flavor_extra_specs_property(flavors[QOS], SPEC) == "required"
    again = playbook(HERE / "playbooks" / "host_separation.yml", args)
    assert not again.failed and again.result["writes"] == 0 and not again.changed, again.output

    # a server without QoS ports (a plain port): Nova sends required=!CUSTOM_MINBW_QOS_HOST, devstack1 is out
    plain_port = demo.port("e2e-sep-plain-port")
    plain = boot(demo, "e2e-sep-plain", flavors[PLAIN], [plain_port])
    assert plain.compute_host == "devstack0"
    # a server with a QoS port and the QoS flavor: required=CUSTOM_MINBW_QOS_HOST, only devstack1 has it
    policy = demo.policy("e2e-sep-qp", bw=[("egress", 1000), ("ingress", 1000)])
    qos_port = demo.port("e2e-sep-qos-port", policy)
    qos = boot(demo, "e2e-sep-qos", flavors[QOS], [qos_port])
    assert qos.compute_host == "devstack1"
    group = qos_port.resource_request["request_groups"][0]["id"]
    bound = conn.network.get_port(qos_port.id)
    assert bound.binding_host_id == "devstack1"
    assert api.get_provider(bound.binding_profile["allocation"][group]).name == "devstack1:Open vSwitch agent:br-test"
    # nova-compute reported its traits meanwhile and kept ours
    assert TRAIT in api.get_provider_traits(roots["devstack1"])[0]
