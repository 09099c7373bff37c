"""``minbw exporter`` over TLS with basic authentication, in front of the session's embedded Placement: a
self-signed certificate made here with openssl, the bcrypt hash in the config (Prometheus' web configuration's
keys); a scrape without credentials or with a wrong password gets 401, with them the metrics; plain HTTP gets no
metrics from the TLS port."""
from __future__ import annotations

import base64
import http.client
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from tests.conftest import MINBW, free_port
from tests.support import cli_forks

bcrypt = pytest.importorskip("bcrypt")


@pytest.fixture
def certificate(tmp_path):
    if not shutil.which("openssl"):
        pytest.skip("no openssl")
    cert, key = tmp_path / "exporter.crt", tmp_path / "exporter.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def scrape(url: str, context, user=None, password=None):
    request = urllib.request.Request(url)
    if user is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)


def settled(ask, patience: float = 60.0):
    """``ask()``'s (status, headers or body) once the exporter has checked the credential: a 503 with Retry-After
    says the check could not be made now (its bcrypt threads run at lower priority: on a loaded machine they can
    wait longer than the exporter waits for them), the check goes on, its outcome is remembered, and asking again
    after Retry-After gets it, as Prometheus' next scrape does."""
    deadline = time.monotonic() + patience
    while True:
        status, extra = ask()
        if status != 503 or time.monotonic() > deadline:
            return status, extra
        assert isinstance(extra, dict) and extra.get("Retry-After"), extra
        time.sleep(float(extra["Retry-After"]))


def test_the_exporter_serves_tls_with_basic_authentication(placement_server, certificate, tmp_path):
    cert, key = certificate
    config = tmp_path / "exporter.yaml"
    config.write_text(yaml.safe_dump({
        "audit": False, "neutron": False, "cache": False,
        "tls_server_config": {"cert_file": str(cert), "key_file": str(key)},
        "basic_auth_users": {"prometheus": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()}}))
    port = free_port()
    log = tmp_path / "exporter.log"
    with open(log, "w") as out:
        exporter = subprocess.Popen(MINBW + ["exporter", "--config", str(config), "--listen-port", str(port)],
                                    env=placement_server.env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "serving on" not in log.read_text():
            assert exporter.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert f"serving on https://127.0.0.1:{port}/metrics" in log.read_text()
        assert "basic authentication for 1 user(s)" in log.read_text()
        url = f"https://127.0.0.1:{port}/metrics"
        trusted = ssl.create_default_context(cafile=str(cert))
        status, headers = scrape(url, trusted)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic realm="), headers
        assert settled(lambda: scrape(url, trusted, "prometheus", "wrong"))[0] == 401
        assert settled(lambda: scrape(url, trusted, "someone", "s3cret"))[0] == 401
        status, body = settled(lambda: scrape(url, trusted, "prometheus", "s3cret"))
        assert status == 200 and "minbw_report_success" in body, body
        # the certificate is checked: a client that does not trust it is refused by its own TLS
        with pytest.raises(urllib.error.URLError) as refused:
            scrape(url, ssl.create_default_context(), "prometheus", "s3cret")
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
        # a client that connects and says nothing holds up no scrape (each handshake in its connection's thread)
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            assert scrape(url, trusted, "prometheus", "s3cret")[0] == 200
        # plain HTTP on the TLS port: no metrics
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
            plain.request("GET", "/metrics")
            answer = plain.getresponse()
            assert b"minbw_" not in answer.read()
            raise ConnectionError("answered without TLS")
        assert scrape(url, trusted, "prometheus", "s3cret")[0] == 200  # and the server goes on
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
    assert exporter.returncode == 0, log.read_text()


def test_a_missing_key_file_is_said_at_start(placement_server, certificate, tmp_path):
    cert, _ = certificate
    out = cli_forks.run(MINBW + ["exporter", "--no-neutron", "--listen-port", str(free_port()),
                                  "--tls-cert-file", str(cert), "--tls-key-file", str(tmp_path / "missing.key")],
                         env=placement_server.env(), capture_output=True, text=True, timeout=180)
    assert out.returncode == 1, out.stderr
    assert "minbw: error: tls_server_config" in out.stderr and "missing.key" in out.stderr, out.stderr


def https(port: int, context, user=None, password=None, source: str = "127.0.0.1", timeout: float = 30.0):
    """One request on a new TLS connection from ``source``: (status, headers)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout, source_address=(source, 0))
    try:
        headers = {"Accept-Encoding": "gzip"}
        if user is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        conn.request("GET", "/metrics", headers=headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status, dict(answer.headers)
    finally:
        conn.close()


def test_authorised_scrapes_are_served_beside_hostile_clients(placement_server, certificate, tmp_path):
    """50 clients sending wrong passwords (a new one each time, real bcrypt hashes of cost 10) beside an authorised
    scraper, with silent connections held open and malformed requests: every authorised scrape is served, every
    wrong password refused (401, or 503 with Retry-After when it could not be checked now), a new user's first
    check from another address is made during the flood, the silent connections are closed after the exporter's
    idle timeout, and the exporter's log gets no line from any of it. Speed is bench/exporter_auth_flood.py's."""
    from minbw.exporter.http import IDLE_TIMEOUT

    cert, key = certificate
    config = tmp_path / "exporter.yaml"
    config.write_text(yaml.safe_dump({
        "audit": False, "neutron": False, "cache": False,
        "tls_server_config": {"cert_file": str(cert), "key_file": str(key)},
        "basic_auth_users": {name: bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
                             for name, password in (("prometheus", "s3cret"), ("second", "an0ther"))}}))
    port = free_port()
    log = tmp_path / "exporter.log"
    with open(log, "w") as out:
        exporter = subprocess.Popen(MINBW + ["exporter", "--config", str(config), "--listen-port", str(port)],
                                    env=placement_server.env(), stdout=out, stderr=subprocess.STDOUT)
    idle: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 120
        while "serving on" not in log.read_text():
            assert exporter.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        logged = log.read_text()
        trusted = ssl.create_default_context(cafile=str(cert))
        assert settled(lambda: https(port, trusted, "prometheus", "s3cret"))[0] == 200  # checked once, remembered
        # silent connections: TCP alone, and TLS with half a request
        opened = time.monotonic()
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(10)]
        for _ in range(5):
            half = trusted.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                                       server_hostname="127.0.0.1")
            half.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            idle.append(half)
        stop = threading.Event()
        flood: dict = {}
        scrapes: list = []

        def wrong(i):
            n = 0
            while not stop.is_set():
                n += 1
                status, headers = https(port, trusted, "prometheus", f"wrong-{i}-{n}")
                flood[status] = flood.get(status, 0) + 1
                assert status == 401 or (status == 503 and headers.get("Retry-After")), (status, headers)

        def authorised():
            while not stop.is_set():
                scrapes.append(https(port, trusted, "prometheus", "s3cret")[0])
                time.sleep(0.1)

        with ThreadPoolExecutor(52) as pool:
            running = [pool.submit(wrong, i) for i in range(50)] + [pool.submit(authorised)]
            try:
                time.sleep(1)
                # a user not checked yet, from another address, is checked during the flood (busy answers said so)
                second = []
                while len(second) < 20 and (not second or second[-1] != 200):
                    second.append(https(port, trusted, "second", "an0ther", source="127.0.0.2")[0])
                    if second[-1] == 503:
                        time.sleep(1)
                # garbage instead of TLS: the connection is closed, no answer
                with socket.create_connection(("127.0.0.1", port), timeout=30) as garbage:
                    garbage.sendall(b"\x00" * 64 + b"GET /metrics HTTP/1.1\r\n\r\n")
                    try:
                        assert b"minbw_" not in garbage.recv(65536)
                    except ConnectionResetError:
                        pass
                # a header of 1 MiB: refused (431; the exporter closes the connection after reading 64 KiB of the
                # line, so the rest of what is sent may meet a reset before the answer is read) ...
                with trusted.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                                         server_hostname="127.0.0.1") as big:
                    try:
                        big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
                        answer = big.recv(1024)
                    except OSError:  # ssl.SSLError, ConnectionResetError, BrokenPipeError
                        answer = b""
                    assert answer == b"" or answer.startswith(b"HTTP/1.0 431"), answer
                # ... and a header line of 70,000 bytes, all of it sent before the exporter answers: 431
                with trusted.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                                         server_hostname="127.0.0.1") as big:
                    big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
                    assert big.recv(1024).startswith(b"HTTP/1.0 431"), "no 431 for a huge header"
                time.sleep(2)
            finally:
                stop.set()
            for f in running:
                f.result(timeout=60)
        assert second[-1] == 200 and set(second) <= {200, 503}, second
        assert scrapes and set(scrapes) == {200}, scrapes
        # no wrong password served; on a machine whose CPUs are taken by others, every one may be answered busy (the
        # checks' threads run at lower priority): that checks are made during the flood is the second user's 200
        assert flood and set(flood) <= {401, 503}, flood
        # the silent connections are closed by the exporter after its idle timeout
        for s in idle:
            s.settimeout(max(1.0, opened + IDLE_TIMEOUT + 10 - time.monotonic()))
            try:
                assert s.recv(1024) == b"", "a silent connection got an answer"
            except (ConnectionResetError, ssl.SSLError):
                pass
        assert https(port, trusted, "prometheus", "s3cret")[0] == 200
        assert log.read_text() == logged, log.read_text()[len(logged):]  # nothing logged by the hostile clients
    finally:
        for s in idle:
            s.close()
        exporter.terminate()
        exporter.wait(timeout=30)
    assert exporter.returncode == 0, log.read_text()
