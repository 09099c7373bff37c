"""Every form of a port's request that a command's help names (``--port-request [PORT_ID=]FILE``: "a port's
resource_request JSON (either format) or the port as Neutron shows it (openstack port show -f json, or minbw
request show's output)"), given as a user gives it, on the embedded Placement: the query ``minbw candidate list``
sends is Nova 34's own for a server with that port (tests/support/oracle/nova_scheduler.py: Nova reads the
extended format with ``RequestGroup.from_extended_port_request``, naming the groups after their own ids, and the
legacy one with ``from_port_request``, naming its group after the port), and ``allocation create`` claims it.
The one form Nova cannot read, the legacy format without the port's id, is refused saying how to fix it.

Issue 41: the extended format without a port id was refused ("a port needs its id") since the Nova-parity change.
Then ``--any-traits``' request (``minbw request show --any-traits``): kept for minbw's own claim, on the physnet
with room, and the answer says that Nova never sees it."""
from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from minbw.placement.query import query_string
from tests.conftest import MINBW
from tests.support.oracle.nova_client import start
from tests.support import cli_forks

PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
OVS = """[DEFAULT]
host = fmt0
[ovs]
bridge_mappings = physnet0:br-x,physnet1:br-y
resource_provider_bandwidths = br-x:1500:1500,br-y:1500:1500
"""
SERVER = ["--resource", "VCPU=1"]
FLAVOR = {"vcpus": 0, "ram": 0, "disk": 0, "extra_specs": {"resources:VCPU": "1"}}  # Flavor.given(VCPU=1)


@pytest.fixture(scope="module")
def nova():
    oracle = start()
    yield oracle
    oracle.close()


def _minbw(env, *args) -> subprocess.CompletedProcess:
    return cli_forks.run(MINBW + list(args), env=env, capture_output=True, text=True, timeout=120)


def _shown(env, *rules) -> dict:
    """``minbw request show``'s output for a port of ``rules`` (the user's file)."""
    out = _minbw(env, "request", "show", "--port-id", PORT, "--qos-port", "min_bw:egress:1000", *rules)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _forms(env, tmp_path) -> dict[str, tuple[str, dict]]:
    """name → (the --port-request value, the port as Nova reads it: id and resource_request)."""
    extended, legacy = _shown(env)["resource_request"], _shown(env, "--legacy")["resource_request"]
    assert "request_groups" in extended and "request_groups" not in legacy

    def file(name, value):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(value))
        return str(path)

    # `openstack port show -f json` of a QoS port: the port's fields by openstackclient's names
    port_show = {"admin_state_up": True, "binding_vnic_type": "normal", "id": PORT, "name": "p0",
                 "network_id": str(uuid.uuid4()), "qos_policy_id": str(uuid.uuid4()), "status": "DOWN"}
    return {
        "extended FILE": (file("ext", extended), {"id": None, "resource_request": extended}),
        "extended PORT_ID=FILE": (f"{PORT}={file('ext2', extended)}", {"id": PORT, "resource_request": extended}),
        "legacy PORT_ID=FILE": (f"{PORT}={file('leg', legacy)}", {"id": PORT, "resource_request": legacy}),
        "port show -f json (extended)": (file("ps", {**port_show, "resource_request": extended}),
                                         {"id": PORT, "resource_request": extended}),
        "port show -f json (legacy)": (file("psl", {**port_show, "resource_request": legacy}),
                                       {"id": PORT, "resource_request": legacy}),
        "request show's output": (file("rs", _shown(env)), {"id": PORT, "resource_request": extended}),
        "request show --legacy's output": (file("rsl", _shown(env, "--legacy")),
                                           {"id": PORT, "resource_request": legacy}),
    }


def _setup(placement_server, tmp_path):
    env = placement_server.env()
    ini = tmp_path / "ovs.ini"
    ini.write_text(OVS)
    sync = _minbw(env, "provider", "sync", "--agent-config", str(ini), "--create-root", "--root-inventory", "VCPU=8")
    assert sync.returncode == 0, sync.stderr
    return env


def test_every_form_sends_novas_query_and_claims(placement, placement_server, tmp_path, nova):
    env = _setup(placement_server, tmp_path)
    forms = _forms(env, tmp_path)
    ports = {name: [{"id": p["id"] or str(uuid.uuid4()), "resource_request": p["resource_request"]}]
             for name, (_, p) in forms.items()}  # Nova needs a port id: an extended request's groups ignore it
    theirs = dict(zip(forms, nova.ask([{"op": "query", "flavor": FLAVOR, "ports": ports[name],
                                        "facts": {"owner_nova": True, "aggregates": []}} for name in forms])))
    for name, (value, _) in forms.items():
        out = _minbw(env, "candidate", "list", *SERVER, "--port-request", value, "--json")
        assert out.returncode == 0, (name, out.stderr)
        shown = json.loads(out.stdout)
        assert "query" in theirs[name], (name, theirs[name])
        assert query_string(shown["query"]) == theirs[name]["query"], name
        assert shown["count"] == 1, name
        if name == "extended FILE":  # the table says where to look when Nova still finds no valid host
            table = _minbw(env, "candidate", "list", *SERVER, "--port-request", value)
            assert "Placement has 1 candidate(s) for this request: if Nova still finds no valid host" in table.stdout
        if name not in ("extended FILE", "legacy PORT_ID=FILE", "port show -f json (extended)"):
            continue  # the claim reads the request as candidate list does: claimed for one form of each kind
        consumer = str(uuid.uuid4())
        claim = _minbw(env, "allocation", "create", "--consumer", consumer, "--project-id", "p", "--user-id", "u",
                       *SERVER, "--port-request", value, "-f", "json")
        assert claim.returncode == 0, (name, claim.stderr)
        made = json.loads(claim.stdout)
        assert sorted(r for a in made["allocations"].values() for r in a["resources"]) == \
            ["NET_BW_EGR_KILOBIT_PER_SEC", "VCPU"], name
        assert (PORT in made["binding_profiles"]) == (forms[name][1]["id"] is not None), (name, made)
        assert _minbw(env, "allocation", "delete", "--consumer", consumer).returncode == 0


def test_the_legacy_format_without_its_port_is_refused_saying_how(placement, placement_server, tmp_path):
    env = _setup(placement_server, tmp_path)
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps(_shown(env, "--legacy")["resource_request"]))
    consumer = str(uuid.uuid4())
    for command in (["candidate", "list"], ["allocation", "create", "--consumer", consumer, "--project-id", "p",
                                            "--user-id", "u"]):
        out = _minbw(env, *command, *SERVER, "--port-request", str(legacy))
        assert out.returncode == 1, out.stdout + out.stderr
        assert "Nova names the group after the port" in out.stderr and "PORT_ID=FILE" in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1, out.stderr  # one line
    assert not placement.get_allocations(consumer).get("allocations")  # nothing claimed


def test_an_any_traits_request_lands_on_the_physnet_with_room_and_says_nova_never_sees_it(
        placement, placement_server, tmp_path):
    """Two physnets, br-x (physnet0) and br-y (physnet1), each with room for one port of 1000 kbps: the any-traits
    request (``request show --any-traits`` on a two-segment port) is claimed twice, once on each; a third finds no
    host, and so does Neutron's own request (the first segment's physnet only)."""
    env = _setup(placement_server, tmp_path)
    anyt = _minbw(env, "request", "show", "--port-id", PORT, "--qos-port",
                  "min_bw:egress:1000,segment=flat:physnet0,segment=flat:physnet1", "--any-traits")
    assert anyt.returncode == 0, anyt.stderr
    path = tmp_path / "any.json"
    path.write_text(anyt.stdout)
    hosts = []
    for _ in range(2):
        consumer = str(uuid.uuid4())
        claim = _minbw(env, "allocation", "create", "--consumer", consumer, "--project-id", "p", "--user-id", "u",
                       *SERVER, "--port-request", str(path), "-f", "json")
        assert claim.returncode == 0, claim.stderr
        made = json.loads(claim.stdout)
        (device,) = [rp for rp, a in made["allocations"].items() if "NET_BW_EGR_KILOBIT_PER_SEC" in a["resources"]]
        hosts.append(placement.get_provider(device).name)
    assert sorted(hosts) == ["fmt0:Open vSwitch agent:br-x", "fmt0:Open vSwitch agent:br-y"], hosts
    full = _minbw(env, "allocation", "create", "--consumer", str(uuid.uuid4()), "--project-id", "p", "--user-id", "u",
                  *SERVER, "--port-request", str(path))
    assert full.returncode == 4, full.stdout + full.stderr
    neutrons = tmp_path / "neutron.json"
    neutrons.write_text(json.dumps(_shown(env)))  # physnet0 only
    assert _minbw(env, "candidate", "list", *SERVER, "--port-request", str(neutrons)).returncode == 4
    shown = json.loads(_minbw(env, "candidate", "list", *SERVER, "--port-request", str(path), "--json").stdout)
    assert shown["microversion"] == "1.39" and shown["query"]["required" + next(
        k for k in shown["query"] if k.startswith("resources") and k != "resources")[len("resources"):]]
    assert any("Nova never sees it" in n for n in shown["nova_filters"]), shown["nova_filters"]
