"""port schedule's result: to_dict gives the dicts the command and the placement_schedule module showed."""
from minbw.model.claims import Tried
from minbw.neutron.segments import SegmentChoice
from minbw.ops.schedule import Binding, PortPlan, Scheduled
from minbw.usecases.schedule import ScheduleResult


def test_an_unchanged_consumer_shows_what_it_holds():
    held = {"rp": {"resources": {"VCPU": 1}, "generation": 3}}
    result = ScheduleResult("c-uuid", False, held=held)
    out = result.to_dict()
    assert list(out) == ["consumer", "host", "allocations", "bindings", "attempts", "segments", "ports"]
    assert out["allocations"] == held and out["host"] is None and result.host is None and result.bindings == ()


def test_a_schedule_shows_the_workflows_dict_without_changed_and_with_nova_filters():
    done = Scheduled("c-uuid", (PortPlan("p1", None, "net", (), None),), (SegmentChoice("p1", ("s",), ("a",)),), "h",
                     (Binding("p1", None, "h", {}),), (Tried("h", "claimed"),), root_provider="root",
                     allocations={}, mapping={})
    result = ScheduleResult("c-uuid", True, done, ("compute_status_filter: root_forbidden X (always)",))
    out = result.to_dict()
    assert list(out) == ["consumer", "ports", "segments", "host", "root_provider", "allocations", "mapping",
                         "bindings", "attempts", "nova_filters"]
    assert out["nova_filters"] == ["compute_status_filter: root_forbidden X (always)"] and result.host == "h"
