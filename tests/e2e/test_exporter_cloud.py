"""The exporter on the mini-cloud, through Nova: a QoS server booted takes its port's bandwidth from the headroom the
exporter serves, and deleting it gives it back at the next collection — although Nova frees a deleted server with
``DELETE /allocations/{uuid}`` (``reclaim_instance_interval`` 0, the default), which moves no provider generation:
the test reads br-test's generation before and after the delete and finds it unchanged (docs/placement-generations.md)."""
from __future__ import annotations

from minbw.ops import servers
from minbw.placement.client import Placement

BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0's br-test (Neutron's uuid5)
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"


def _samples(exporter) -> dict:
    from prometheus_client.parser import text_string_to_metric_families
    exporter.collect()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(exporter.exposition()) for s in f.samples}


def _value(series: dict, name: str, **labels) -> float:
    (value,) = [v for (n, ls), v in series.items() if n == name and set(labels.items()) <= set(ls)]
    return value


def test_a_deleted_qos_server_gives_its_bandwidth_back_at_the_next_collection(demo, cloud):
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    api = Placement(demo.conn)
    size = PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0")
    exporter = Exporter(Cloud(lambda: demo.conn), ExporterRequest(port_sizes=(size,), cache=NO_CACHE))
    room = dict(name="minbw_headroom_ports", host="devstack0", physnet="physnet0", size="small")
    used = dict(name="minbw_bandwidth_used_bits_per_second", provider="devstack0:Open vSwitch agent:br-test",
                direction="egress")
    before = _samples(exporter)

    policy = demo.policy("e2e-exporter-bw", bw=[("egress", 1000), ("ingress", 1000)])
    vm = demo.boot("e2e-exporter-vm", [demo.port("e2e-exporter-p0", policy)])
    assert api.get_allocations(vm.id)["allocations"][BR_TEST]["resources"][EGR] == 1000
    booted = _samples(exporter)
    assert _value(booted, **room) == _value(before, **room) - 1
    assert _value(booted, **used) == _value(before, **used) + 1_000_000

    generation = api.get_provider(BR_TEST).generation
    # Nova's DELETE, then until nova-compute has deleted the allocations: it shows the server DELETED first
    # (nova/compute/manager.py, _delete_instance: instance.save() then _complete_deletion; a CI run met that window)
    servers.delete(demo.conn, vm.id, api, settle=60)
    demo.servers.remove(next(s for s in demo.servers if s.id == vm.id))
    assert api.get_allocations(vm.id)["allocations"] == {}
    assert api.get_provider(BR_TEST).generation == generation  # Nova's DELETE moved no generation
    freed = _samples(exporter)
    assert _value(freed, **room) == _value(before, **room)
    assert _value(freed, **used) == _value(before, **used)
