"""A fault-injecting HTTP proxy in front of the real Placement (test code only).

Everything a real Placement can be made to do is left to the real Placement behind it (its own
409 from a real concurrent writer: ``fault="call"`` runs the writer, then forwards). What a real
server cannot be made to produce on demand is stood in for here, and only that: a 409 at a chosen
request, a 503 from the front, a slow answer, a connection reset before the request is forwarded
and — the hard one — a reset *after* it was forwarded (Placement applied the write, the client never
saw the answer), and a ``kill -9`` of the client at a chosen request.

Rules are matched in order by method and a path regex; ``nth`` picks which matching occurrences
(1-based) fault, or ``probability`` (with the proxy's seeded random) does; ``times`` bounds how often.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit

FAULTS = ("409", "503", "500", "500_after", "slow", "slow_after", "reset_before", "reset_after", "call", "kill")
# 500: Placement's answer to a transaction that failed at commit (Galera's certification, MySQL error 1213):
# nothing written. 500_after: forwarded, then answered 500 (a database node lost after the commit, error 2013).
# Its detail as Placement's (webob's) 500 carries it: line breaks before the database's error.
DEADLOCK = ("The server has either erred or is incapable of performing\r\nthe requested operation.\r\n\r\n "
            "(pymysql.err.OperationalError) (1213, 'Deadlock found when trying to get lock; try restarting "
            "transaction') (injected by the fault proxy)")
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection", "te",
       "trailer", "upgrade"}


@dataclass
class Rule:
    method: str                   # "GET", "PUT", ... or "*"
    path: str                     # regex searched in the request's path (with its query)
    fault: str                    # one of FAULTS
    nth: tuple[int, ...] | None = (1,)   # which matching occurrences fault (1-based); None: every one
    probability: float | None = None     # instead of nth: fault with this probability
    times: int | None = None      # at most this many faults
    delay: float = 0.0            # slow / slow_after: seconds
    code: str = "placement.concurrent_update"   # 409: the code in Placement's error body
    call: Callable[[], None] | None = None      # call: run before forwarding (a real concurrent writer)
    pid: int | None = None        # kill: the process to SIGKILL
    forward: bool = False         # kill: forward the request to Placement after the kill
    seen: int = 0
    fired: int = 0

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method)) and re.search(self.path, path) is not None

    def fires(self, rng: random.Random) -> bool:
        self.seen += 1
        if self.times is not None and self.fired >= self.times:
            return False
        hit = (rng.random() < self.probability) if self.probability is not None else (
            self.nth is None or self.seen in self.nth)
        if hit:
            self.fired += 1
        return hit


@dataclass
class Seen:
    method: str
    path: str
    fault: str | None
    status: int | None            # what Placement answered (None: not forwarded)


class FaultProxy:
    """``FaultProxy(upstream_url)``: ``.url`` is the proxy; ``.rules`` the faults; ``.log`` every request."""

    def __init__(self, upstream: str, seed: int = 0):
        self.upstream = urlsplit(upstream)
        self.rules: list[Rule] = []
        self.log: list[Seen] = []
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "FaultProxy":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add(self, *rules: Rule) -> "FaultProxy":
        with self.lock:
            self.rules.extend(rules)
        return self

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.log.clear()

    def pick(self, method: str, path: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.matches(method, path) and rule.fires(self.rng):
                    return rule
        return None

    def writes(self) -> list[Seen]:
        """Requests Placement received that change something."""
        return [s for s in self.log if s.method != "GET" and s.status is not None]

    def forward(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, list, bytes]:
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()


def placement_error_body(status: int, title: str, detail: str, code: str) -> bytes:
    """An error in Placement's own shape (API-WG errors document, with the code of microversion 1.23)."""
    return json.dumps({"errors": [{"status": status, "title": title, "detail": detail, "code": code,
                                   "request_id": f"req-{uuid.uuid4()}"}]}).encode()


def _handler(proxy: FaultProxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _dispatch(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            rule = proxy.pick(self.command, self.path)
            fault = rule.fault if rule else None
            seen = Seen(self.command, self.path, fault, None)
            proxy.log.append(seen)
            if fault == "409":
                return self._answer(409, [("Content-Type", "application/json")], placement_error_body(
                    409, "Conflict", "resource provider generation conflict (injected by the fault proxy)", rule.code))
            if fault == "503":
                return self._answer(503, [("Content-Type", "text/plain")], b"503 Service Unavailable\n")
            if fault == "500":
                return self._answer(500, [("Content-Type", "application/json")], placement_error_body(
                    500, "Internal Server Error", DEADLOCK, "placement.undefined_code"))
            if fault == "reset_before":
                return self._reset()
            if fault == "kill":
                os.kill(rule.pid, signal.SIGKILL)
                if not rule.forward:
                    return self._reset()
            if fault == "slow":
                time.sleep(rule.delay)
            if fault == "call":
                rule.call()
            status, resp_headers, resp_body = proxy.forward(self.command, self.path, headers, body)
            seen.status = status
            if fault in ("reset_after", "kill"):
                return self._reset()
            if fault == "500_after":
                return self._answer(500, [("Content-Type", "application/json")], placement_error_body(
                    500, "Internal Server Error", "(pymysql.err.OperationalError) (2013, 'Lost connection to MySQL "
                    "server during query') (injected by the fault proxy, after forwarding)", "placement.undefined_code"))
            if fault == "slow_after":
                time.sleep(rule.delay)
            self._answer(status, [(k, v) for k, v in resp_headers if k.lower() not in HOP], resp_body)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _dispatch

        def _answer(self, status: int, headers: list, body: bytes) -> None:
            try:
                self.send_response_only(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client went away (it timed out): nothing to answer
                self.close_connection = True

        def _reset(self) -> None:
            """Close with a TCP RST (SO_LINGER 0), so the client sees 'connection reset', not a clean close."""
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.rfile.close()
                self.wfile.close()
                self.connection.close()
            except OSError:
                pass

        def handle_one_request(self):
            try:
                super().handle_one_request()
            except (OSError, ValueError):  # after a reset: the socket is closed
                self.close_connection = True

        def finish(self):
            try:
                super().finish()
            except (OSError, ValueError):
                pass
    return Handler
