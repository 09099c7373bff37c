"""Unit table for reports/guarantee.py: what breaks a server's guarantee (its state, its allocations, its ports'
bindings), in the exact sentences reported."""
from __future__ import annotations

import pytest

from minbw.model.claims import Claim
from minbw.model.requests import PortRequest, RequestGroup
from minbw.reports.guarantee import PortState, check_guarantee

H1 = "11111111-1111-1111-1111-111111111111"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"

SERVER = {"id": "vm", "status": "ACTIVE", "hypervisor_hostname": "devstack0", "compute_host": "devstack0"}
GROUP = RequestGroup("g0", {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, ("CUSTOM_PHYSNET_PHYSNET0",))
REQUEST = PortRequest("p1", (GROUP,), ("g0",))
CLAIM = Claim("vm", H1, "devstack0", {BR_TEST: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}},
              {"g0": [BR_TEST], "": [H1]}, {"p1": {"g0": BR_TEST}})
HELD = {BR_TEST: {"name": "br-test", "usages": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                  "allocations": {"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}}}}


def port(allocation=None, host="devstack0", request=REQUEST):
    return PortState("p1", "port0", {"allocation": allocation} if allocation else {}, host, request, "neutron")


@pytest.mark.parametrize("case, server, ports, claim, error, providers, problems", [
    ("holds", SERVER, [port({"g0": BR_TEST})], CLAIM, None, HELD, []),
    ("not active", dict(SERVER, status="ERROR"), [port({"g0": BR_TEST})], CLAIM, None, HELD,
     ["server vm is ERROR, not ACTIVE"]),
    ("no allocations", SERVER, [port()], None, None, {}, ["Placement has no allocations for the server (consumer vm)"]),
    ("binding names another provider", SERVER, [port({"g0": "other"})], CLAIM, None, HELD,
     ["port port0 (p1): binding:profile.allocation is {'g0': 'other'}, but the server's allocation maps its "
      "request group(s) to {'g0': '" + BR_TEST + "'}"]),
    ("bound elsewhere", SERVER, [port({"g0": BR_TEST}, host="devstack1")], CLAIM, None, HELD,
     ["port port0 (p1) is bound to host 'devstack1', the server is on 'devstack0'"]),
    ("not enough allocated", SERVER, [port({"g0": BR_TEST})], CLAIM, None,
     {BR_TEST: dict(HELD[BR_TEST], allocations={"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}}})},
     [f"port port0 (p1) group g0: br-test ({BR_TEST}) has 10 NET_BW_EGR_KILOBIT_PER_SEC allocated to the server, "
      f"the group needs 1000"]),
    ("mapping error", SERVER, [port()], None, "no mapping", {},
     ["the server's allocations in Placement do not satisfy its request: no mapping"]),
    ("a port without QoS keeps no binding allocation", SERVER, [port({"g0": BR_TEST}, request=None)], CLAIM, None, HELD,
     [f"port port0 (p1) has no QoS minimum rules, but binding:profile.allocation is {{'g0': '{BR_TEST}'}}"]),
])
def test_guarantee(case, server, ports, claim, error, providers, problems):
    assert check_guarantee(server, ports, claim, error, providers) == problems, case
