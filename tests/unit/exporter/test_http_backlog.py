"""The exporter's HTTP server holds 100 connections at once before it accepts them (issue 46: 100 concurrent
scrapers; socketserver's default backlog of 5 made the kernel drop the others' connections, which their clients
tried again seconds later)."""
from __future__ import annotations

import socket
import time
from wsgiref.simple_server import make_server

from minbw.exporter.http import server_class


def test_a_hundred_connections_wait_for_the_server_none_dropped():
    server = make_server("127.0.0.1", 0, lambda environ, start_response: [], server_class())
    clients = []
    try:
        # nothing accepts (the server is not serving): every connection must complete in the listening backlog
        for _ in range(100):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", server.server_port))
            clients.append(c)
        deadline, pending = time.monotonic() + 2.0, list(clients)
        while pending and time.monotonic() < deadline:
            pending = [c for c in pending if c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0
                       or not _connected(c)]
            time.sleep(0.05)
        assert not pending, f"{len(pending)} of 100 connections not established: the listening backlog is too short"
    finally:
        for c in clients:
            c.close()
        server.server_close()


def _connected(c: socket.socket) -> bool:
    try:
        c.getpeername()
        return True
    except OSError:
        return False
