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

The endpoint can serve TLS and ask for basic authentication (:class:`Web`), configured as Prometheus' own
exporters are (the exporter-toolkit's web configuration: ``tls_server_config`` with ``cert_file``/``key_file``,
``basic_auth_users`` with bcrypt hashes): the hashes alone are stored, a password checked once is remembered (by
a salted digest, in the server process) so that a scrape does not pay bcrypt's cost each time.
"""

from __future__ import annotations

import base64
import binascii
import enum
import gzip
import hashlib
import multiprocessing
import os
import signal
import ssl
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from minbw.errors import InvalidInput, MissingDependency

# How long the first scrape of a format waits for the collecting process to render it.
FIRST_RENDERING_TIMEOUT = 120.0
_EOF = "# EOF\n"


REALM = "minbw exporter"
# Seconds a client refused busy (503) is told to wait (Retry-After).
RETRY_AFTER = 1
# Seconds a connection may stay silent (its TLS handshake, its request, a read of the answer) before it is closed:
# an idle or half-open connection holds its thread that long at most. Prometheus sends its request at once.
IDLE_TIMEOUT = 10.0
# Connections the listening socket holds until the server accepts them (the kernel caps it at net.core.somaxconn).
# socketserver's default is 5: 100 scrapers at once overflowed it, and a connection the kernel drops is tried again
# by the client 1 s later, then 3 s, 7 s... (measured: scrapes that timed out after 60 s, bench exporter_scale).
BACKLOG = 512


def server_class():
    """prometheus_client's threading WSGI server (a thread per scrape) with a listening backlog of
    :data:`BACKLOG`, silent about a client's broken connection (socketserver prints each one's traceback: a log
    line per hostile connection, garbage instead of TLS or a silent one timed out, would let strangers fill the
    exporter's log)."""
    from prometheus_client.exposition import ThreadingWSGIServer

    class Server(ThreadingWSGIServer):
        request_queue_size = BACKLOG

        def handle_error(self, request, client_address):
            if isinstance(sys.exc_info()[1], OSError):  # ssl.SSLError, TimeoutError, ConnectionResetError...
                return
            super().handle_error(request, client_address)

    return Server


@dataclass(frozen=True)
class Web:
    """The endpoint's TLS (``cert_file``, ``key_file``: PEM files; the key readable by the exporter's user) and basic
    authentication (``users``: (name, bcrypt hash) pairs; none: no authentication)."""

    cert_file: str | None = None
    key_file: str | None = None
    users: tuple[tuple[str, str], ...] = ()

    @property
    def tls(self) -> bool:
        return bool(self.cert_file)

    @classmethod
    def of(cls, tls_server_config, basic_auth_users) -> Web:
        """From the exporter's config: ``tls_server_config: {cert_file, key_file}`` and ``basic_auth_users: {NAME:
        BCRYPT_HASH}`` (Prometheus' web configuration's keys; ``htpasswd -nBC 10 NAME`` makes a hash)."""
        tls = tls_server_config or {}
        if not isinstance(tls, Mapping) or set(tls) - {"cert_file", "key_file"}:
            raise InvalidInput(
                f"the exporter's config: tls_server_config: expected cert_file and key_file (PEM files), got {tls!r}"
            )
        if bool(tls.get("cert_file")) != bool(tls.get("key_file")):
            raise InvalidInput("the exporter's config: tls_server_config: give both cert_file and key_file")
        users = basic_auth_users or {}
        if not isinstance(users, Mapping):
            raise InvalidInput(
                "the exporter's config: basic_auth_users: expected NAME: BCRYPT_HASH items (htpasswd "
                "-nBC 10 NAME makes one)"
            )
        for name, hashed in users.items():
            if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
                raise InvalidInput(
                    f"the exporter's config: basic_auth_users: {name}: expected a bcrypt hash "
                    "($2b$..., htpasswd -nBC 10 NAME makes one), never the password itself"
                )
        if users:
            _bcrypt()
        return cls(
            tls.get("cert_file") or None,
            tls.get("key_file") or None,
            tuple(sorted((str(n), h) for n, h in users.items())),
        )

    def context(self) -> ssl.SSLContext | None:
        """The server's TLS context (TLS 1.2 at least), None without TLS."""
        if not self.tls or self.cert_file is None:  # tls: a cert_file
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _bcrypt():
    try:
        import bcrypt
    except ImportError:
        raise MissingDependency(
            "basic_auth_users: the exporter checks the bcrypt hashes with the bcrypt package, "
            "which is not installed. Fix: pip install bcrypt"
        ) from None
    return bcrypt


class Verdict(enum.Enum):
    """What :class:`Authenticator` says of a request's credentials: ``PASS`` (serve it), ``FAIL`` (401) or ``BUSY``
    (not checked: no bcrypt check could be made for it now; 503 with ``Retry-After``)."""

    PASS = "pass"
    FAIL = "fail"
    BUSY = "busy"


def check_slots() -> int:
    """How many bcrypt checks run at once: the CPUs this process may use, less one (at least one) left for serving
    scrapes."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)


# An unknown credential (not remembered) waits this long at most for a bcrypt check, then gets 503 (busy).
CHECK_WAIT = 2.0
# Checks waiting or running at once, all clients together; one client address has at most one: beyond, busy at once.
PENDING = 16
# Wrong credentials remembered (by their salted digest: 32 bytes and a dict entry each, about 0.1 KiB), the oldest
# forgotten first; right ones remembered are at most REMEMBERED (only a password that passed bcrypt gets there).
FAILED = 4096
REMEMBERED = 64
# A refusal (401, 503) is answered this late, at most DELAYED at once (then at once): see Tarpit.
REFUSAL_DELAY = 1.0
DELAYED = 256
# Niceness added to the threads that run bcrypt: a scrape's thread is served first when the CPUs are short.
CHECK_NICENESS = 10


class _Memory:
    """A bounded set of digests, the least recently seen forgotten first."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[bytes, None] = OrderedDict()

    def __contains__(self, key: bytes) -> bool:
        if key in self._items:
            self._items.move_to_end(key)
            return True
        return False

    def add(self, key: bytes) -> None:
        self._items[key] = None
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _lower_priority() -> None:
    """Run this thread (a bcrypt worker) at :data:`CHECK_NICENESS` more (Linux: niceness is per thread)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + CHECK_NICENESS))
    except (AttributeError, OSError):  # not Linux: the checks run at the process's priority
        pass


class Authenticator:
    """Basic authentication against bcrypt hashes, bounded so that strangers cannot starve the scrapes.

    A password that passed is remembered by a salted SHA-256 (of this process's random salt), so only the first
    scrape with it costs a bcrypt check and later ones never wait on one; a wrong one is remembered the same way (at
    most :data:`FAILED`, the oldest forgotten), so sending it again costs nothing either (the hashes do not change
    while the process runs: a wrong password stays wrong). Any other credential costs a bcrypt check (an unknown user
    against a dummy hash, in the same time), run by one of ``slots`` worker threads at lower priority (at most
    ``slots`` at once: :func:`check_slots`); at most :data:`PENDING` checks wait or run at once, one per client
    address, and a check waits :data:`CHECK_WAIT` s at most: beyond, the request is answered busy without a check."""

    def __init__(
        self,
        users: tuple[tuple[str, str], ...],
        slots: int | None = None,
        pending: int = PENDING,
        wait: float = CHECK_WAIT,
        failed: int = FAILED,
    ):
        self.users = dict(users)
        self.slots = slots or check_slots()
        self.pending = pending
        self.wait = wait
        self._salt = os.urandom(16)
        self._passed = _Memory(REMEMBERED)
        self._failed = _Memory(failed)
        self._clients: dict[str, int] = {}  # address -> checks waiting or running (at most one each)
        self._lock = threading.Lock()
        self._dummy = _bcrypt().hashpw(b"-", _bcrypt().gensalt(rounds=10)) if users else b""
        # its threads start at the first checks, up to ``slots``
        self._workers = ThreadPoolExecutor(
            self.slots, thread_name_prefix="minbw-exporter-bcrypt", initializer=_lower_priority
        )

    def __call__(self, header: str, address: str = "") -> Verdict:
        if not self.users:
            return Verdict.PASS
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return Verdict.FAIL
        try:
            name, sep, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return Verdict.FAIL
        if not sep:
            return Verdict.FAIL
        hashed = self.users.get(name)
        key = hashlib.sha256(self._salt + f"{name}\0{password}\0{hashed}".encode()).digest()
        with self._lock:
            # a dictionary's look-up, not a constant-time comparison: the digest is of a secret salt, so how long a
            # look-up takes tells a client nothing it can steer
            if key in self._passed:
                return Verdict.PASS
            if key in self._failed:
                return Verdict.FAIL
            if address in self._clients or len(self._clients) >= self.pending:
                return Verdict.BUSY
            self._clients[address] = 1
        try:
            future = self._workers.submit(
                _bcrypt().checkpw, password.encode(), hashed.encode() if hashed else self._dummy
            )
        except RuntimeError:  # the interpreter is exiting: the workers take no more
            self._done(address)
            return Verdict.BUSY
        future.add_done_callback(lambda f: self._done(address, key, hashed is not None, f))
        try:
            ok = future.result(timeout=self.wait)
        except TimeoutError:  # concurrent.futures' is the builtin since Python 3.11
            future.cancel()  # not started yet: never runs
            return Verdict.BUSY
        return Verdict.PASS if ok and hashed is not None else Verdict.FAIL

    def _done(self, address: str, key: bytes = b"", known: bool = False, future: Future | None = None) -> None:
        """A check ended (or was cancelled): its client may ask again, and its outcome is remembered."""
        with self._lock:
            self._clients.pop(address, None)
            if future is None or future.cancelled() or future.exception() is not None:
                return
            (self._passed if future.result() and known else self._failed).add(key)


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
            self.changed.wait_for(lambda: openmetrics in getattr(self.board, store), timeout=FIRST_RENDERING_TIMEOUT)
            board = self.board
            return board if openmetrics in getattr(board, store) else None


class Tarpit:
    """Refusals answered ``seconds`` late (the connection's thread sleeps: no CPU), at most ``most`` at once (the
    others at once): a client that sends its next wrong password when answered is slowed to one a ``seconds``, and
    so is the TLS handshake and the request it makes the server pay each time."""

    def __init__(self, seconds: float = REFUSAL_DELAY, most: int = DELAYED):
        self.seconds = seconds
        self._slots = threading.BoundedSemaphore(most)

    def __call__(self) -> None:
        if self.seconds > 0 and self._slots.acquire(blocking=False):
            try:
                time.sleep(self.seconds)
            finally:
                self._slots.release()


def app(held: _Held, clock=time.time, authenticate=None, tarpit=None):
    """The WSGI application serving ``/metrics``: the format Prometheus asks for (its Accept header, as
    prometheus_client chooses), gzip when accepted, the age of the collection served added per scrape. It reads
    nothing: it serves the last board. ``authenticate``: an :class:`Authenticator` (a 401 without the
    credentials, a 503 with ``Retry-After`` when they could not be checked now), ``tarpit``: a :class:`Tarpit`
    each refusal goes through."""
    from prometheus_client.exposition import choose_encoder
    from minbw.exporter.exposition import age

    def serve(environ, start_response):
        verdict = (
            Verdict.PASS
            if authenticate is None
            else authenticate(environ.get("HTTP_AUTHORIZATION", ""), environ.get("REMOTE_ADDR", ""))
        )
        if verdict is not Verdict.PASS and tarpit is not None:
            tarpit()
        if verdict is Verdict.FAIL:
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"')],
            )
            return [b"Unauthorized\n"]
        if verdict is Verdict.BUSY:
            start_response(
                "503 Service Unavailable", [("Content-Type", "text/plain"), ("Retry-After", str(RETRY_AFTER))]
            )
            return [b"the credentials could not be checked now (too many unknown ones at once); try again\n"]
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
            end = gzip.compress(tail.encode(), compresslevel=1)  # gzip members concatenate
        else:
            end = tail.encode()
        # the board's body and this scrape's end sent one after the other: a scrape copies nothing of the body (at
        # 10,000 hosts 2.6 MiB gzipped, one copy per scrape in flight when they were joined)
        headers.append(("Content-Length", str(len(head) + len(end))))
        start_response("200 OK", headers)
        return [head, end] if head else [end]

    return serve


def _serve(conn, address: str, port: int, web: Web = Web()) -> None:
    """The server process: bind (with TLS when ``web`` has it), say the port (or the error), serve until the pipe
    closes."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        timeout = IDLE_TIMEOUT  # socketserver sets it on the connection: every read and write, the handshake's too
        # a scrape's answer is written in two pieces (the body, then its end: :func:`app`): the end is sent at once,
        # not held back until the body's last segment is acknowledged (Nagle's algorithm)
        disable_nagle_algorithm = True

        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    held = _Held(conn)
    try:
        context = web.context()
    except (OSError, ssl.SSLError) as e:
        conn.send(
            ("error", None, f"tls_server_config {web.cert_file}, {web.key_file}: {getattr(e, 'strerror', None) or e}")
        )
        return
    try:
        server = make_server(
            address,
            port,
            app(held, authenticate=Authenticator(web.users), tarpit=Tarpit()) if web.users else app(held),
            server_class(),
            handler_class=Quiet,
        )
    except OSError as e:
        conn.send(("error", e.errno, e.strerror or str(e)))
        return
    if context is not None:
        # the listening socket wrapped, as prometheus_client serves TLS, but each connection's handshake made in its
        # own thread (at its first read): a client that connects and says nothing holds up no other scrape
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
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

    def __init__(self, served, address: str, port: int, web: Web = Web()):
        self.served = served
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, address, port, web), daemon=True, name="minbw-exporter-http"
        )
        self._process.start()
        child.close()
        self._send_lock = threading.Lock()
        try:
            answer = self._conn.recv()
        except EOFError:
            self._process.join(5)
            raise OSError(
                f"the exporter's HTTP server process ended before it listened on {address}:{port} "
                f"(exit code {self._process.exitcode})"
            ) from None
        if answer[0] == "error":
            self._process.join(5)
            if answer[1] is None:  # the TLS certificate or key
                raise InvalidInput(answer[2])
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


def start_server(served, address: str, port: int, web: Web = Web()) -> ServerProcess:
    """Serve ``served``'s publications on ``address:port`` from a process of its own (:class:`ServerProcess`),
    with ``web``'s TLS and basic authentication."""
    return ServerProcess(served, address, port, web)
