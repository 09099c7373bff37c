"""The Python a scrape costs in the exporter's HTTP server process, its WSGI application alone (no socket, no
wsgiref): ``minbw.exporter.http.app`` serving a board of a gzipped OpenMetrics body of 8 KiB (20 hosts) and of
2,621 KiB (10,000 hosts), beside an application that returns a fixed body (the section's control), and the parts
of the exporter's: ``age()`` (the one-sample family added per scrape), the gzip member of that tail,
``choose_encoder``. Microseconds per call, ``timeit`` in one process.

    [SRC=<a tree's python dir>] .venv/bin/python bench/exporter_app_cost.py
"""
import gzip
import os
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, os.environ.get("SRC", str(Path(__file__).resolve().parent.parent / "python")))

from minbw.exporter.exposition import age  # noqa: E402
from minbw.exporter.http import Board, _Held, app  # noqa: E402
from prometheus_client.exposition import choose_encoder  # noqa: E402

N = 3000
ENVIRON = {"PATH_INFO": "/metrics", "HTTP_ACCEPT": "application/openmetrics-text; version=1.0.0; charset=utf-8",
           "HTTP_ACCEPT_ENCODING": "gzip"}


def per_call(f) -> float:
    return timeit.timeit(f, number=N) / N * 1e6


def main() -> None:
    def start_response(status, headers):
        pass
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    for kib in (8, 2621):
        body = os.urandom(kib * 1024)
        held = _Held(None)
        held.board = Board(time.time(), {}, {True: body})
        exporter = app(held)

        def static(environ, start_response):
            start_response("200 OK", [])
            return [body]
        print(f"body {kib} KiB gzipped: the exporter's application {per_call(lambda: exporter(ENVIRON, start_response)):.0f} "
              f"us per scrape, a static one {per_call(lambda: static(ENVIRON, start_response)):.1f} us")
    tail = (age(12.3, True) + "# EOF\n").encode()
    for name, f in [("age(12.3, True)", lambda: age(12.3, True)),
                    ("gzip.compress(tail, compresslevel=1)", lambda: gzip.compress(tail, compresslevel=1)),
                    ("choose_encoder(Accept)", lambda: choose_encoder(ENVIRON["HTTP_ACCEPT"]))]:
        print(f"{name}: {per_call(f):.0f} us")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
