"""CandidateView: a candidate is typed to the edge; its dict is today's, keys in the same order."""
from __future__ import annotations

from minbw.model.claims import CandidateSet
from minbw.model.requests import ServerRequest
from minbw.reports.candidates import CandidateView, candidate_view

ROOT = "c0000000-0000-4000-8000-000000000000"


def test_candidate_dict_keys_in_order():
    view = CandidateView(ROOT, "devstack0", {ROOT: {"resources": {"VCPU": 1}}}, None, None, None, "no single mapping")
    assert list(view.to_dict().items()) == [
        ("host", ROOT), ("host_name", "devstack0"), ("allocations", {ROOT: {"resources": {"VCPU": 1}}}),
        ("mapping", None), ("mapping_source", None), ("binding_profiles", None), ("mapping_problem", "no single mapping")]


def test_one_view_per_candidate_in_placements_order():
    ar = {"allocations": {ROOT: {"resources": {"VCPU": 1}}}, "mappings": {"": [ROOT]}}
    cands = CandidateSet((ar,), {ROOT: {"resources": {}, "traits": [], "root_provider_uuid": ROOT,
                                        "parent_provider_uuid": None}}, {"resources": "VCPU:1"}, "1.39")
    (view,) = candidate_view(cands, ServerRequest(vcpus=1), {ROOT: "devstack0"})
    assert (view.host, view.host_name, view.allocations) == (ROOT, "devstack0", ar["allocations"])
    assert list(view.to_dict()) == ["host", "host_name", "allocations", "mapping", "mapping_source",
                                    "binding_profiles", "mapping_problem"]
