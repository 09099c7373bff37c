"""minbw.exporter.exposition: the exposition kept between collections, the providers' lines made from their parts,
is what prometheus_client renders of the same families built whole (the oracle), in both formats, whatever the labels
hold; and what it keeps is rendered again only when it changed."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.model.providers import Provider, ProviderDetail
from minbw.reports import metrics
from minbw.exporter.exposition import Exposition, _Families, _age_rendered, age

E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
TRAITS = ("CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_X_Y")
NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)  # quotes, \\, \n, unicode


@st.composite
def providers(draw):
    out = []
    for i in range(draw(st.integers(0, 6))):
        inv = {rc: {"total": draw(st.integers(1, 10**6)), "reserved": 0,
                    "allocation_ratio": draw(st.sampled_from([1.0, 1.5, 0.3333333333333333]))}
               for rc in draw(st.lists(st.sampled_from([E, I, PPS]), unique=True, min_size=1))}
        used = {rc: draw(st.integers(0, 10**6)) for rc in inv}
        out.append(ProviderDetail(Provider(f"u{i}", f"{draw(NAMES)}-{i}", 1, "r", "r"),
                                  frozenset(draw(st.lists(st.sampled_from(TRAITS)))), inv, used, True))
    return out


def lines(text: str) -> list[str]:
    return sorted(text.split("\n"))


def oracle(families, openmetrics: bool) -> str:
    if openmetrics:
        from prometheus_client.openmetrics.exposition import generate_latest
    else:
        from prometheus_client import generate_latest
    return generate_latest(_Families(families)).decode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(providers(), providers(), st.dictionaries(st.sampled_from([f"u{i}" for i in range(6)]), NAMES), st.booleans())
def test_the_kept_exposition_is_prometheus_clients_rendering(first, second, hosts, openmetrics):
    kept, exposition = metrics.ProviderFamilies(), Exposition()
    for details in (first, second, first):
        families = metrics.families(details=details, hosts=hosts, findings=(), drift_rows=(),
                                    stats={"calls": len(details)}, provider_families=kept)
        text = exposition.render(families, kept.parts, openmetrics=openmetrics)
        # the same families as a builder without the memo (every sample made): the same lines, whatever their order
        plain = metrics.families(details=details, hosts=hosts, findings=(), drift_rows=(),
                                 stats={"calls": len(details)})
        assert lines(text) == lines(oracle(plain, openmetrics))
        assert text.endswith("# EOF\n") == openmetrics
        # the memo's families: the same samples but the providers' own, which are only in its parts
        assert [(f.name, sorted(f.samples)) for f in families] == [
            (f.name, [] if f.name in metrics.OWN_FAMILIES else sorted(f.samples)) for f in plain]
        assert sorted(s for part in kept.parts for s in metrics.part_samples(part)) == sorted(
            (f.name, *s) for f in plain if f.name in metrics.OWN_FAMILIES for s in f.samples)


def test_only_what_changed_is_rendered_again():
    details = [ProviderDetail(Provider(f"u{i}", f"h{i}:br", 1, "r", "r"), frozenset(TRAITS[:1]),
                              {E: {"total": 1000}}, {E: i}, True) for i in range(5)]
    kept, exposition = metrics.ProviderFamilies(), Exposition()

    def render(details):
        families = metrics.families(details=details, hosts={}, provider_families=kept)
        return exposition.render(families, kept.parts, openmetrics=True)

    render(details)
    assert kept.built == 5
    families = exposition.rendered["families"]
    render(details)
    assert exposition.rendered == {"families": families} and kept.built == 5  # nothing made again
    moved = list(details)
    moved[2] = ProviderDetail(Provider("u2", "h2:br", 2, "r", "r"), frozenset(TRAITS[:1]), {E: {"total": 1000}},
                              {E: 7}, True)
    text = render(moved)
    assert kept.built == 6  # its part built again, the others' kept
    assert text.count("h2:br") == 4 and text.count("h3:br") == 4  # its four samples, and the others'
    assert 'minbw_bandwidth_used_bits_per_second{direction="egress",host="",physnet="",provider="h2:br",' \
           'vnic_types="normal"} 7000.0' in text
    assert "h2:br" not in render(moved[:2] + moved[3:]) and kept.built == 6  # a provider gone: its lines with it


def test_a_format_asked_for_gzipped_only_keeps_no_plain_body():
    """Served.gzipped before the first collection (as Prometheus asks: OpenMetrics gzipped) asks for that format
    gzipped only: a publication then holds no plain body of it (at 10,000 hosts about 60 MB), and serves the
    same body as a fresh exposition renders."""
    import gzip

    from minbw.exporter.collector import Collection
    from minbw.exporter.loops import Served

    served = Served(clock=lambda: 15.0)
    assert gzip.decompress(served.gzipped(True)) == b"# EOF\n"  # before the first collection: an empty body
    details = [ProviderDetail(Provider(f"u{i}", f"h{i}:br", 1, "r", "r"), frozenset(TRAITS[:1]),
                              {E: {"total": 1000}}, {E: i}, True) for i in range(3)]
    kept = metrics.ProviderFamilies()
    families = metrics.families(details=details, hosts={}, provider_families=kept)
    served.publish(Collection(tuple(families), kept.parts, 10.0, True))
    board = served.board()
    assert board.bodies == {} and set(board.gzipped) == {True}
    body = gzip.decompress(served.gzipped(True)).decode()
    assert body.startswith(Exposition().render(families, kept.parts, openmetrics=True).removesuffix("# EOF\n"))
    assert body.endswith("minbw_collection_age_seconds 5.0\n# EOF\n") and body.count('provider="h1:br"') == 4


@settings(max_examples=300, deadline=None)
@given(seconds=st.one_of(st.floats(allow_nan=False, allow_infinity=True),
                         st.integers(min_value=-10, max_value=10**12).map(lambda n: n / 10)),
       openmetrics=st.booleans())
def test_the_age_is_prometheus_clients_rendering(seconds, openmetrics):
    """The age a scrape adds (its head rendered once, its sample line made per scrape) is the family as
    prometheus_client renders it, in both formats, for any age (a negative one served as 0)."""
    assert age(seconds, openmetrics) == _age_rendered(seconds, openmetrics)
