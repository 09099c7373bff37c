"""The exporter's threads: the collection loop, the slow reports' loop, and the HTTP server whose scrapes are
served from the last collection in memory and never wait for Placement, the audit, the drift or the cache check.

Who owns what: the collection loop's thread owns the :class:`~minbw.exporter.collector.Collector` (its reader,
provider cache and memos); the slow loop's thread owns the slow reports (a reader and cache of their own); the
two hand each other immutable objects only (:class:`SlowResults`, :class:`Collection`). :class:`Served` holds the
last collection rendered; a scrape takes it under a lock held only for the swap, never while anything is read or
rendered.
"""
from __future__ import annotations

import gc
import gzip
import sys
import threading
import time
from collections.abc import Callable

from minbw.exporter.collector import Collection, Collector, SlowResults
from minbw.exporter.exposition import Exposition, age

_EOF = "# EOF\n"
# How long a thread that wants the interpreter lock back waits before the running thread is asked to give it up
# (CPython's default: 5 ms). A scrape's thread gives the lock up at every socket call (accept, read, write) and
# waits for it again each time while the collection's threads run Python, so at 5 ms a scrape during a collection
# took 30-50 ms at 1,000 hosts instead of 2 (docs/benchmarks.md, "The exporter's collection and scrapes at 1,000
# hosts"); :func:`start_server` lowers it to this.
SWITCH_INTERVAL = 0.001
# The collection loop moves what outlived a cycle (the provider cache, the details, the renderings kept: about
# 200,000 objects at 1,000 hosts) out of the garbage collector's generations (gc.freeze), so that no full
# collection, which holds the interpreter lock for all of its scan (100-150 ms at 1,000 hosts), stalls a scrape;
# a cycle leaves no cyclic garbage (measured), and every ``FULL_COLLECTION_EVERY`` cycles the frozen objects are
# handed back and collected once, so that whatever cycle did become garbage is freed within the hour.
FULL_COLLECTION_EVERY = 40


class Served:
    """The last :class:`Collection`, rendered in each format a scrape has asked for (Prometheus' text format and
    OpenMetrics), and gzipped on the first scrape that accepts it. :meth:`publish` renders outside the lock that
    guards the swap; :meth:`body` takes that lock only to read. The first scrape of a format renders the last
    collection in it itself (under the rendering's own lock: that one scrape may wait for a publication being
    rendered); the publications after it render that format too."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self.exposition = Exposition()  # used under _rendering only
        self._rendering = threading.Lock()
        self._lock = threading.Lock()
        self._collection: Collection | None = None
        self._bodies: dict[bool, str] = {}
        self._gzipped: dict[bool, bytes] = {}
        self._formats: set[bool] = set()
        self._zipped_formats: set[bool] = set()

    def publish(self, collection: Collection) -> None:
        """Render ``collection`` in every format asked for so far (gzipped too where a scrape accepted gzip), then
        serve it: the scrapes never render or compress a publication themselves after the first of a format."""
        with self._rendering:
            with self._lock:
                formats, zipped = set(self._formats), set(self._zipped_formats)
            bodies = {om: self._render(self.exposition, collection, om) for om in formats}
            heads = {om: gzip.compress(bodies[om].encode(), compresslevel=1) for om in zipped & formats}
            with self._lock:
                self._collection, self._bodies, self._gzipped = collection, bodies, heads

    @staticmethod
    def _render(exposition: Exposition, collection: Collection, openmetrics: bool) -> str:
        body = exposition.render(collection.families, collection.parts, openmetrics=openmetrics)
        return body[:-len(_EOF)] if openmetrics else body

    def body(self, openmetrics: bool = False) -> str:
        """What a scrape gets: the last collection rendered, and its age (empty before the first collection)."""
        with self._lock:
            collection, body = self._collection, self._bodies.get(openmetrics)
            if body is None:
                self._formats.add(openmetrics)
        if collection is None:
            return _EOF if openmetrics else ""
        if body is None:  # a format not asked for before: the last collection rendered in it, by this scrape
            with self._rendering:
                with self._lock:
                    collection, body = self._collection, self._bodies.get(openmetrics)
                if body is None:
                    body = self._render(self.exposition, collection, openmetrics)
                    with self._lock:
                        self._bodies[openmetrics] = body
        tail = age(self.clock() - collection.finished, openmetrics)
        return body + tail + (_EOF if openmetrics else "")

    def gzipped(self, openmetrics: bool = False) -> bytes:
        """:meth:`body` gzipped: the collection's part compressed once per collection (gzip members concatenate)."""
        with self._lock:
            collection, head = self._collection, self._gzipped.get(openmetrics)
            body = self._bodies.get(openmetrics)
            self._zipped_formats.add(openmetrics)
        if collection is None or body is None:
            return gzip.compress(self.body(openmetrics).encode(), compresslevel=1)
        if head is None:
            head = gzip.compress(body.encode(), compresslevel=1)
            with self._lock:
                if self._collection is collection:
                    self._gzipped[openmetrics] = head
        tail = age(self.clock() - collection.finished, openmetrics) + (_EOF if openmetrics else "")
        return head + gzip.compress(tail.encode(), compresslevel=1)


def app(served: Served):
    """The WSGI application serving ``/metrics``: the format Prometheus asks for (its Accept header, as
    prometheus_client chooses), gzip when accepted. It reads nothing: it serves the last collection."""
    from prometheus_client.exposition import choose_encoder

    def serve(environ, start_response):
        if environ.get("PATH_INFO", "/") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        _, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        openmetrics = content_type.startswith("application/openmetrics-text")
        headers = [("Content-Type", content_type)]
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            body = served.gzipped(openmetrics)
            headers.append(("Content-Encoding", "gzip"))
        else:
            body = served.body(openmetrics).encode()
        start_response("200 OK", headers)
        return [body]
    return serve


def start_server(served: Served, address: str, port: int):
    """Serve ``served`` on ``address:port`` in a daemon thread (as prometheus_client's start_http_server does):
    the server (``server_port``, ``shutdown()``, ``server_close()``). The interpreter's switch interval is lowered
    to :data:`SWITCH_INTERVAL` (never raised), so that a scrape waits little for the collection's threads."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server
    from prometheus_client.exposition import ThreadingWSGIServer

    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)

    class Quiet(WSGIRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    server = make_server(address, port, app(served), ThreadingWSGIServer, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True, name="minbw-exporter-http").start()
    return server


class Loops:
    """The collection loop (a cycle every ``interval`` seconds, and at once when the slow reports have new
    results) and the slow reports' loop (every ``slow_interval`` seconds), each in a thread of its own, until
    ``stop`` is set."""

    def __init__(self, collector: Collector, slow_reports: Callable[[], SlowResults], served: Served, *,
                 interval: float, slow_interval: float, stop: threading.Event,
                 say: Callable[[str], None] | None = None):
        self.collector = collector
        self.slow_reports = slow_reports
        self.served = served
        self.interval = interval
        self.slow_interval = slow_interval
        self.stop = stop
        self.say = say
        self.slow = SlowResults()   # replaced whole by the slow loop, read by the collection loop
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._cycles = 0

    def collect_once(self) -> Collection:
        collection = self.collector.collect(self.slow)
        self.served.publish(collection)
        return collection

    def cycle(self) -> Collection:
        """One cycle as the collection loop runs it: :meth:`collect_once`, then what outlived it frozen out of the
        garbage collector's way (:data:`FULL_COLLECTION_EVERY`: every so many cycles collected once instead)."""
        try:
            return self.collect_once()
        finally:
            self._cycles += 1
            if self._cycles % FULL_COLLECTION_EVERY == 0:
                gc.unfreeze()
                gc.collect()
            else:
                gc.freeze()

    def _collecting(self) -> None:
        while not self.stop.is_set():
            self._guard("collection", self.cycle)
            self._wake.wait(self.interval)
            self._wake.clear()

    def _reporting(self) -> None:
        while not self.stop.is_set():
            def run():
                self.slow = self.slow_reports()
                self._wake.set()  # the next cycle serves the new results
            self._guard("slow reports", run)
            self.stop.wait(self.slow_interval)

    def _guard(self, what: str, fn) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a loop never dies: said, and tried again on its interval
            if self.say:
                self.say(f"the {what} loop failed: {type(e).__name__}: {e}")

    def start(self) -> None:
        for name, target in (("minbw-exporter-collection", self._collecting),
                             ("minbw-exporter-slow", self._reporting)):
            t = threading.Thread(target=target, daemon=True, name=name)
            t.start()
            self._threads.append(t)

    def join(self, timeout: float | None = None) -> None:
        self._wake.set()
        for t in self._threads:
            t.join(timeout)
