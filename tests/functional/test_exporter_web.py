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
import time
import urllib.error
import urllib.request

import pytest
import yaml

from tests.conftest import MINBW, free_port

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
        assert scrape(url, trusted, "prometheus", "wrong")[0] == 401
        assert scrape(url, trusted, "someone", "s3cret")[0] == 401
        status, body = scrape(url, trusted, "prometheus", "s3cret")
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
    out = subprocess.run(MINBW + ["exporter", "--no-neutron", "--listen-port", str(free_port()),
                                  "--tls-cert-file", str(cert), "--tls-key-file", str(tmp_path / "missing.key")],
                         env=placement_server.env(), capture_output=True, text=True, timeout=180)
    assert out.returncode == 1, out.stderr
    assert "minbw: error: tls_server_config" in out.stderr and "missing.key" in out.stderr, out.stderr
