"""The exporter's body, byte for byte, for a fixed Placement state (issue 28: the samples, the providers and the
renderings kept were made smaller; what a scrape gets must not change).

Pinned two ways: the body a long-lived exporter serves after providers moved, came and went is the body a fresh
one renders of the same state (the public path: :func:`metrics.families` with a new
:class:`metrics.ProviderFamilies`, a new :class:`Exposition`); and its SHA-256 is the one the code before the
change served for that state (``BODIES``; a deliberate change of the metrics changes them: the headroom's
HELP names ``minbw capacity show`` since the commands got one vocabulary)."""
from __future__ import annotations

import gzip
import hashlib

import pytest

from minbw.exporter.exposition import Exposition
from minbw.model.providers import Provider, ProviderDetail
from minbw.reports import metrics

E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS, PPS_E = "NET_PACKET_RATE_KILOPACKET_PER_SEC", "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC"
VNICS = ("CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP",
         "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL")
NETS = ("CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_NETWORK_TUNNEL_PROVIDER")


def state(moved: int = 0, hosts: int = 12) -> tuple[list[ProviderDetail], dict[str, str]]:
    """``hosts`` hosts of a root, an OVS agent (packet rate), a bridge and an SR-IOV device each; ``moved``: a
    number that changes the usages, some inventories, traits and names (a later collection)."""
    details, names = [], {}
    for h in range(hosts):
        root = f"{h:08d}-0000-4000-8000-000000000000"
        host = f"compute-{h:04d}" + ("-renamed" if moved and h == 3 else "")
        names[root] = host
        kinds = [("agent", "Open vSwitch agent", (VNICS[0], VNICS[1]), {PPS: {"total": 1000 + h}},
                  {PPS: (h * 7 + moved) % 900}),
                 ("bridge", "Open vSwitch agent:br-ex", (NETS[h % 2], VNICS[0]),
                  {E: {"total": 10_000_000, "reserved": 1000 * (h % 3), "allocation_ratio": 1.0},
                   I: {"total": 10_000_000 + moved * (h % 2), "allocation_ratio": (1.5, 1.0, 0.3333333333333333)[h % 3]}},
                  {E: (h * 1_000_000 + moved) % 9_000_000, I: h * 1000}),
                 ("device", "NIC Switch agent:ens5", (NETS[(h + moved) % 3], VNICS[1], VNICS[2], VNICS[3]),
                  {E: {"total": 25_000_000}, PPS_E: {"total": 500}}, {E: 2_000_000 * (h % 4)})]
        for k, (kind, suffix, traits, inv, used) in enumerate(kinds):
            uuid = f"{h:08d}-000{k + 1}-4000-8000-000000000000"
            parent = root if k < 2 else f"{h:08d}-0001-4000-8000-000000000000"
            names[uuid] = host
            details.append(ProviderDetail(Provider(uuid, f"{host}:{suffix}", 1 + moved, parent, root),
                                          frozenset(traits), inv, used, True))
    return details, names


def render(kept: metrics.ProviderFamilies, exposition: Exposition, details, hosts, openmetrics: bool) -> str:
    families = metrics.families(details=details, hosts=hosts, findings=(), drift_rows=(),
                                status={"providers": {"ok": True, "seconds": 1.5, "last_success": 1_700_000_000.0}},
                                stats={"seconds": 1.5, "calls": len(details), "listed": 48, "bandwidth": 36},
                                calls_total=1234, provider_families=kept)
    return exposition.render(families, kept.parts, openmetrics=openmetrics)


def bodies(openmetrics: bool) -> list[str]:
    """The bodies a long-lived exporter serves over four collections: as built, after providers moved, after some
    went (and a host came), and back."""
    first, hosts = state()
    moved, moved_hosts = state(moved=1)
    fewer, fewer_hosts = state(moved=1, hosts=14)
    fewer = [d for d in fewer if not d.provider.uuid.startswith("00000005")]
    kept, exposition = metrics.ProviderFamilies(), Exposition()
    return [render(kept, exposition, d, h, openmetrics)
            for d, h in ((first, hosts), (moved, moved_hosts), (fewer, fewer_hosts), (first, hosts))]


BODIES = {
    False: ["44168ef6c54aeff90d9e74f57f42d68a06e8097e2defef067f64644d92b54304",
            "de8ce5f35ba0315038f6d2d4f278b67a4328d6f5fb67f6aa6c7fa686d4408294",
            "0ccf746670e1d4942d4c9a3238760d9da76e1d3cd2367bc757d509011002a8de",
            "44168ef6c54aeff90d9e74f57f42d68a06e8097e2defef067f64644d92b54304"],
    True: ["6ec761ba3e249135839278f34b66f4cfb41f0a7259053629c6649e6120b6b032",
           "4bb9c1d6c398a747b520bcd66c5caca7e8b90a9d3c7206bf4396214a18b6bcb8",
           "722ff6711ec79721c8a029c50c5d1d1c166ec4174e257beddb8ab85523097b12",
           "6ec761ba3e249135839278f34b66f4cfb41f0a7259053629c6649e6120b6b032"],
}


@pytest.mark.parametrize("openmetrics", [False, True])
def test_a_long_lived_exporters_body_is_a_fresh_ones(openmetrics):
    served = bodies(openmetrics)
    assert served[0] == served[3]
    fewer, fewer_hosts = state(moved=1, hosts=14)
    fewer = [d for d in fewer if not d.provider.uuid.startswith("00000005")]
    fresh = render(metrics.ProviderFamilies(), Exposition(), fewer, fewer_hosts, openmetrics)
    assert served[2] == fresh


@pytest.mark.parametrize("openmetrics", [False, True])
def test_the_body_is_byte_identical_to_the_one_served_before(openmetrics):
    served = [hashlib.sha256(b.encode()).hexdigest() for b in bodies(openmetrics)]
    assert served == BODIES[openmetrics]


@pytest.mark.parametrize("openmetrics", [False, True])
def test_providers_rendered_in_batches_give_the_same_body(openmetrics, monkeypatch):
    from minbw.exporter import exposition
    whole = bodies(openmetrics)
    monkeypatch.setattr(exposition, "RENDER_AT_ONCE", 5)
    assert bodies(openmetrics) == whole


@pytest.mark.parametrize("at_once", [7, 1 << 20])
@pytest.mark.parametrize("openmetrics", [False, True])
def test_the_body_encoded_as_it_is_made_is_the_same_bytes(openmetrics, at_once, monkeypatch):
    """What a publication serves (the body encoded and gzipped piece by piece, never held whole as text) is the
    body byte for byte, plain and gzipped, whatever the batches."""
    from minbw.exporter import loops
    monkeypatch.setattr(loops, "ENCODE_AT_ONCE", at_once)
    first, hosts = state()
    moved, moved_hosts = state(moved=1)
    kept, exposition = metrics.ProviderFamilies(), Exposition()
    eof = b"# EOF\n" if openmetrics else b""
    for (details, names), expected in zip(((first, hosts), (moved, moved_hosts)), BODIES[openmetrics]):
        families = metrics.families(details=details, hosts=names, findings=(), drift_rows=(),
                                    status={"providers": {"ok": True, "seconds": 1.5, "last_success": 1_700_000_000.0}},
                                    stats={"seconds": 1.5, "calls": len(details), "listed": 48, "bandwidth": 36},
                                    calls_total=1234, provider_families=kept)
        plain, zipped = loops.encode_body(exposition.pieces(families, kept.parts, openmetrics=openmetrics),
                                          plain=True, zipped=True)
        assert hashlib.sha256(plain + eof).hexdigest() == expected
        assert gzip.decompress(zipped) == plain
        only_zipped = loops.encode_body(exposition.pieces(families, kept.parts, openmetrics=openmetrics),
                                        plain=False, zipped=True)
        assert only_zipped[0] == b"" and gzip.decompress(only_zipped[1]) == plain


def test_text_beyond_ascii_split_over_batches_is_encoded_whole(monkeypatch):
    from minbw.exporter import loops
    monkeypatch.setattr(loops, "ENCODE_AT_ONCE", 3)
    pieces = ["a", "é€", "", "😀x", "provider=\"ü\"\n"]
    plain, zipped = loops.encode_body(pieces, plain=True, zipped=True)
    assert plain == "".join(pieces).encode() and gzip.decompress(zipped) == plain
    assert loops.encode_body(pieces) == (plain, b"")
