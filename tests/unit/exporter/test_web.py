"""The exporter's endpoint configuration (:class:`minbw.exporter.http.Web`): TLS and basic authentication as
Prometheus' web configuration writes them, and the check of the credentials (bcrypt, a password that passed
remembered)."""
from __future__ import annotations

import base64

import pytest

from minbw.errors import InvalidInput
from minbw.exporter import http
from minbw.usecases.exporter import ExporterRequest

bcrypt = pytest.importorskip("bcrypt")
HASH = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_the_config_gives_tls_and_users():
    request = ExporterRequest.from_config({"tls_server_config": {"cert_file": "/c.pem", "key_file": "/k.pem"},
                                           "basic_auth_users": {"prometheus": HASH}})
    assert request.web == http.Web("/c.pem", "/k.pem", (("prometheus", HASH),)) and request.web.tls
    assert not ExporterRequest().web.tls and ExporterRequest().web.users == ()
    # the command line's files win over the config's
    cli = ExporterRequest.from_config({"tls_server_config": {"cert_file": "/c.pem", "key_file": "/k.pem"}},
                                      tls=("/other.pem", None))
    assert (cli.web.cert_file, cli.web.key_file) == ("/other.pem", "/k.pem")


@pytest.mark.parametrize("config, said", [
    ({"tls_server_config": {"cert_file": "/c.pem"}}, "give both cert_file and key_file"),
    ({"tls_server_config": {"cert_file": "/c", "key_file": "/k", "client_ca_file": "/ca"}}, "expected cert_file"),
    ({"basic_auth_users": {"prometheus": "s3cret"}}, "expected a bcrypt hash"),
    ({"basic_auth_users": ["prometheus"]}, "expected NAME: BCRYPT_HASH"),
    ({"ovn_sb_db": 6642}, "ovn_sb_db: expected a database"),
    ({"ovn_chassis": "one.json"}, "ovn_chassis: expected a list of file names"),
])
def test_a_bad_web_or_ovn_config_is_refused(config, said):
    with pytest.raises(InvalidInput, match=said):
        ExporterRequest.from_config(config)


def test_the_authenticator_checks_bcrypt_once_per_password():
    auth = http.Authenticator((("prometheus", HASH),))
    checked = []
    real = bcrypt.checkpw
    http_bcrypt = http._bcrypt()
    try:
        http_bcrypt.checkpw = lambda *a: checked.append(1) or real(*a)
        assert auth(basic("prometheus", "s3cret")) and auth(basic("prometheus", "s3cret")) and len(checked) == 1
        assert not auth(basic("prometheus", "wrong")) and not auth(basic("prometheus", "wrong")) and len(checked) == 3
        assert not auth(basic("nobody", "s3cret")) and len(checked) == 4  # an unknown user costs the same check
    finally:
        http_bcrypt.checkpw = real
    for header in ("", "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()):
        assert not auth(header), header
    assert http.Authenticator(())("")  # no users: no authentication


def test_htpasswd_s_2y_hashes_pass():
    y = "$2y$" + HASH[4:]  # what htpasswd -nBC 10 writes
    assert http.Authenticator((("p", y),))(basic("p", "s3cret"))


def test_the_app_answers_401_without_the_credentials():
    auth = http.Authenticator((("prometheus", HASH),))
    held = http._Held(None)
    serve = http.app(held, authenticate=auth)
    got = []
    body = serve({"PATH_INFO": "/metrics"}, lambda status, headers: got.append((status, dict(headers))))
    assert got[0][0] == "401 Unauthorized" and got[0][1]["WWW-Authenticate"].startswith('Basic realm="minbw exporter"')
    assert body == [b"Unauthorized\n"]
    serve({"PATH_INFO": "/metrics", "HTTP_AUTHORIZATION": basic("prometheus", "s3cret")},
          lambda status, headers: got.append((status, dict(headers))))
    assert got[1][0] == "200 OK"
