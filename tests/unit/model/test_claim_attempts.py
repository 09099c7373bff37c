"""A claim's attempts are typed (Tried) to the edge: their dicts are today's, keys in the same order, in a Claim, a
NoValidHost and an OvercommitUndone."""
from minbw.errors import NoValidHost, OvercommitUndone
from minbw.model.claims import Claim, Tried
from minbw.ops.claims import UNDONE, overcommit_error, undone_note

EXCESS = {"provider": "rp", "resource_class": "NET_BW_EGR_KILOBIT_PER_SEC", "used": 2001, "capacity": 2000.0}


def test_an_attempts_dict_names_why_and_excess_only_when_there_are():
    assert list(Tried("h", "claimed").to_dict()) == ["host", "outcome"]
    assert Tried("h", "skipped", "no mapping").to_dict() == {"host": "h", "outcome": "skipped", "why": "no mapping"}
    assert list(Tried("h", "skipped", "").to_dict()) == ["host", "outcome", "why"]  # said, though empty
    undone = Tried("h", UNDONE, excess=(EXCESS,)).to_dict()
    assert list(undone) == ["host", "outcome", "excess"] and undone["excess"] == [EXCESS]


def test_a_claim_and_a_no_valid_host_render_their_attempts():
    tried = (Tried("h1", "capacity"), Tried("h2", "claimed"))
    claim = Claim("c", "h2", None, {}, {}, {}, attempts=tried)
    assert claim.to_dict()["attempts"] == [{"host": "h1", "outcome": "capacity"}, {"host": "h2", "outcome": "claimed"}]
    err = NoValidHost("No valid host: taken.", [], tried)
    assert list(err.to_dict()) == ["msg", "diagnosis", "attempts"]
    assert err.to_dict()["attempts"] == claim.to_dict()["attempts"] and err.attempts == list(tried)


def test_attempts_undone_over_capacity_make_an_overcommit_undone_with_the_last_excess():
    plain = NoValidHost("No valid host: taken.", [], [Tried("h1", "capacity")])
    assert overcommit_error(plain) is plain and undone_note(plain.attempts) == ""
    tried = [Tried("h1", UNDONE, excess=({**EXCESS, "used": 2500},)), Tried("h1", UNDONE, excess=(EXCESS,))]
    err = overcommit_error(NoValidHost("No valid host: taken.", [], tried))
    assert isinstance(err, OvercommitUndone) and err.excess == (EXCESS,)
    assert list(err.to_dict()) == ["msg", "diagnosis", "attempts", "excess"] and err.to_dict()["excess"] == [EXCESS]
    assert undone_note(tried).startswith("; 2 of them Placement accepted over capacity")
