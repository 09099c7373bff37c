"""The warm sync as the listing (issue 46, item 2), against the real embedded Placement: a sync of unchanged inputs
whose providers the listing shows at the generations the last complete sync left answers from what was kept, with
the listing as its one call; another writer's change, a stranger under an agent, changed files or a check due take
the full path, which repairs."""
from __future__ import annotations

import types

import pytest

from minbw.neutron import naming, ovn
from minbw.usecases import providers
from minbw.usecases.cloud import Cache
from tests.functional.test_sync import OVS_INI, make_root, tree

HOSTS = ("hv1", "hv2", "hv3")  # three hypervisors: one listing of every provider
LISTING = [("GET", "/resource_providers")]
OVS = naming.AGENT_KINDS["openvswitch"]


def agent_files(tmp_path, total=1500):
    out = []
    for h in HOSTS:
        path = tmp_path / f"{h}.ini"
        path.write_text(f"[DEFAULT]\nhost = {h}\n" + OVS_INI.replace("1500:1500", f"{total}:{total}"))
        out.append(str(path))
    return tuple(out)


def run(placement, tmp_path, **options):
    # a cloud without Nova, as the embedded Placement is
    cloud = types.SimpleNamespace(placement=placement, progress=None, has=lambda service: False)
    placement.counter.reset()
    return providers.sync(cloud, providers.ProvidersRequest(cache=Cache.at(str(tmp_path / "c.json")), **options))


@pytest.fixture
def roots(placement):
    return {h: make_root(placement, h) for h in HOSTS}


def test_a_warm_sync_of_unchanged_files_is_the_listing_and_says_why(placement, tmp_path, roots):
    configs = agent_files(tmp_path)
    first = run(placement, tmp_path, agent_configs=configs)
    assert first.changed and first.unchanged is None
    assert len(list(tmp_path.glob("c.json.synced-*"))) == 1
    expected = {h: tree(placement, h) for h in HOSTS}
    for check in (False, True):  # check mode answers the same, with the same one call
        warm = run(placement, tmp_path, agent_configs=configs, check=check)
        assert placement.counter.calls == LISTING, placement.counter.calls
        assert not warm.changed and warm.applied is None and warm.diffs() == [] and warm.unchanged is not None
        assert warm.unchanged.providers == 9 and warm.unchanged.fingerprint.startswith("files:")
        assert "unchanged: 9 providers at the generations of the last sync" in warm.summary
        assert "desired state equal (fingerprint files:" in warm.summary
        doc = warm.to_dict()
        assert doc["unchanged"]["providers"] == 9 and doc["ops"] == [] and doc["result"] is None
        # what the full path would answer: the same providers, parents resolved to the roots, the same units
        assert doc["providers"] == first.to_dict()["providers"]
        assert [u["unit"] for u in doc["units"]] == [u["unit"] for u in first.to_dict()["units"]]
        assert not any(u["changed"] for u in doc["units"])
    assert {h: tree(placement, h) for h in HOSTS} == expected


def test_another_writers_trait_moves_a_generation_and_the_full_path_repairs(placement, tmp_path, roots):
    configs = agent_files(tmp_path)
    run(placement, tmp_path, agent_configs=configs)
    expected = tree(placement, "hv2")
    uuid = naming.device_rp_uuid(OVS, "hv2", "br-test")
    placement.create_trait("CUSTOM_SOMEONE_ELSES")
    traits, gen = placement.get_provider_traits(uuid)
    placement.set_provider_traits(uuid, {*traits, "CUSTOM_SOMEONE_ELSES"}, gen)
    repaired = run(placement, tmp_path, agent_configs=configs)
    assert repaired.unchanged is None and [(o.action, o.uuid) for o in repaired.plan.ops] == [("set_traits", uuid)]
    assert tree(placement, "hv2") == expected
    again = run(placement, tmp_path, agent_configs=configs)  # the repair recorded: the listing again
    assert again.unchanged is not None and placement.counter.calls == LISTING


def test_a_stranger_under_an_agent_takes_the_full_path_which_deletes_it(placement, tmp_path, roots):
    configs = agent_files(tmp_path)
    run(placement, tmp_path, agent_configs=configs)
    agent = naming.agent_rp_uuid(OVS, "hv1")
    stranger = placement.create_provider(naming.device_rp_uuid(OVS, "hv1", "br-zz"), "hv1:Open vSwitch agent:br-zz",
                                         agent)
    swept = run(placement, tmp_path, agent_configs=configs)
    assert swept.unchanged is None and [(o.action, o.uuid) for o in swept.plan.ops] == [
        ("delete_provider", stranger.uuid)]
    assert run(placement, tmp_path, agent_configs=configs).unchanged is not None


def test_changed_files_or_a_check_due_take_the_full_path(placement, tmp_path, roots):
    configs = agent_files(tmp_path)
    run(placement, tmp_path, agent_configs=configs)
    changed = run(placement, tmp_path, agent_configs=agent_files(tmp_path, total=1600))
    assert changed.unchanged is None and {o.action for o in changed.plan.ops} == {"set_inventories"}
    assert len(changed.plan.ops) == 3
    # the safety check due at every sync (interval 0): the full path, which runs it, and plans nothing
    due = run(placement, tmp_path, agent_configs=agent_files(tmp_path, total=1600), cache_check_interval=0)
    assert due.unchanged is None and not due.changed and len(placement.counter.calls) > 2
    assert run(placement, tmp_path, agent_configs=agent_files(tmp_path, total=1600)).unchanged is not None
    # another option (create_root): the full path; nothing written, so the record still answers for the files
    rooted = run(placement, tmp_path, agent_configs=agent_files(tmp_path, total=1600), create_root=True)
    assert rooted.unchanged is None and not rooted.changed
    assert run(placement, tmp_path, agent_configs=agent_files(tmp_path, total=1600)).unchanged is not None
    # one record per scope (the same files, other bytes): the first files' record was replaced, not kept beside
    assert len(list(tmp_path.glob("c.json.synced-*"))) == 1
    back = run(placement, tmp_path, agent_configs=agent_files(tmp_path))  # the first files' bytes again
    assert back.unchanged is None and len(back.plan.ops) == 3
    assert len(list(tmp_path.glob("c.json.synced-*"))) == 1


def chassis(total=100):
    return tuple(
        ovn.Chassis(f"c-{h}", h, "physnet0:br-test",
                    f"resource_provider_bandwidths=br-test:{total}:{total},resource_provider_hypervisors=br-test:{h}")
        for h in HOSTS)


def test_the_ovn_chassis_source_the_same(placement, tmp_path, roots):
    first = run(placement, tmp_path, ovn=providers.OvnSources(values=chassis()))
    assert first.changed and first.unchanged is None
    warm = run(placement, tmp_path, ovn=providers.OvnSources(values=chassis()))
    assert placement.counter.calls == LISTING and warm.unchanged is not None
    assert warm.unchanged.fingerprint.startswith("state:") and warm.unchanged.providers == 6
    # another writer moves an inventory: the full path puts it back
    uuid = naming.device_rp_uuid(naming.AGENT_KINDS[naming.OVN], "hv3", "br-test")
    inv, gen = placement.get_inventories(uuid)
    placement.set_inventories(uuid, {rc: {**i, "total": 7} for rc, i in inv.items()}, gen)
    repaired = run(placement, tmp_path, ovn=providers.OvnSources(values=chassis()))
    assert repaired.unchanged is None and [(o.action, o.uuid) for o in repaired.plan.ops] == [("set_inventories", uuid)]
    # the chassis' options changed: another desired state, the full path
    changed = run(placement, tmp_path, ovn=providers.OvnSources(values=chassis(total=200)))
    assert changed.unchanged is None and len(changed.plan.ops) == 3
    assert run(placement, tmp_path, ovn=providers.OvnSources(values=chassis(total=200))).unchanged is not None
