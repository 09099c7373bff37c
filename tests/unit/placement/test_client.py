"""The Placement client's retry policy: defaults, the environment, the waits (docs/reliability.md)."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput
from minbw.placement.client import RetryPolicy


def test_defaults_and_environment():
    assert RetryPolicy.from_env({}) == RetryPolicy(attempts=4, backoff=0.5, max_backoff=8.0, timeout=None)
    got = RetryPolicy.from_env({"MINBW_PLACEMENT_ATTEMPTS": "2", "MINBW_PLACEMENT_BACKOFF": "0.1",
                                "MINBW_PLACEMENT_MAX_BACKOFF": "1", "MINBW_PLACEMENT_TIMEOUT": "30",
                                "MINBW_PLACEMENT_OTHER": "x"})
    assert got == RetryPolicy(attempts=2, backoff=0.1, max_backoff=1.0, timeout=30.0)


@pytest.mark.parametrize("var,value", [("MINBW_PLACEMENT_ATTEMPTS", "0"), ("MINBW_PLACEMENT_ATTEMPTS", "1.5"),
                                       ("MINBW_PLACEMENT_BACKOFF", "-1"), ("MINBW_PLACEMENT_TIMEOUT", "0"),
                                       ("MINBW_PLACEMENT_TIMEOUT", "soon")])
def test_bad_environment_names_the_variable(var, value):
    with pytest.raises(InvalidInput) as err:
        RetryPolicy.from_env({var: value})
    assert str(err.value).startswith(f"{var}={value!r}: expected")


def test_pauses_double_up_to_the_cap_jittered_down_to_half():
    p = RetryPolicy(backoff=0.5, max_backoff=3.0)
    for attempt, top in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)):
        waits = [p.pause(attempt) for _ in range(200)]
        assert all(top / 2 <= w <= top for w in waits) and max(waits) > top * 0.9
    assert all(0 <= p.pause(3, conflict=True) <= 0.15 for _ in range(200))


def test_a_listing_is_decoded_straight_into_providers():
    """Each provider's JSON object becomes a Provider as it is decoded, its links dropped; what is not a provider
    stays."""
    from minbw.model.providers import Provider
    from minbw.placement.client import providers_of
    body = (b'{"resource_providers": [{"uuid": "r", "name": "h\\u00e9", "generation": 3, "parent_provider_uuid": null,'
            b' "root_provider_uuid": "r", "links": [{"rel": "self", "href": "/resource_providers/r"}]},'
            b' {"uuid": "c", "name": "h:agent", "generation": 0, "parent_provider_uuid": "r",'
            b' "root_provider_uuid": "r", "links": []}], "other": {"a": 1}}')
    got = providers_of(body)
    assert got == {"resource_providers": [Provider("r", "hé", 3, None, "r"), Provider("c", "h:agent", 0, "r", "r")],
                   "other": {"a": 1}}
    with pytest.raises(ValueError):
        providers_of(b"<html>")


def test_list_providers_is_the_listing_placement_answers(placement):
    """Against the real Placement: the providers list_providers makes are those of the JSON answer, decoded the
    plain way, in its order (filters included)."""
    from minbw.model import microversions
    from minbw.model.providers import Provider
    root = placement.create_provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000001", "host-1", None)
    placement.create_provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000002", "host-1:agent", root.uuid)
    placement.create_provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000003", "host-2", None)
    plain = placement.request("get", "/resource_providers", microversions.PROVIDERS)["resource_providers"]
    assert len(plain) == 3 and all(p["links"] for p in plain)
    assert placement.list_providers() == [Provider.from_api(p) for p in plain]
    assert placement.list_providers(in_tree=root.uuid) == [Provider.from_api(p) for p in plain[:2]]


def test_a_decoded_answer_is_handed_over_as_text_its_bytes_freed(placement, monkeypatch):
    """``request(..., decode=)`` gives ``decode`` the answer's text once the answer (its bytes) is gone: the
    listing of 70,000 providers (55 MiB of JSON) is not held as bytes and text while its providers are made."""
    import weakref

    from minbw.model import microversions
    from minbw.model.providers import Provider
    from minbw.placement.client import providers_of
    placement.create_provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000011", "host-11", None)
    answers = []
    get = placement.proxy.get

    def get_kept(*args, **kwargs):
        resp = get(*args, **kwargs)
        answers.append(weakref.ref(resp))
        return resp
    monkeypatch.setattr(placement.proxy, "get", get_kept)
    seen = []

    def decode(text):
        seen.append((type(text), [answer() is None for answer in answers]))
        return providers_of(text)
    body = placement.request("get", "/resource_providers", microversions.PROVIDERS, decode=decode)
    assert seen == [(str, [True])]
    assert body["resource_providers"] == [Provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000011", "host-11", body[
        "resource_providers"][0].generation, None, "8d6c4bd0-2bdf-4b5e-9b0e-000000000011")]


def _chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_a_listing_read_as_it_comes_is_the_listing_decoded_whole():
    """``providers_read`` makes the providers of a listing from its bytes as they come, however they are cut (a
    character of two bytes, a string with ``]`` and ``"`` in it, a number at a chunk's end), to what
    ``providers_of`` makes of the whole text; not JSON raises ValueError wherever it is cut."""
    import json

    from minbw.placement.client import providers_of, providers_read
    listed = [{"uuid": f"u{i}", "name": f"h\u00e9-{i} \\\" ] ,", "generation": 10 ** i, "parent_provider_uuid": None,
               "root_provider_uuid": "r", "links": [{"rel": "self", "href": "/x"}]} for i in range(12)]
    for body in ({"resource_providers": listed}, {"resource_providers": []},
                 {"resource_providers": listed[:2], "links": [1, 22]}, {"other": 1}):
        for indent in (None, 1):
            data = json.dumps(body, indent=indent, ensure_ascii=False).encode()
            for size in (1, 2, 3, 7, 64, len(data)):
                assert providers_read(_chunked(data, size)) == providers_of(data.decode()), (body, size)
    assert providers_read([]) is None
    for bad in (b'{"resource_providers": [{"uuid": 1}', b'{"resource_providers": [{"a": 1}, ]}',
                b'{"resource_providers": [1 2]}', b'{"resource_providers": [{}] x'):
        for size in (1, 5, 100):
            with pytest.raises(ValueError):
                providers_read(_chunked(bad, size))


def test_a_listing_is_streamed_never_held_whole(placement, monkeypatch):
    """``list_providers`` asks for the answer streamed and reads it :data:`READ_AT_ONCE` bytes at a time."""
    from minbw.placement import client
    for i in range(3):
        placement.create_provider(f"8d6c4bd0-2bdf-4b5e-9b0e-00000000002{i}", f"host-2{i}", None)
    monkeypatch.setattr(client, "READ_AT_ONCE", 100)
    asked, read = [], []
    get = placement.proxy.get

    def get_seen(*args, **kwargs):
        resp = get(*args, **kwargs)
        asked.append(kwargs.get("stream"))
        chunks = resp.iter_content

        def iter_content(size, **kw):
            read.append(size)
            return chunks(size, **kw)
        resp.iter_content = iter_content
        return resp
    monkeypatch.setattr(placement.proxy, "get", get_seen)
    names = {p.name for p in placement.list_providers()}
    assert {"host-20", "host-21", "host-22"} <= names
    assert asked == [True] and read == [100]


def test_a_listing_cut_while_it_is_read_is_tried_again(placement, monkeypatch):
    """A streamed answer whose connection breaks while it is read is no usable answer: tried again, as a reset
    before the answer is (the retry policy, docs/reliability.md)."""
    from requests.exceptions import ChunkedEncodingError

    from minbw.placement.client import RetryPolicy
    placement.create_provider("8d6c4bd0-2bdf-4b5e-9b0e-000000000031", "host-31", None)
    monkeypatch.setattr(placement, "retry", RetryPolicy(attempts=2, backoff=0.0, max_backoff=0.0))
    monkeypatch.setattr(placement, "sleep", lambda s: None)
    get, tries = placement.proxy.get, []

    def get_cut_once(*args, **kwargs):
        resp = get(*args, **kwargs)
        tries.append(resp)
        if len(tries) == 1:
            def cut(size, **kw):
                yield b'{"resource_providers": ['
                raise ChunkedEncodingError("connection broken: IncompleteRead")
            resp.iter_content = cut
        return resp
    monkeypatch.setattr(placement.proxy, "get", get_cut_once)
    assert "host-31" in {p.name for p in placement.list_providers()}
    assert len(tries) == 2
