"""The ``minbw`` command against the real embedded Placement, as a user runs it (subprocesses of the
installed entry point): -f/-c on several commands, the exit codes, ``request > port.json`` then
``claim --port-request port.json`` naming the port, and connection failures as one line."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:1000:1000
"""
PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
FLAVOR = ["--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1"]
ENTRY = shutil.which("minbw", path=os.path.dirname(sys.executable))


def run(env, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([ENTRY, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def cloud(placement, placement_server, tmp_path):
    """One compute node devstack0 with an OVS bridge of 1000 kbps each way, synced by the CLI."""
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS)
    env = placement_server.env()
    synced = run(env, "provider", "sync", "--agent-config", ini, "--create-root", "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=16384", "--root-inventory", "DISK_GB=100", "-f", "value", "-c", "write")
    assert synced.returncode == 0, synced.stderr
    assert f"create provider devstack0:Open vSwitch agent:br-test ({BR_TEST})" in synced.stdout
    assert "+--" not in synced.stdout and "writes" not in synced.stdout  # -f value: the column only
    return env, ini


def test_the_entry_point_is_the_one_tested():
    assert ENTRY and os.path.dirname(ENTRY) == os.path.dirname(sys.executable)


def test_formats_and_columns_on_several_commands(cloud):
    env, ini = cloud
    table = run(env, "provider", "list", "--hypervisor", "devstack0")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert [c.strip() for c in lines[1].split("|")[1:-1]] == [  # osc-placement's `resource provider list`
        "uuid", "name", "generation", "root_provider_uuid", "parent_provider_uuid"]
    inventory_head = next(line for line in lines if "resource_class" in line)
    assert [c.strip() for c in inventory_head.split("|")[1:-1]] == [
        "resource_class", "allocation_ratio", "min_unit", "max_unit", "reserved", "step_size", "total", "used"]

    value = run(env, "provider", "list", "-f", "value", "-c", "name", "-c", "generation")
    assert value.stdout.splitlines() == ["devstack0 2", "devstack0:Open vSwitch agent 1",
                                         "devstack0:Open vSwitch agent:br-test 2"], value.stdout
    as_json = json.loads(run(env, "provider", "list", "-f", "json").stdout)
    assert as_json == json.loads(run(env, "provider", "list", "--json").stdout)  # --json is -f json
    assert as_json == yaml.safe_load(run(env, "provider", "list", "-f", "yaml").stdout)
    assert {p["name"] for p in as_json} == {"devstack0", "devstack0:Open vSwitch agent",
                                            "devstack0:Open vSwitch agent:br-test"}
    picked = json.loads(run(env, "provider", "list", "-f", "json", "-c", "uuid", "-c", "name").stdout)
    assert {"uuid": BR_TEST, "name": "devstack0:Open vSwitch agent:br-test"} in picked
    assert all(set(p) == {"uuid", "name"} for p in picked)

    again = run(env, "provider", "sync", "--dry-run", "--agent-config", ini, "-f", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["ops"] == []
    assert "0 writes" in run(env, "provider", "sync", "--dry-run", "--agent-config", ini).stdout

    usage = run(env, "usage", "show", "--hypervisor", "devstack0", "-f", "value", "-c", "name", "-c", "resource_class",
                "-c", "used", "-c", "total")
    assert "devstack0:Open vSwitch agent:br-test NET_BW_EGR_KILOBIT_PER_SEC 0 1000" in usage.stdout.splitlines()

    wrong = run(env, "usage", "show", "-c", "nosuch")  # parsed before anything is read: exit 2, the columns named
    assert wrong.returncode == 2 and "nosuch" in wrong.stderr and "resource_class" in wrong.stderr
    assert "Traceback" not in wrong.stderr


# `usage show` in a fresh process, its HTTP requests counted (requests' transport adapter) and what it ran of the
# modules that a Connection or a request would load listed (importlib's LazyLoader: run, the type is ModuleType again)
USAGE_PROBE = """
import json, sys, types
import requests.adapters
sent = []
send = requests.adapters.HTTPAdapter.send
requests.adapters.HTTPAdapter.send = lambda self, request, **kw: sent.append(request.path_url) or send(self, request, **kw)
from minbw.cli import shell
code = shell.main(["usage", "show", "-f", "json"])
ran = [m for m in ("openstack.connection", "osprofiler.web", "oslo_utils.strutils", "netaddr", "statsd", "jmespath",
                  "jsonpatch", "wcwidth")
       if type(sys.modules.get(m)) is types.ModuleType]
ran += [m for m in ("minbw.neutron.agentconf", "minbw.usecases.inputs") if m in sys.modules]
print(json.dumps({"code": code, "sent": sent, "ran": ran, "services": "openstack._services_mixin" in sys.modules}), file=sys.stderr)
"""


def test_usage_show_talks_to_placement_alone(cloud, placement):
    """``usage show`` needs Placement alone: it makes Placement's connection from the cloud's configuration
    (minbw.placement.connection), so it loads neither openstacksdk's Connection with every service's proxy
    (openstack.connection, openstack._services_mixin) nor osprofiler's web module (no --os-profile), runs neither
    oslo.utils' strutils (no line logged), netaddr, statsd, jmespath, jsonpatch nor wcwidth's __init__, and imports
    neither minbw's parser of agents' configs nor the use cases' input parsers; it sends one listing, each provider's
    inventories and the allocations of those with inventory, and no version discovery; it shows what the use case
    shows over openstacksdk's Connection."""
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.usage import UsageRequest, usage

    env, _ini = cloud
    proc = subprocess.run([sys.executable, "-c", USAGE_PROBE], capture_output=True, text=True, env=env, timeout=120)
    probe = json.loads(proc.stderr.splitlines()[-1])
    assert probe["code"] == 0 and probe["ran"] == [] and not probe["services"], probe
    tree = placement.list_providers()
    stocked = [p.uuid for p in tree if placement.get_inventories(p.uuid)[0]]
    assert sorted(probe["sent"]) == sorted(
        ["/resource_providers"]
        + [f"/resource_providers/{p.uuid}/inventories" for p in tree]
        + [f"/resource_providers/{u}/allocations" for u in stocked]
    )
    assert json.loads(proc.stdout) == usage(Cloud(lambda: placement.conn), UsageRequest()).to_dict()


def test_request_file_then_claim_names_the_port(cloud, tmp_path, placement):
    """The file `minbw request show` writes carries the port id: the claim's binding and its no-valid-host
    diagnosis name the port (they said "port None")."""
    env, _ = cloud
    made = run(env, "request", "show", "--port-id", PORT, "--qos-port", "min_bw:egress:600,min_bw:ingress:600")
    assert made.returncode == 0, made.stderr
    port_json = tmp_path / "port.json"
    port_json.write_text(made.stdout)
    assert json.loads(made.stdout)["id"] == PORT
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", port_json]

    ok = run(env, "allocation", "create", "--consumer", "71cb7e04-3d5a-40f9-a99f-07f0d0831741", *args)
    assert ok.returncode == 0, ok.stderr
    assert PORT in ok.stdout and "port None" not in ok.stdout
    assert f"| {PORT} |" in ok.stdout and BR_TEST in ok.stdout  # the binding:profile.allocation table
    assert placement.get_allocations("71cb7e04-3d5a-40f9-a99f-07f0d0831741")["allocations"][BR_TEST]

    no = run(env, "allocation", "create", "--consumer", "0d4b5cf1-6a3c-4a4e-9a52-3b0c1e7f7a11", *args)
    assert no.returncode == 4, no.stdout + no.stderr  # no valid host: its own exit code, not 1
    assert f"port {PORT}" in no.stderr and "port None" not in no.stderr
    assert "largest free amount is 400" in no.stderr
    cands = run(env, "candidate", "list", *args[4:], "-f", "json")
    assert cands.returncode == 4 and json.loads(cands.stdout)["allocation_requests"] == []

    bad = run(env, "allocation", "create", "--consumer", "5f0e9cd4-3a55-4f43-9d8a-0c8f4c7b1c11", "--project-id", "p", "--user-id", "u", "--resource", "VCPU")
    assert bad.returncode == 2 and "--resource: expected CLASS=AMOUNT" in bad.stderr  # a usage error: 2
    freed = run(env, "allocation", "delete", "--consumer", "71cb7e04-3d5a-40f9-a99f-07f0d0831741", "-f", "value", "-c", "changed")
    assert freed.returncode == 0 and freed.stdout == "True\n"


def _one_line_error(proc, *texts):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("minbw: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for text in texts:
        assert text in proc.stderr, proc.stderr


def test_connection_failures_are_one_line_naming_the_cloud(placement_server, tmp_path):
    url = placement_server.url
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {
        # nothing listens on port 1
        "down": {"auth_type": "admin_token", "auth": {"endpoint": "http://127.0.0.1:1", "token": "admin"},
                 "placement_endpoint_override": "http://127.0.0.1:1"},
        # no token at all: the real Placement answers 401 (its noauth2 middleware)
        "badcreds": {"auth_type": "http_basic", "auth": {"endpoint": url, "username": "u", "password": "wrong"},
                     "placement_endpoint_override": url},
        # a token that is not admin: the real Placement's policy answers 403
        "notadmin": {"auth_type": "admin_token", "auth": {"endpoint": url, "token": "nobody"},
                     "placement_endpoint_override": url}}}))
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds)}
    env.pop("OS_CLOUD", None)

    _one_line_error(run(env, "--os-cloud", "nosuch", "usage", "show"), "nosuch was not found", str(clouds), "--os-cloud")
    _one_line_error(run(env, "--os-cloud", "down", "usage", "show"), "cannot reach cloud 'down' (http://127.0.0.1:1)",
                    "Fix:")
    _one_line_error(run(env, "--os-cloud", "badcreds", "provider", "list"),
                    f"cloud 'badcreds' ({url}) rejected the credentials (HTTP 401",
                    "Fix: check the cloud's credentials")
    _one_line_error(run(env, "--os-cloud", "notadmin", "usage", "show"), "cloud 'notadmin'", "HTTP 403",
                    "Placement needs an admin")
    as_json = run(env, "--os-cloud", "down", "usage", "show", "-f", "json")
    assert as_json.returncode == 1 and "cannot reach" in json.loads(as_json.stdout)["error"]["msg"]
    # an OS_CLOUD that is not in clouds.yaml does not break a command that needs no cloud
    made = run({**env, "OS_CLOUD": "nosuch"}, "request", "show", "--port-id", PORT, "--qos-port", "min_bw:egress:1",
               "-f", "value", "-c", "group")
    assert made.returncode == 0 and len(made.stdout.split()) == 1, made.stderr


def test_options_instead_of_clouds_yaml(cloud, placement_server):
    """openstacksdk's --os-* options work without any clouds.yaml, as with the openstack client."""
    env, _ = cloud
    env = {**env, "OS_CLIENT_CONFIG_FILE": "/nonexistent/clouds.yaml"}
    env.pop("OS_CLOUD")
    url = placement_server.url
    shown = run(env, "--os-auth-type", "admin_token", "--os-endpoint", url, "--os-token", "admin",
                "--os-placement-endpoint-override", url, "provider", "list", "-f", "value", "-c", "uuid")
    assert shown.returncode == 0, shown.stderr
    assert BR_TEST in shown.stdout.split()


def test_the_embedded_clouds_yaml_is_private(placement_server):
    mode = stat.S_IMODE(os.stat(placement_server.clouds_yaml).st_mode)
    assert mode == 0o600, oct(mode)


def on_a_terminal(args, env, stream: str, columns: int = 80):
    """Run ``args`` with ``stream`` ("stdout" or "stderr") on a terminal of ``columns``; the other is piped.
    Returns the process and what the terminal showed."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    ends = {"stdout": slave, "stderr": subprocess.PIPE} if stream == "stdout" else {"stdout": subprocess.PIPE,
                                                                                      "stderr": slave}
    with os.fdopen(master, "rb", buffering=0) as tty:
        proc = subprocess.run(args, env={**env, "COLUMNS": str(columns)}, timeout=120, **ends)
        os.close(slave)
        shown = b""
        try:
            while chunk := tty.read(4096):
                shown += chunk
        except OSError:  # EIO: the terminal's other end is closed
            pass
    return proc, shown.decode()


def test_sync_draws_a_progress_bar_on_a_terminal_only(placement, placement_server, tmp_path):
    import re
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS)
    args = [ENTRY, "provider", "sync", "--agent-config", str(ini), "--create-root", "-f", "value", "-c", "step"]
    proc, drawn = on_a_terminal(args, placement_server.env(), "stderr")
    assert proc.returncode == 0, drawn
    writes = proc.stdout.decode().splitlines()
    assert writes and set(writes) == {"done"}  # stdout is the result only
    assert re.search(rf"\r\x1b\[Kminbw: writes done \[#+\] {len(writes)}/{len(writes)}\r?\n", drawn), drawn
    plain = run(placement_server.env(), "provider", "sync", "--agent-config", ini, "--absent")
    assert plain.returncode == 0 and "\r" not in plain.stderr and "[#" not in plain.stderr, plain.stderr


def test_tables_fit_the_terminal(cloud, tmp_path):
    """On a terminal the widest table (the plan's writes) wraps to the terminal's width (cliff's --fit-width,
    on by default there); piped, it stays whole for scripts."""
    env, ini = cloud
    (tmp_path / "wider.ini").write_text(OVS.replace("br-test:1000:1000", "br-test:2000:2000"))
    args = [ENTRY, "provider", "sync", "--dry-run", "--agent-config", str(tmp_path / "wider.ini")]
    proc, shown = on_a_terminal(args, env, "stdout", columns=80)
    assert proc.returncode == 0, proc.stderr
    lines = shown.splitlines()
    assert any("set inventories of devstack0:Open" in line for line in lines), lines
    table = [line for line in lines if line.startswith(("+", "|"))]
    assert table and max(len(line) for line in table) <= 80, lines
    piped = run(env, *args[1:])
    assert max(len(line) for line in piped.stdout.splitlines() if line.startswith("|")) > 80  # a script: whole rows
