"""Bad input at volume, through the command: generated `minbw ...` argument sets run in-process
(``main(argv)``) against the embedded real Placement. No traceback ever reaches the user, every invalid
one is exit 1 (`minbw: error: ...`) or 2 (argparse usage), and Placement's state is the same after it
(0 writes: no request other than GET is sent, counted at requests' transport)."""
from __future__ import annotations

import contextlib
import io
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import requests
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.cli.shell import main
from tests.support import cli_forks

VOLUME = settings(max_examples=300, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
OVS = "[DEFAULT]\nhost = devstack0\n[ovs]\nbridge_mappings = physnet0:br-test\n" \
      "resource_provider_bandwidths = br-test:1000:1000\n"


class Sent:
    """Every HTTP request really sent (requests' transport), by method; ``calls``: each as ``METHOD :PORT PATH``,
    uuids in the path as ``<id>``."""

    def __init__(self):
        self.methods: list[str] = []
        self.calls: list[str] = []
        self._send = requests.Session.send

    def __enter__(self):
        sent, calls, send = self.methods, self.calls, self._send

        def counting(session, request, **kwargs):
            sent.append(request.method)
            url = urllib.parse.urlsplit(request.url)
            path = "/".join("<id>" if len(p) == 36 and p.count("-") == 4 else p for p in url.path.split("/"))
            calls.append(f"{request.method} :{url.port} {path}")
            return send(session, request, **kwargs)
        requests.Session.send = counting
        return self

    def __exit__(self, *exc):
        requests.Session.send = self._send

    @property
    def writes(self) -> int:
        return sum(1 for m in self.methods if m not in ("GET", "HEAD"))


def run_cli(argv: list[str]) -> tuple[int, str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    with Sent() as sent, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse: usage errors (2), --help (0)
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue(), sent.writes


@pytest.fixture(scope="module")
def seeded(placement_server, tmp_path_factory):
    """An OVS agent synced once; every generated command runs against that state."""
    d = tmp_path_factory.mktemp("badcli")
    (d / "ovs.ini").write_text(OVS)
    (d / "bad.ini").write_text(OVS.replace("br-test:1000:1000", "br-test:-1:x"))
    (d / "garbage.ini").write_text("no section here\n")
    (d / "port.json").write_text('{"id": "%s", "resource_request": null}' % PORT)
    (d / "notjson.json").write_text("{not json")
    old = {k: os.environ.get(k) for k in ("OS_CLIENT_CONFIG_FILE", "OS_CLOUD")}
    os.environ.update(OS_CLIENT_CONFIG_FILE=str(placement_server.clouds_yaml), OS_CLOUD="minbw-local")
    code, _, err, _ = run_cli(["provider", "sync", "--agent-config", d / "ovs.ini", "--create-root",
                               "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=4096",
                               "--root-inventory", "DISK_GB=10"])
    assert code == 0, err
    yield d
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


bad_uuid = st.sampled_from(["x", "", "1234", "not-a-uuid", "00000000-0000-0000-0000-00000000000Z", "../etc"])
bad_resources = st.sampled_from(["VCPU", "VCPU=", "VCPU=x", "VCPU=-1", "=1", "vcpu=1", "VCPU=1,,", "VCPU=1=2",
                                 "VCPU=99999999999999999999", "NOPE_CLASS=1", "VCPU=1.5", "VCPU=²", "VCPU:1"])
bad_rules = st.sampled_from(["min_bw", "min_bw:egress", "min_bw:up:10", "min_bw:egress:-1", "min_bw:egress:x",
                             "min_bw:egress:²", "max_bw:egress:1", "min_pps:any:1:", "min_bw:egress:1:2:3",
                             "min_pps:egress:1,min_pps:any:1", "min_bw:egress:99999999999999"])
bad_ints = st.sampled_from(["x", "-1", "1.5", "", "0x1"])
bad_traits = st.sampled_from(["lower_case", "CUSTOM_", "HW CPU", "!", ",,", "CUSTOM_é"])
bad_formats = st.sampled_from([["-f", "xml"], ["-c", "nosuch"], ["--json", "-c", "nope"], ["--nosuch"], []])


@st.composite
def bad_argvs(draw, d):
    """One valid command with one thing wrong (or a few)."""
    case = draw(st.sampled_from(["sync", "plan", "request", "candidates", "claim", "free", "usage", "show",
                                 "move", "capacity", "audit", "serve", "noservice"]))
    fmt = draw(bad_formats)
    if case in ("sync", "plan"):
        ini = draw(st.sampled_from([d / "bad.ini", d / "garbage.ini", d / "missing.ini", d]))
        extra = draw(st.sampled_from([[], ["--host", ""], ["--create-root", "--root-inventory", "VCPU=x"],
                                      ["--root-inventory", "VCPU"], ["--cache", d]]))
        return ["provider", "sync", *(["--dry-run"] if case == "plan" else []), "--agent-config", ini, *extra, *fmt]
    if case == "request":
        port = draw(st.one_of(bad_uuid, st.just(PORT)))
        spec, extra = draw(st.sampled_from([("", []), (",vnic=sriov", []), ("", ["--agent-type", "linuxbridge"]),
                                            (",segment=:physnet0", []), (",segment=", []), (",physnet=", [])]))
        return ["request", "show", "--port-id", port, "--qos-port", draw(bad_rules) + spec, *extra, *fmt]
    if case in ("candidates", "claim", "capacity"):
        extra = draw(st.sampled_from([["--resource", draw(bad_resources)], ["--required", draw(bad_traits)],
                                      ["--limit", draw(bad_ints)], ["--in-tree", draw(bad_uuid)], ["--resource", "VCPU=1", "--in-tree", PORT],
                                      ["--port-request", d / "notjson.json"], ["--port-request", d / "nofile"],
                                      ["--root-required", draw(bad_traits)], ["--group-policy", "all"]]))
        if case == "claim":
            return ["allocation", "create", "--consumer", draw(st.one_of(bad_uuid, st.uuids().map(str))),
                    "--project-id", "p", "--user-id", "u", *extra, *fmt]
        if case == "capacity":
            return ["capacity", "show", *extra, *fmt]
        return ["candidate", "list", *extra, *fmt]
    if case == "free":
        return ["allocation", "delete", "--consumer", draw(bad_uuid), *fmt]
    if case == "usage":
        return ["usage", "show", "--provider", draw(bad_uuid), *fmt]
    if case == "show":
        return ["--os-cloud", draw(st.sampled_from(["nosuch", "minbw-local ", "Minbw-Local"])), "provider", "list", *fmt]
    if case == "move":
        return ["allocation", "migrate", "--consumer", draw(bad_uuid),
                "--target-host", draw(st.sampled_from(["", "nohost"])), "--resource", draw(bad_resources), *fmt]
    if case == "noservice":  # the embedded Placement is a cloud without Nova and Neutron: said in one line
        return draw(st.sampled_from([["server", "heal", "--dry-run"], ["audit"],
                                     ["drift", "show", "--agent-config", d / "ovs.ini"],
                                     ["segment", "list"],
                                     ["separation", "set", "--hosts", "devstack0", "--flavor-plain", "m1", "--dry-run"],
                                     ["port", "schedule", "--port", "p", "--dry-run"],
                                     ["candidate", "list", "--port", "p"]]))
    if case == "audit":
        return draw(st.sampled_from([["audit", "--nosuch"], ["audit", "-f", "xml"], ["--os-cloud", "nosuch", "audit", "--fix"]]))
    return ["placement", "serve", "--state-dir", d, "--port", draw(bad_ints), *fmt]


RESULTS: dict[int, int] = {}


@VOLUME
@given(data=st.data())
def test_generated_bad_command_lines_are_one_clear_line_and_write_nothing(seeded, data):
    argv = data.draw(bad_argvs(seeded))
    code, out, err, writes = run_cli(argv)
    RESULTS[code] = RESULTS.get(code, 0) + 1
    assert "Traceback" not in out + err, (argv, err)
    assert writes == 0, (argv, out, err)
    assert code in (1, 2, 4), (argv, code, out, err)  # 4: a valid request no host can serve
    if code == 1:
        assert err.startswith("minbw: error: ") and len(err.strip().splitlines()) == 1, (argv, err)
    if code == 2:
        assert "error:" in err, (argv, err)


def test_generated_command_lines_covered_both_error_kinds():
    assert RESULTS.get(1, 0) > 30 and RESULTS.get(2, 0) > 100, RESULTS


# ---------------------------------------------------------------- connection errors

def _one_line(code, err, *texts):
    assert code == 1, err
    assert "Traceback" not in err and err.startswith("minbw: error: ") and len(err.strip().splitlines()) == 1, err
    for text in texts:
        assert text in err, err


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """An https server with a self-signed certificate nobody trusts."""
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "key.pem",
                    "-out", d / "cert.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(d / "cert.pem", d / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}", d / "cert.pem"
    server.shutdown()


@pytest.fixture
def clouds(tmp_path, placement_server, tls_server, monkeypatch):
    url, _ = tls_server
    path = tmp_path / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {
        "tls": {"auth_type": "admin_token", "auth": {"endpoint": url, "token": "admin"},
                "placement_endpoint_override": url},
        # password auth at a URL that is no Keystone (the embedded Placement)
        "notkeystone": {"auth": {"auth_url": placement_server.url, "username": "u", "password": "p",
                                 "project_name": "p", "user_domain_name": "Default",
                                 "project_domain_name": "Default"}},
    }}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    monkeypatch.delenv("OS_CLOUD", raising=False)
    return path


def test_untrusted_certificate_says_so_and_how_to_fix(clouds, tls_server):
    url, _ = tls_server
    code, _, err, _ = run_cli(["--os-cloud", "tls", "usage", "show"])
    _one_line(code, err, "certificate could not be verified", url, "--os-cacert", "--insecure")


def test_tls_is_verified_by_default_and_cacert_or_insecure_turn_the_failure_off(clouds, tls_server):
    """Verification stays on unless the user turns it off: the same command passes TLS with the CA or
    --insecure (and then fails on what the fake server answers, not on its certificate)."""
    url, cert = tls_server
    for extra in (["--os-cacert", str(cert)], ["--insecure"]):
        code, _, err, _ = run_cli(["--os-cloud", "tls", *extra, "usage", "show"])
        assert "certificate could not be verified" not in err and "Traceback" not in err, (extra, err)
    import openstack.config
    from minbw.cli import connection
    from minbw.cli.shell import MinbwShell
    shell = MinbwShell()
    shell.options, _ = shell.parser.parse_known_args(["--os-cloud", "tls"])
    shell.cloud_config = openstack.config.OpenStackConfig()
    assert connection.connect(shell).session.verify is True


def test_password_auth_at_a_url_that_is_no_keystone_fails_fast(clouds, placement_server):
    start = time.monotonic()
    code, _, err, _ = run_cli(["--os-cloud", "notkeystone", "usage", "show"])
    took = time.monotonic() - start
    _one_line(code, err, "notkeystone", placement_server.url, "Fix:")
    assert took < 60, took


def test_connection_errors_as_a_subprocess_have_their_exit_code(clouds):
    proc = cli_forks.run([sys.executable, "-m", "minbw.cli", "--os-cloud", "tls", "usage", "show"], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())
    _one_line(proc.returncode, proc.stderr, "certificate could not be verified")
