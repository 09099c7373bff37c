"""Candidates grouped by host: the root of each candidate's own providers (sharing providers left out), hosts and
each host's candidates in Placement's order, grouped once per candidate set."""
from minbw.model.claims import CandidateSet
from minbw.model.providers import SHARING_TRAIT


def summary(root, traits=()):
    return {"root_provider_uuid": root, "traits": list(traits), "resources": {}}


SUMMARIES = {"h1": summary("h1"), "br1": summary("h1"), "h2": summary("h2"), "br2": summary("h2"),
             "pool": summary("pool", [SHARING_TRAIT]), "pool2": summary("pool2", [SHARING_TRAIT])}


def ar(*rps):
    return {"allocations": {rp: {"resources": {"X": 1}} for rp in rps}}


def test_candidates_group_by_their_own_providers_root_in_placements_order():
    ars = (ar("pool", "br2", "h2"), ar("h1", "br1"), ar("br2"), ar("pool", "h1"), ar("pool", "pool2"), ar("gone"))
    cands = CandidateSet(ars, SUMMARIES, {}, "1.39")
    assert cands.by_host() == [("h2", [ars[0], ars[2]]), ("h1", [ars[1], ars[3]]), ("pool", [ars[4]]),
                               ("gone", [ars[5]])]
    assert [h for h, _ in cands.by_host()] == [cands.host_of(a) for a in (ars[0], ars[1], ars[4], ars[5])]


def test_the_grouping_is_made_once_and_each_caller_gets_its_own_list():
    cands = CandidateSet((ar("h1"), ar("h2")), SUMMARIES, {}, "1.39")
    first = cands.by_host()
    first.pop()
    again = cands.by_host()
    assert again == [("h1", [ar("h1")]), ("h2", [ar("h2")])] and again is not first
    assert again[0][1] is cands.by_host()[0][1]    # grouped once: the same lists, not a new scan
