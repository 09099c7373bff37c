"""The exporter's HTTP server, in a process of its own: Prometheus' scrapes are answered there from the last
collection's rendered bodies, which the collecting process sends it after each publication. A scrape shares no
interpreter lock with the collection's threads, the slow reports, the decoding of Placement's answers or the
garbage collector, and waits for none of them: it costs what the HTTP stack costs on the machine
(docs/benchmarks.md, "The exporter at 1,000 hosts").

The two processes talk over one pipe (``multiprocessing``, spawned: the server process holds no copy of the
collector's memory): the collecting process sends :class:`Board` objects; the server process sends back the formats
it was asked for and does not have (``("want", openmetrics, gzip)``), which the collecting process then renders in
every publication (the first scrape of a format waits for that one rendering, as it did in one process). When the
pipe closes (the exporter stopped, or was killed), the server process exits. It ignores SIGINT and SIGTERM: the
collecting process stops it (a terminal's Ctrl-C and systemd's stop reach both).
"""
from __future__ import annotations

import gzip
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass, field

# How long the first scrape of a format waits for the collecting process to render it.
FIRST_RENDERING_TIMEOUT = 120.0
_EOF = "# EOF\n"


@dataclass(frozen=True)
class Board:
    """What the scrapes are served until the next publication: the collection's end (``time.time()``; None
    before the first), and its rendering per format (``True``: OpenMetrics without ``# EOF``; ``False``: the text
    format), plain and gzipped (the age and ``# EOF`` are added per scrape)."""
    finished: float | None = None
    bodies: dict = field(default_factory=dict)
    gzipped: dict = field(default_factory=dict)


class _Held:
    """The server process's last :class:`Board`, and the formats asked for."""

    def __init__(self, conn):
        self.conn = conn
        self.board = Board()
        self.changed = threading.Condition()
        self.asked: set[tuple[bool, bool]] = set()

    def put(self, board: Board) -> None:
        with self.changed:
            self.board = board
            self.changed.notify_all()

    def get(self, openmetrics: bool, zipped: bool) -> Board | None:
        """The board holding ``openmetrics``' rendering (gzipped if ``zipped``), asking the collecting process
        for it the first time; None if it did not come within :data:`FIRST_RENDERING_TIMEOUT`."""
        store = "gzipped" if zipped else "bodies"
        with self.changed:
            board = self.board
            if board.finished is None or openmetrics in getattr(board, store):
                return board
            if (openmetrics, zipped) not in self.asked:
                self.asked.add((openmetrics, zipped))
                self.conn.send(("want", openmetrics, zipped))
            self.changed.wait_for(lambda: openmetrics in getattr(self.board, store),
                                  timeout=FIRST_RENDERING_TIMEOUT)
            board = self.board
            return board if openmetrics in getattr(board, store) else None


def app(held: _Held, clock=time.time):
    """The WSGI application serving ``/metrics``: the format Prometheus asks for (its Accept header, as
    prometheus_client chooses), gzip when accepted, the age of the collection served added per scrape. It reads
    nothing: it serves the last board."""
    from prometheus_client.exposition import choose_encoder
    from minbw.exporter.exposition import age

    def serve(environ, start_response):
        if environ.get("PATH_INFO", "/") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        _, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        openmetrics = content_type.startswith("application/openmetrics-text")
        zipped = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
        board = held.get(openmetrics, zipped)
        if board is None:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"the first rendering of this format did not come in time; scrape again\n"]
        eof = _EOF if openmetrics else ""
        if board.finished is None:
            head, tail = b"", eof
        else:
            head = (board.gzipped if zipped else board.bodies)[openmetrics]
            tail = age(clock() - board.finished, openmetrics) + eof
        headers = [("Content-Type", content_type)]
        if zipped:
            headers.append(("Content-Encoding", "gzip"))
            body = head + gzip.compress(tail.encode(), compresslevel=1)  # gzip members concatenate
        else:
            body = head + tail.encode()
        start_response("200 OK", headers)
        return [body]
    return serve


def _serve(conn, address: str, port: int) -> None:
    """The server process: bind, say the port (or the error), serve until the pipe closes."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    from wsgiref.simple_server import WSGIRequestHandler, make_server
    from prometheus_client.exposition import ThreadingWSGIServer

    class Quiet(WSGIRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    held = _Held(conn)
    try:
        server = make_server(address, port, app(held), ThreadingWSGIServer, handler_class=Quiet)
    except OSError as e:
        conn.send(("error", e.errno, e.strerror or str(e)))
        return
    conn.send(("ready", server.server_port, os.getpid()))
    threading.Thread(target=server.serve_forever, daemon=True, name="minbw-exporter-http").start()
    try:
        while True:
            message = conn.recv()
            if message is None:
                break
            held.put(message)
    except (EOFError, OSError):
        pass
    finally:
        server.shutdown()
        server.server_close()


class ServerProcess:
    """The server process seen from the collecting one: started bound (``server_port``, ``pid``), fed each
    publication of ``served`` (:class:`minbw.exporter.loops.Served`), stopped by :meth:`shutdown` and
    :meth:`server_close` (as a ``socketserver`` server is)."""

    def __init__(self, served, address: str, port: int):
        self.served = served
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, address, port), daemon=True,
                                        name="minbw-exporter-http")
        self._process.start()
        child.close()
        self._send_lock = threading.Lock()
        try:
            answer = self._conn.recv()
        except EOFError:
            self._process.join(5)
            raise OSError(f"the exporter's HTTP server process ended before it listened on {address}:{port} "
                          f"(exit code {self._process.exitcode})") from None
        if answer[0] == "error":
            self._process.join(5)
            raise OSError(answer[1], f"{answer[2]}: {address}:{port}")
        _, self.server_port, self.pid = answer
        served.board(True, True)  # OpenMetrics gzipped, what Prometheus asks for: ready for its first scrape
        self._closed = threading.Event()
        self._listener = threading.Thread(target=self._listen, daemon=True, name="minbw-exporter-http-wants")
        self._listener.start()
        served.subscribe(self.push)

    def push(self, board: Board) -> None:
        """Send ``board`` to the server process (a publication)."""
        with self._send_lock:
            if not self._closed.is_set():
                try:
                    self._conn.send(board)
                except (BrokenPipeError, EOFError, OSError):
                    self._closed.set()

    def _listen(self) -> None:
        """The server process's requests for a format: rendered by ``served`` and sent with the last board."""
        while not self._closed.is_set():
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                return
            if message and message[0] == "want":
                _, openmetrics, zipped = message
                self.push(self.served.board(openmetrics, zipped))

    def shutdown(self) -> None:
        with self._send_lock:
            if not self._closed.is_set():
                try:
                    self._conn.send(None)
                except (BrokenPipeError, EOFError, OSError):
                    pass
                self._closed.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)

    def server_close(self) -> None:
        self._conn.close()


def start_server(served, address: str, port: int) -> ServerProcess:
    """Serve ``served``'s publications on ``address:port`` from a process of its own (:class:`ServerProcess`)."""
    return ServerProcess(served, address, port)
