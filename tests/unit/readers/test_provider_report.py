"""providers show's per-provider view (minbw.model.providers.ProviderReport) in tree order, and its dict: the one
``provider list -f json`` and bandwidth_providers_info have always given."""
from __future__ import annotations

from minbw.model.providers import Provider, ProviderReport
from minbw.readers.providers import _tree_order


def report(uuid, name, parent=None, root=None, traits=()):
    return ProviderReport(Provider(uuid, name, 1, parent, root or uuid), tuple(traits), {}, {})


def test_tree_order_and_dict():
    rows = [report("c2", "b-child", "r1", "r1"), report("r2", "a-root"), report("c1", "a-child", "r1", "r1"),
            report("r1", "b-root", traits=("T1", "T2"))]
    assert [r.provider.uuid for r in _tree_order(rows)] == ["r2", "r1", "c1", "c2"]
    got = ProviderReport(Provider("c1", "n", 3, "r1", "r1"), ("A", "B"), {"VCPU": {"total": 8}}, {"VCPU": 1})
    assert list(got.to_dict().items()) == [
        ("uuid", "c1"), ("name", "n"), ("generation", 3), ("root_provider_uuid", "r1"), ("parent_provider_uuid", "r1"),
        ("traits", ["A", "B"]), ("inventories", {"VCPU": {"total": 8}}), ("usages", {"VCPU": 1})]
