"""minbw.cache.providers: the cache-trust protocol as the cache's own methods (issue 44): trust (candidates,
safety check, counts), the entries a read, an allocation read or a sync's write leave, and the sync's summary."""
from __future__ import annotations

from minbw.cache.providers import ProviderCache
from minbw.model.providers import Provider, ProviderDetail

INV = {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 1000, "reserved": 0, "min_unit": 1, "max_unit": 1000,
                                      "step_size": 1, "allocation_ratio": 1.0}}


class NoPlacement:
    """A Placement that must not be asked anything."""

    def __getattr__(self, name):
        raise AssertionError(f"Placement asked: {name}")


def prov(uuid, generation=3, name=None):
    return Provider(uuid, name or f"h:{uuid}", generation, None, uuid)


def test_trust_counts_and_remembers_the_trusted_candidates(tmp_path):
    cache = ProviderCache(tmp_path / "c.json", "http://placement", check_interval=3600, clock=lambda: 1000.0)
    cache.put("a", 3, "h:a", None, {"CUSTOM_X"}, INV)
    cache.put("b", 3, "h:b", None, None, {})  # no traits: a candidate only for readers that need none
    cache.put("c", 2, "h:c", None, set(), {})  # another generation: no candidate
    listed = [prov("a"), prov("b"), prov("c"), prov("d")]
    trusted = cache.trust(NoPlacement(), listed)  # confirmed just now: no check due, nothing asked
    assert list(trusted) == ["a"] and trusted["a"]["traits"] == ["CUSTOM_X"]
    assert cache.trusted_entry("a") is trusted["a"] and cache.trusted_entry("b") is None
    assert cache.stats == {"candidates": 1, "checks": 0, "trusted": 1, "reread": 0, "recent": 1}
    assert list(cache.trust(NoPlacement(), listed, traits=False, verify=False)) == ["a", "b"]
    assert cache.trusted_entry("b") is not None
    assert cache.stats == {"candidates": 3, "checks": 0, "trusted": 3, "reread": 0, "recent": 1}
    assert cache.summary() == ("cache: 3 of 3 cached providers trusted after 0 checks (1 confirmed less than "
                               "3600 s ago: no check due), 0 re-read")
    assert cache.holding(INV) == {"a"} and "c" in cache and "d" not in cache and cache.size() == 3
    assert cache.entry("c")["generation"] == 2 and cache.entry("d") is None


def test_what_reads_and_writes_leave_in_the_cache(tmp_path):
    now = [1000.0]
    cache = ProviderCache(tmp_path / "c.json", "http://placement", clock=lambda: now[0])
    moved = ProviderDetail(prov("a"), frozenset({"CUSTOM_X"}), INV, None, False)
    cache.provider_read(moved)
    assert cache.entry("a") is None  # the reads saw another generation than the listing's: nothing kept
    cache.provider_read(ProviderDetail(prov("a"), frozenset({"CUSTOM_X"}), INV, None, True), usages=False)
    assert cache.entry("a")["used"] is None and cache.entry("a")["traits"] == ["CUSTOM_X"]
    now[0] = 2000.0
    cache.allocations_read("a", 2, {"c1": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}})  # another generation: nothing
    assert cache.entry("a")["used"] is None
    cache.allocations_read("a", 3, {"c1": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}, "c2": {"NET_BW_EGR_KILOBIT_PER_SEC": 5}})
    assert cache.entry("a")["used"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 15}
    assert cache.entry("a")["checked"] == cache.entry("a")["verified"] == 1000.0  # its times kept
    cache.trust(NoPlacement(), [prov("a")], verify=False)
    now[0] = 3000.0
    cache.written("a", 4, "h:a", None, {"CUSTOM_Y"}, INV, created=False)  # trusted: its usage and times kept
    assert cache.entry("a")["used"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 15} and cache.entry("a")["checked"] == 1000.0
    cache.written("b", 1, "h:b", None, set(), INV, created=True)  # created: no usage yet, read now
    assert cache.entry("b")["used"] == {} and cache.entry("b")["checked"] == 3000.0
    cache.written("c", 5, "h:c", None, set(), INV, created=False)  # neither: usage unknown
    assert cache.entry("c")["used"] is None


def test_a_loaded_cache_holds_each_distinct_value_once_and_saves_the_same_file(tmp_path):
    """The entries read from the file share one object per distinct traits, inventories and usage (and a parent's
    UUID is its own entry's key), with the file's values and types (1, 1.0 and True apart): saved again, the file is
    the same."""
    ratio_int = {rc: {**inv, "allocation_ratio": 1} for rc, inv in INV.items()}
    path = tmp_path / "c.json"
    cache = ProviderCache(path, "http://placement", clock=lambda: 1000.0)
    cache.put("agent", 1, "h:agent", None, {"CUSTOM_X"}, {})
    for u in ("a", "b"):
        cache.put(u, 3, f"h:{u}", "agent", {"CUSTOM_X", "CUSTOM_Y"}, INV, used={})
    cache.put("c", 3, "h:c", "agent", {"CUSTOM_Y", "CUSTOM_X"}, ratio_int, used={"NET_BW_EGR_KILOBIT_PER_SEC": 1})
    cache.save()
    written = path.read_bytes()
    loaded = ProviderCache(path, "http://placement", clock=lambda: 1000.0)
    a, b, c = (loaded.entry(u) for u in "abc")
    assert a["inventories"] is b["inventories"] and a["inventories"] == INV
    assert a["traits"] is b["traits"] is c["traits"] and a["traits"] == ["CUSTOM_X", "CUSTOM_Y"]
    assert a["used"] is b["used"] and a["used"] == {} and c["used"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1}
    assert c["inventories"] is not a["inventories"] and c["inventories"] == ratio_int
    assert type(c["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["allocation_ratio"]) is int
    assert type(a["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["allocation_ratio"]) is float
    assert a["parent"] is b["parent"] is next(u for u in loaded.entries if u == "agent")
    loaded.put("d", 1, "h:d", None, None, {})
    loaded.drop("d")
    loaded.save()
    assert path.read_bytes() == written


def test_a_twin_shares_the_entries_and_keeps_its_own_counts_and_changes(tmp_path):
    """A twin (the exporter's slow reports beside its collection) holds the same entry objects, not a copy of the
    file's; what either changes is its own to save, and both save into the one file."""
    now = [1000.0]
    path = tmp_path / "c.json"
    cache = ProviderCache(path, "http://placement", check_interval=3600, clock=lambda: now[0])
    for u in "ab":
        cache.put(u, 3, f"h:{u}", None, {"CUSTOM_X"}, INV)
    cache.save()
    twin = cache.twin()
    assert (twin.path, twin.endpoint, twin.check_interval, twin.max_age) == (path, "http://placement", 3600,
                                                                            cache.max_age)
    assert twin.entries is not cache.entries and all(twin.entry(u) is cache.entry(u) for u in "ab")
    now[0] = 2000.0
    cache.confirm(["a"])  # the safety check's confirmation is true for both
    assert twin.entry("a")["verified"] == 2000.0 and not twin._changed
    twin.put("c", 1, "h:c", None, set(), {})
    assert "c" not in cache and twin.stats == cache.stats
    twin.trust(NoPlacement(), [prov("a")])
    assert twin.stats["trusted"] == 1 and cache.stats["trusted"] == 0
    twin.save()
    cache.save()
    assert ProviderCache(path, "http://placement").entries == {**cache.entries, "c": twin.entry("c")}
    assert ProviderCache(path, "http://placement").entry("a")["verified"] == 2000.0


def test_saving_reads_the_file_only_when_another_saved_since(tmp_path, monkeypatch):
    """A save merges what another sync saved since (the file read again under the lock), and does not read again a
    file that is as this cache last loaded or saved it (at 10,000 hosts 35 MB of JSON)."""
    path = tmp_path / "c.json"
    cache = ProviderCache(path, "http://placement", clock=lambda: 1000.0)
    cache.put("a", 3, "h:a", None, {"CUSTOM_X"}, INV)
    cache.save()
    other = ProviderCache(path, "http://placement", clock=lambda: 1000.0)
    loads = []
    load = ProviderCache._load
    monkeypatch.setattr(ProviderCache, "_load", lambda self: loads.append(self) or load(self))
    cache.put("b", 3, "h:b", None, set(), {})
    cache.save()
    assert loads == []  # the file as this cache saved it
    other.put("c", 1, "h:c", None, set(), {})
    other.save()
    assert loads == [other]  # cache saved since other loaded it: read again, merged
    cache.put("d", 1, "h:d", None, set(), {})
    cache.save()
    assert loads == [other, cache] and set(ProviderCache(path, "http://placement").entries) == set("abcd")
