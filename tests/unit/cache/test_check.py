"""The provider cache's safety check: which listings, and which cached providers disagree (pure)."""
from minbw.cache.check import Listing, disagreeing, listings

INV = {"total": 1000, "reserved": 0, "min_unit": 1, "max_unit": 1000, "step_size": 1, "allocation_ratio": 1.0}


def entry(traits=("CUSTOM_PHYSNET_X",), inv=None, used=None):
    return {"traits": list(traits), "inventories": {"NET_BW_EGR_KILOBIT_PER_SEC": inv or INV}, "used": used}


def test_listings_depend_on_distinct_traits_classes_and_capacities_not_on_count():
    few = listings([entry(used={})] * 3)
    many = listings([entry(used={})] * 3000)
    assert few == many == (Listing(trait="CUSTOM_PHYSNET_X"),
                           Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1),
                           Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1000),
                           Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1001))
    assert few[0].filters() == {"required": "CUSTOM_PHYSNET_X"}
    assert few[2].filters() == {"resources": "NET_BW_EGR_KILOBIT_PER_SEC:1000"}


def test_expectations_with_known_and_unknown_usage():
    full = Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1000)
    more = Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1001)
    assert full.expects(entry(used={})) is True
    assert full.expects(entry(used={"NET_BW_EGR_KILOBIT_PER_SEC": 1})) is False
    assert full.expects(entry(used=None)) is None      # depends on usage the cache does not know
    assert more.expects(entry(used=None)) is False     # beyond capacity and max_unit whatever the usage
    assert Listing(resource_class="OTHER", amount=1).expects(entry()) is False
    assert Listing(trait="CUSTOM_PHYSNET_X").expects(entry()) is True


def test_disagreeing_names_only_providers_whose_membership_differs():
    entries = {"a": entry(used={}), "b": entry(used={}), "c": entry(used=None)}
    ok = {li: ({"a", "b", "c"} if li.trait or li.amount <= 1000 else set()) for li in listings(entries.values())}
    assert disagreeing(entries, ok) == set()
    lost_trait = {**ok, Listing(trait="CUSTOM_PHYSNET_X"): {"a", "c"}}
    assert disagreeing(entries, lost_trait) == {"b"}
    grown = {**ok, Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1001): {"c"}}
    assert disagreeing(entries, grown) == {"c"}
    # an absence proves nothing when the usage is unknown (c), and is a disagreement when it is known (a)
    absent = {**ok, Listing(resource_class="NET_BW_EGR_KILOBIT_PER_SEC", amount=1000): {"b"}}
    assert disagreeing(entries, absent) == {"a"}
