"""minbw.exporter.memory: glibc's malloc tuned for the exporter's process, nothing done elsewhere; and the HTTP
server process's answer, which copies nothing of the body it serves."""
from __future__ import annotations

import gzip

import pytest

from minbw.exporter import http, memory


def test_with_glibc_or_without_the_calls_never_fail(monkeypatch):
    glibc = memory._glibc() is not None
    assert memory.limit_arenas() is glibc  # this machine's C library decides
    assert isinstance(memory.trim(), bool)
    monkeypatch.setattr(memory, "_glibc", lambda: None)  # musl, macOS: nothing to do
    assert memory.limit_arenas() is False and memory.trim() is False


@pytest.mark.parametrize("zipped", [True, False])
def test_a_scrape_sends_the_held_body_itself_then_its_end(zipped):
    body = gzip.compress(b"# TYPE x gauge\nx 1\n") if zipped else b"# TYPE x gauge\nx 1\n"
    held = http._Held(None)
    held.put(http.Board(1000.0, {} if zipped else {True: body}, {True: body} if zipped else {}))
    serve = http.app(held, clock=lambda: 1001.5)
    got = []
    environ = {"PATH_INFO": "/metrics", "HTTP_ACCEPT": "application/openmetrics-text; version=1.0.0"}
    answer = serve({**environ, "HTTP_ACCEPT_ENCODING": "gzip"} if zipped else environ,
                   lambda status, headers: got.append((status, dict(headers))))
    assert got[0][0] == "200 OK" and answer[0] is body  # the board's bytes, not a copy joined with the end
    whole = b"".join(answer)
    assert int(got[0][1]["Content-Length"]) == len(whole)
    text = (gzip.decompress(whole) if zipped else whole).decode()
    assert text.startswith("# TYPE x gauge\nx 1\n") and text.endswith("# EOF\n") and "1.5" in text
