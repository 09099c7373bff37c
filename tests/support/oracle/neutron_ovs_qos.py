"""Neutron's OVS agent QoS driver, run for real against an Open vSwitch database: what the agent writes for a
minimum bandwidth rule, and what an agent restart leaves.

neutron 29.0.0's ``QosOVSAgentDriver`` (``neutron/plugins/ml2/drivers/openvswitch/agent/extension_drivers/
qos_driver.py``) with ``ovs_lib.OVSBridge`` objects for br-int and the physical bridge br-phy, on the database
given. One process is one agent run: ``initialize()`` first, as the agent does when it starts (its
``clear_bandwidth_qos``, with this run's own QoS id), then the steps, each through the driver's own
``update_minimum_bandwidth`` / ``delete_minimum_bandwidth``. Stand-ins, for what has no bearing on OVSDB: the
OpenFlow calls (the flows that mark a VM's packets and pick its queue are not programmed: ovs-ofctl would run
through Neutron's privileged helper) and the meter features (none).

    python -m tests.support.oracle.neutron_ovs_qos [--physical-bridges=BRIDGE,...] DB STEP...
    STEP: update:PORT_ID:OFPORT:MIN_KBPS[:DIRECTION]  or  delete:PORT_ID

The physical bridges (the agent's bridge_mappings' bridges) default to br-phy.

Prints one JSON line per step: the step and the error the driver raised (null when none).
"""
from __future__ import annotations

import json
import logging
import sys
import uuid
from types import SimpleNamespace

from oslo_config import cfg

from neutron.agent.common import ovs_lib
from neutron.plugins.ml2.drivers.openvswitch.agent.extension_drivers import qos_driver

PHYSNET = "physnet0"


class Bridge(ovs_lib.OVSBridge):
    """ovs_lib's bridge, its OVSDB calls Neutron's own; OpenFlow not programmed."""

    def add_flow(self, **kwargs):
        pass

    def delete_flows(self, **kwargs):
        pass

    def list_meter_features(self):
        return []


def agent(db: str, physical_bridges: tuple[str, ...] = ("br-phy",)) -> qos_driver.QosOVSAgentDriver:
    """The driver as the agent's QoS extension makes it, initialized (an agent start)."""
    cfg.CONF.set_override("ovsdb_connection", db, "OVS")
    br_int = Bridge("br-int", datapath_type="netdev")
    phys = [Bridge(b, datapath_type="netdev") for b in physical_bridges]
    driver = qos_driver.QosOVSAgentDriver()
    driver.consume_api(SimpleNamespace(request_int_br=lambda: br_int, request_phy_brs=lambda: phys))
    driver.initialize()
    return driver


def step(driver: qos_driver.QosOVSAgentDriver, text: str) -> None:
    op, port_id, *rest = text.split(":")
    port = {"port_id": port_id, "physical_network": PHYSNET, "device_owner": "compute:nova"}
    if op == "update":
        ofport, min_kbps, *direction = rest
        port["vif_port"] = ovs_lib.VifPort(f"vm-{port_id[:8]}", int(ofport), port_id, "fa:16:3e:00:00:01",
                                           driver.br_int)
        rule = SimpleNamespace(id=str(uuid.uuid4()), min_kbps=int(min_kbps), direction=(direction or ["egress"])[0])
        driver.update_minimum_bandwidth(port, rule)
    elif op == "delete":
        driver.delete_minimum_bandwidth(port)
    else:
        raise SystemExit(f"unknown step {text!r}")


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.CRITICAL)
    bridges = ("br-phy",)
    if argv[0].startswith("--physical-bridges="):
        bridges, argv = tuple(argv[0].partition("=")[2].split(",")), argv[1:]
    driver = agent(argv[0], bridges)
    for text in argv[1:]:
        try:
            step(driver, text)
            error = None
        except Exception as e:  # what the agent's extension would log; the next step runs
            error = f"{type(e).__name__}: {e}"
        print(json.dumps({"step": text, "error": error}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
