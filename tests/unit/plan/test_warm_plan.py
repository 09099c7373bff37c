"""Unit table for plan/providers.py's warm plan (issue 46, item 2): when the listing shows what the last complete
sync left, the plan is made without reading anything, and says nothing changed; any difference, a check due, or
another desired state gives None and why — and then the full plan (make_plan) is what runs."""
from __future__ import annotations

from dataclasses import replace

import pytest

from minbw.model.providers import Provider
from minbw.model.synced import Synced, Unchanged, state_fingerprint, state_scope
from minbw.plan.providers import make_warm_plan, warm_refusal
from tests.unit.plan.test_providers import AGENT, BR_TEST, ROOT, desired

NOW = 1_000_000.0
STATE = desired()
LISTED = {
    ROOT.uuid: ROOT,
    AGENT: Provider(AGENT, "devstack0:Open vSwitch agent", 3, ROOT.uuid, ROOT.uuid),
    BR_TEST: Provider(BR_TEST, "devstack0:Open vSwitch agent:br-test", 5, AGENT, ROOT.uuid),
}
SYNCED = Synced(fingerprint="files:abc", at=NOW - 60, roots={"devstack0": ROOT.uuid},
                generations={AGENT: 3, BR_TEST: 5}, agents=frozenset({AGENT}), verified=NOW - 60, checked=NOW - 60,
                warnings=("a warning of the last plan",))


def warm(synced=SYNCED, listed=LISTED, fingerprint="files:abc", check_interval=3600.0, max_age=86400.0, roots=None):
    roots = {"devstack0": ROOT} if roots is None else roots
    return make_warm_plan(STATE, synced, fingerprint, listed, roots, now=NOW, check_interval=check_interval,
                          max_age=max_age)


def test_the_listing_as_the_last_sync_left_it_is_the_plan_without_writes():
    plan, why = warm()
    assert why == "unchanged" and plan is not None and plan.ops == () and not plan.changed
    assert [(p.uuid, p.parent_uuid) for p in plan.providers] == [(AGENT, ROOT.uuid), (BR_TEST, AGENT)]
    assert plan.warnings == ("a warning of the last plan",) and plan.diff() == {"before": {}, "after": {}}


def moved(uuid, **change):
    return {**LISTED, uuid: replace(LISTED[uuid], **change)}


STRANGER = Provider("0ddba11d-0000-4000-8000-000000000000", "devstack0:Open vSwitch agent:br-zz", 1, AGENT, ROOT.uuid)


@pytest.mark.parametrize("case, kwargs, why", [
    ("another desired state", {"fingerprint": "files:other"}, "the desired state differs"),
    ("safety check due", {"check_interval": 60.0}, "the safety check is due"),
    ("full check due", {"max_age": 59.0}, "the periodic full check is due"),
    ("a generation moved", {"listed": moved(BR_TEST, generation=6)}, "provider devstack0:Open vSwitch agent:br-test"),
    ("renamed", {"listed": moved(AGENT, name="x")}, "provider devstack0:Open vSwitch agent ("),
    ("reparented", {"listed": moved(BR_TEST, parent_uuid=ROOT.uuid)}, "changed since the last sync"),
    ("deleted", {"listed": {u: p for u, p in LISTED.items() if u != BR_TEST}}, "changed since the last sync"),
    ("a stranger under an agent", {"listed": {**LISTED, STRANGER.uuid: STRANGER}}, "appeared under an agent"),
    ("the root replaced", {"roots": {"devstack0": replace(ROOT, uuid="0ddba11d-0000-4000-8000-000000000001")}},
     "the compute node root of devstack0 changed"),
    ("the root gone", {"roots": {}}, "the compute node root of devstack0 changed"),
    ("another set of providers recorded", {"synced": replace(SYNCED, generations={**SYNCED.generations, "x": 1})},
     "not the desired ones"),
])
def test_any_difference_gives_the_full_path_and_why(case, kwargs, why):
    plan, reason = warm(**kwargs)
    assert plan is None and why in reason, (case, reason)


def test_the_refusals_the_listing_cannot_change_are_known_before_it():
    assert warm_refusal(SYNCED, "files:abc", now=NOW, check_interval=3600, max_age=86400) is None
    assert "safety check" in warm_refusal(SYNCED, "files:abc", now=NOW + 3540, check_interval=3600, max_age=86400)
    assert "differs" in warm_refusal(SYNCED, "state:x", now=NOW, check_interval=3600, max_age=86400)


def test_the_record_and_the_answer_round_trip_and_say_why():
    assert Synced.from_dict(SYNCED.to_dict()) == SYNCED
    answer = Unchanged(2, "files:abc", NOW, 3600)
    assert str(answer).startswith("unchanged: 2 providers at the generations of the last sync (1970-01-12T13:46:40Z)")
    assert "desired state equal (fingerprint files:abc)" in str(answer) and answer.to_dict()["why"] == str(answer)


def test_the_state_fingerprint_is_the_same_for_equal_states_and_differs_for_others():
    assert state_fingerprint(desired()) == state_fingerprint(STATE)
    other = desired("[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1501:1500\n")
    assert state_fingerprint(other) != state_fingerprint(STATE) and state_fingerprint(STATE).startswith("state:")


def test_the_scope_is_what_is_synced_not_what_it_says():
    """The record's file name: the same units with other contents share it (the new record replaces the old one);
    another host's units have their own."""
    other = desired("[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1501:1500\n")
    assert state_scope(other) == state_scope(STATE) and len(state_scope(STATE)) == 16
    elsewhere = replace(STATE, units=tuple(replace(u, host="devstack1") for u in STATE.units))
    assert STATE.units and state_scope(elsewhere) != state_scope(STATE)
