"""The exporter's threads: the collection loop and the slow reports' loop, and what they publish for the scrapes
(:class:`Served`), which the HTTP server's own process (:mod:`minbw.exporter.http`) answers from memory without
waiting for Placement, the audit, the drift or the cache check.

Who owns what: the collection loop's thread owns the :class:`~minbw.exporter.collector.Collector` (its reader,
provider cache and memos); the slow loop's thread owns the slow reports (a reader and cache of their own: the
collector's cache's twin, whose entries they share, :meth:`~minbw.cache.providers.ProviderCache.twin`); the
two hand each other immutable objects only (:class:`SlowResults`, :class:`Collection`). :class:`Served` holds the
last collection rendered, under a lock held only for the swap, never while anything is read or rendered.
"""

from __future__ import annotations

import gc
import gzip
import io
import threading
import time
import zlib
from collections.abc import Callable, Iterable

from minbw.exporter.collector import Collection, Collector, EnforcementCollector, SlowResults
from minbw.exporter.exposition import Exposition, age
from minbw.exporter.http import Board

_EOF = "# EOF\n"
# The collection loop moves what outlived a cycle (the provider cache, the details, the renderings kept: about
# 200,000 objects at 1,000 hosts) out of the garbage collector's generations (gc.freeze), so that no full
# collection, which holds the interpreter lock for all of its scan (100-150 ms at 1,000 hosts), stalls a scrape;
# a cycle leaves no cyclic garbage (measured), and every ``FULL_COLLECTION_EVERY`` cycles the frozen objects are
# handed back and collected once, so that whatever cycle did become garbage is freed within the hour.
FULL_COLLECTION_EVERY = 40


# Text encoded (and compressed) at once while a body is made (:func:`encode_body`): the body's pieces are joined
# in batches of about this many characters, never all of them.
ENCODE_AT_ONCE = 1 << 20


def encode_body(pieces: Iterable[str], *, plain: bool = True, zipped: bool = False) -> tuple[bytes, bytes]:
    """The text of ``pieces`` (in order) as UTF-8 (if ``plain``) and as one gzip member (level 1, if ``zipped``),
    each ``b""`` where not asked for. Made as the pieces come, :data:`ENCODE_AT_ONCE` characters at a time: the
    whole body is never held as text, and a gzipped body alone is never held uncompressed (at 10,000 hosts the
    text is about 60 MB, gzipped about 3 MB). Raises what iterating ``pieces`` raises."""
    body = io.BytesIO()
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if zipped else None  # 16 +: a gzip member
    packed: list[bytes] = []
    batch: list[str] = []
    size = 0

    def flush() -> None:
        data = "".join(batch).encode()
        batch.clear()
        if plain:
            body.write(data)
        if packer is not None:
            packed.append(packer.compress(data))

    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= ENCODE_AT_ONCE:
            flush()
            size = 0
    flush()
    if packer is not None:
        packed.append(packer.flush())
    return body.getvalue(), b"".join(packed)


class Served:
    """The last :class:`Collection`, rendered in each format asked for so far (Prometheus' text format and
    OpenMetrics), plain or gzipped as it was asked for. :meth:`publish` renders outside the lock that guards
    the swap, then hands the result (a :class:`~minbw.exporter.http.Board`) to its subscribers: the HTTP server's
    process (:mod:`minbw.exporter.http`), which serves the scrapes from it. :meth:`body` and :meth:`gzipped` serve
    in this process (``--once``, tests). The first request of a format renders the last collection in it (under
    the rendering's own lock: that one request may wait for a publication being rendered); the publications after
    it render that format too."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self.exposition = Exposition()  # used under _rendering only
        self._rendering = threading.Lock()
        self._lock = threading.Lock()
        self._collection: Collection | None = None
        self._bodies: dict[bool, bytes] = {}
        self._gzipped: dict[bool, bytes] = {}
        self._formats: set[bool] = set()
        self._zipped_formats: set[bool] = set()
        self._subscribers: list[Callable[[Board], None]] = []

    def publish(self, collection: Collection) -> None:
        """Render ``collection`` in every format asked for so far (gzipped too where gzip was accepted), serve it,
        and hand it to the subscribers."""
        with self._rendering:
            with self._lock:
                plain, zipped = set(self._formats), set(self._zipped_formats)
            rendered = {om: self._render(collection, om, om in plain, om in zipped) for om in plain | zipped}
            bodies = {om: rendered[om][0] for om in plain}
            heads = {om: rendered[om][1] for om in zipped}
            del rendered
            with self._lock:
                self._collection, self._bodies, self._gzipped = collection, bodies, heads
        self._notify()

    def subscribe(self, receive: Callable[[Board], None]) -> None:
        """Call ``receive`` with :meth:`board` now and after every publication (in the publishing thread)."""
        self._subscribers.append(receive)
        receive(self.board())

    def _notify(self) -> None:
        if self._subscribers:
            board = self.board()
            for receive in self._subscribers:
                receive(board)

    def board(self, openmetrics: bool | None = None, zipped: bool = False) -> Board:
        """What is rendered of the last collection; with ``openmetrics`` given, that format (gzipped if
        ``zipped``) asked for first: rendered now if it was not, and in every publication from now on."""
        if openmetrics is not None:
            self._rendered(openmetrics, zipped)
        with self._lock:
            collection = self._collection
            return Board(collection.finished if collection else None, dict(self._bodies), dict(self._gzipped))

    def _render(self, collection: Collection, openmetrics: bool, plain: bool, zipped: bool) -> tuple[bytes, bytes]:
        """``collection`` in ``openmetrics`` (without its ``# EOF``): the body (if ``plain``) and the body gzipped
        (if ``zipped``), each ``b""`` where not asked for; made as the exposition yields it
        (:func:`encode_body`). Call it under ``_rendering``."""
        pieces = self.exposition.pieces(collection.families, collection.parts, openmetrics=openmetrics)
        return encode_body(pieces, plain=plain, zipped=zipped)

    def _rendered(self, openmetrics: bool, zipped: bool) -> tuple[Collection | None, bytes | None]:
        """The last collection and its rendering in ``openmetrics``, gzipped if ``zipped``, that format asked for
        from now on (a publication keeps the plain rendering of a format only where it was asked for plain);
        ``(None, None)`` before the first collection."""

        def held():
            return self._collection, (self._gzipped if zipped else self._bodies).get(openmetrics)

        with self._lock:
            (self._zipped_formats if zipped else self._formats).add(openmetrics)
            collection, done = held()
        if collection is None or done is not None:
            return collection, done
        with self._rendering:
            with self._lock:
                collection, done = held()
                body = self._bodies.get(openmetrics)
            if done is not None:
                return collection, done
            if body is not None:
                done = gzip.compress(body, compresslevel=1) if zipped else body
            else:
                plain, zipped_body = self._render(collection, openmetrics, not zipped, zipped)
                done = zipped_body if zipped else plain
            with self._lock:
                (self._gzipped if zipped else self._bodies)[openmetrics] = done
        return collection, done

    def body(self, openmetrics: bool = False) -> str:
        """What a scrape gets: the last collection rendered, and its age (empty before the first collection)."""
        collection, body = self._rendered(openmetrics, False)
        if collection is None or body is None:  # both None before the first collection
            return _EOF if openmetrics else ""
        tail = age(self.clock() - collection.finished, openmetrics)
        return body.decode() + tail + (_EOF if openmetrics else "")

    def gzipped(self, openmetrics: bool = False) -> bytes:
        """:meth:`body` gzipped: the collection's part compressed once per collection (gzip members concatenate).
        Asks for that format gzipped only: no publication keeps its plain body for it."""
        collection, head = self._rendered(openmetrics, True)
        if collection is None or head is None:  # both None before the first collection: an empty body
            return gzip.compress((_EOF if openmetrics else "").encode(), compresslevel=1)
        tail = age(self.clock() - collection.finished, openmetrics) + (_EOF if openmetrics else "")
        return head + gzip.compress(tail.encode(), compresslevel=1)


class Loops:
    """The collection loop (a cycle every ``interval`` seconds, and at once when the slow reports have new
    results) and the slow reports' loop (every ``slow_interval`` seconds), each in a thread of its own, until
    ``stop`` is set. ``slow_reports`` None: no slow loop (a host's exporter, whose collection is its enforcement
    check: :class:`~minbw.exporter.collector.EnforcementCollector`)."""

    def __init__(
        self,
        collector: Collector | EnforcementCollector,
        slow_reports: Callable[[], SlowResults] | None,
        served: Served,
        *,
        interval: float,
        slow_interval: float,
        stop: threading.Event,
        say: Callable[[str], None] | None = None,
    ):
        self.collector = collector
        self.slow_reports = slow_reports
        self.served = served
        self.interval = interval
        self.slow_interval = slow_interval
        self.stop = stop
        self.say = say
        self.slow = SlowResults()  # replaced whole by the slow loop, read by the collection loop
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._cycles = 0

    def collect_once(self) -> Collection:
        collection = self.collector.collect(self.slow)
        self.served.publish(collection)
        return collection

    def cycle(self) -> Collection:
        """One cycle as the collection loop runs it: :meth:`collect_once`, then what outlived it frozen out of the
        garbage collector's way (:data:`FULL_COLLECTION_EVERY`: every so many cycles collected once instead), and
        what the cycle freed given back to the system (:func:`minbw.exporter.memory.trim`)."""
        from minbw.exporter.memory import trim

        try:
            return self.collect_once()
        finally:
            self._cycles += 1
            if self._cycles % FULL_COLLECTION_EVERY == 0:
                gc.unfreeze()
                gc.collect()
            else:
                gc.freeze()
            trim()

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
        for name, target in (("minbw-exporter-collection", self._collecting), ("minbw-exporter-slow", self._reporting))[
            : 1 if self.slow_reports is None else 2
        ]:
            t = threading.Thread(target=target, daemon=True, name=name)
            t.start()
            self._threads.append(t)

    def join(self, timeout: float | None = None) -> None:
        self._wake.set()
        for t in self._threads:
            t.join(timeout)
