"""server_bandwidth_info's answer (minbw.reports.guarantee.Guarantee) and what a deleted server left (Release): their
dicts, keys in the order the modules have always returned them, for a server that holds its guarantee, one in ERROR,
and a deletion."""
from __future__ import annotations

from minbw.reports.diagnosis import Diagnosis
from minbw.reports.guarantee import Guarantee, PortState, Release

SERVER = {"id": "s", "name": "vm", "status": "ACTIVE", "hypervisor_hostname": "h0", "compute_host": "h0"}


def test_held_guarantee():
    port = PortState("p", "p0", {"allocation": {"g": "br"}}, "h0", None, None, notes=("differs",))
    got = Guarantee((), SERVER, host="h0", allocations={"br": {"resources": {"X": 1}}},
                    groups={"g": {"provider": "br", "provider_name": "h0:br"}}, ports=(port,))
    assert got.ok and got.notes == ["differs"]
    assert list(got.to_dict().items()) == [
        ("ok", True), ("problems", []), ("server", SERVER), ("host", "h0"),
        ("allocations", {"br": {"resources": {"X": 1}}}), ("groups", {"g": {"provider": "br", "provider_name": "h0:br"}}),
        ("ports", [port.to_dict()]), ("notes", ["differs"]), ("diagnosis", [])]


def test_server_in_error():
    entry = Diagnosis("g", "port p0 bandwidth group g", ("no room",), False)
    got = Guarantee(("No valid host",), SERVER, diagnosis=(entry,))
    assert not got.ok
    assert got.to_dict() == {"ok": False, "problems": ["No valid host"], "server": SERVER, "host": None,
                             "allocations": {}, "groups": {}, "ports": [], "notes": [],
                             "diagnosis": [entry.to_dict()]}


def test_release_left_and_released():
    left = Release("s", ("p1", "p2"), {"br": {"resources": {"X": 1}}}, {"p1": {"allocation": {"g": "br"}}, "p2": {}})
    assert list(left.to_dict().items()) == [
        ("allocations", {"br": {"resources": {"X": 1}}}), ("binding_profiles", {"p1": {"allocation": {"g": "br"}}, "p2": {}}),
        ("problems", ["Placement still has allocations for consumer s: {'br': {'resources': {'X': 1}}}",
                      "port p1: binding:profile.allocation is still {'g': 'br'}"]),
        ("server_id", "s"), ("ports", ["p1", "p2"])]
    assert Release("s", (), {}, {"p1": {}}).problems == []
