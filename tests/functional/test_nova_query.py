"""The scheduling query is Nova's (docs/scheduling.md, "Nova's query"), on the embedded Placement, as a new user
tries it: two compute nodes made as nova-compute makes them (``--create-root``: COMPUTE_NODE and OWNER_NOVA on
the root), then COMPUTE_STATUS_DISABLED on one root, as Nova's resource tracker sets it when an operator disables
its nova-compute. ``capacity`` counts 0 there and names Nova's compute_status_filter, ``candidates`` leave it out,
and the diagnosis of a server that fits only there says so instead of blaming bandwidth; enabled, the answers come
back. Then Nova's owner_nova_filter through a rolling upgrade: an older compute (no OWNER_NOVA) keeps every root a
candidate; once every compute node reports OWNER_NOVA, a root no nova-compute made is left out."""
from __future__ import annotations

import json
import subprocess

from tests.conftest import MINBW
from tests.support import cli_forks

OVS = """[DEFAULT]
host = {host}
[ovs]
bridge_mappings = physnet0:br-x
resource_provider_bandwidths = br-x:10000:10000
"""
SHAPE = ["--resource", "VCPU=1", "--qos-port", "min_bw:egress:1000"]


def _minbw(env, *args) -> subprocess.CompletedProcess:
    return cli_forks.run(MINBW + list(args), env=env, capture_output=True, text=True, timeout=120)


def _computes(placement_server, tmp_path, hosts):
    for host in hosts:
        ini = tmp_path / f"{host}.ini"
        ini.write_text(OVS.format(host=host))
        sync = _minbw(placement_server.env(), "provider", "sync", "--agent-config", str(ini), "--create-root",
                      "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=8192")
        assert sync.returncode == 0, sync.stderr


def _set_root_traits(placement, host, add=(), remove=()):
    root = placement.list_providers(name=host)[0].uuid
    traits, generation = placement.get_provider_traits(root)
    placement.set_provider_traits(root, (set(traits) | set(add)) - set(remove), generation)


def _capacity(env) -> dict:
    out = _minbw(env, "capacity", "show", *SHAPE, "--json")
    assert out.returncode == 0, out.stderr
    return {h["host"]: h for h in json.loads(out.stdout)["hosts"]}


def _candidate_hosts(env) -> list[str]:
    out = _minbw(env, "candidate", "list", *SHAPE, "-f", "value", "-c", "host")
    assert out.returncode in (0, 4), out.stderr
    return sorted(set(out.stdout.split()))


def test_a_disabled_compute_is_left_out_and_named(placement, placement_server, tmp_path):
    env = placement_server.env()
    _computes(placement_server, tmp_path, ["nq0", "nq1"])
    assert {h: c["fits"] for h, c in _capacity(env).items()} == {"nq0": 8, "nq1": 8}
    assert _candidate_hosts(env) == ["nq0", "nq1"]

    _set_root_traits(placement, "nq1", add=["COMPUTE_STATUS_DISABLED"])
    counted = _capacity(env)
    assert counted["nq0"]["fits"] == 8 and counted["nq1"]["fits"] == 0
    assert "COMPUTE_STATUS_DISABLED" in json.dumps(counted["nq1"]) and "compute_status_filter" in \
        json.dumps(counted["nq1"]), counted["nq1"]
    assert _candidate_hosts(env) == ["nq0"]
    shown = _minbw(env, "candidate", "list", *SHAPE, "--json")
    assert "compute_status_filter: root_forbidden COMPUTE_STATUS_DISABLED (always)" in \
        json.loads(shown.stdout)["nova_filters"]

    # a server that fits only on the disabled compute: the diagnosis names Nova's filter, not bandwidth
    fill = _minbw(env, "allocation", "create", "--consumer", "6f7f1d2e-1b1c-4c37-9a0e-0c1d2e3f4a5b", "--project-id", "p",
                  "--user-id", "u", "--resource", "VCPU=8", "--root-required", "!COMPUTE_STATUS_DISABLED")
    assert fill.returncode == 0, fill.stderr  # nq0's VCPUs all taken
    none = _minbw(env, "candidate", "list", *SHAPE)
    assert none.returncode == 4, none.stdout + none.stderr
    assert "compute_status_filter removes nq1" in none.stdout and "which Nova's request filters remove" in \
        none.stdout, none.stdout
    claim = _minbw(env, "allocation", "create", "--consumer", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "--project-id", "p",
                   "--user-id", "u", *SHAPE)
    assert claim.returncode == 4 and "compute_status_filter removes nq1" in claim.stderr, claim.stderr

    _set_root_traits(placement, "nq1", remove=["COMPUTE_STATUS_DISABLED"])  # enabled again
    assert _candidate_hosts(env) == ["nq1"] and _capacity(env)["nq1"]["fits"] == 8


def test_an_older_compute_mid_upgrade_stays_a_candidate_and_a_root_nova_did_not_make_is_left_out(
        placement, placement_server, tmp_path):
    """Issue 41: Nova adds ``root_required=OWNER_NOVA`` only once every nova-compute is at service version 73; on
    a cloud of Placement alone minbw reads that as "every COMPUTE_NODE root has OWNER_NOVA" (minbw.nova.owner)."""
    env = placement_server.env()
    _computes(placement_server, tmp_path, ["no0", "no1", "no2"])
    _set_root_traits(placement, "no2", remove=["COMPUTE_NODE", "OWNER_NOVA"])  # a root no nova-compute made
    _set_root_traits(placement, "no1", remove=["OWNER_NOVA"])  # mid-upgrade: no1's nova-compute is older
    assert _candidate_hosts(env) == ["no0", "no1", "no2"]  # Nova asks for nothing: no1 (and no2) stay
    counted = _capacity(env)
    assert counted["no1"]["fits"] == 8 and counted["no2"]["fits"] == 8, counted
    shown = json.loads(_minbw(env, "candidate", "list", *SHAPE, "--json").stdout)
    assert not [f for f in shown["nova_filters"] if f.startswith("owner_nova_filter")], shown["nova_filters"]

    _set_root_traits(placement, "no1", add=["OWNER_NOVA"])  # no1 upgraded: its resource tracker writes it
    assert _candidate_hosts(env) == ["no0", "no1"]  # every compute node reports it: no2 is left out, as Nova does
    counted = _capacity(env)
    assert counted["no2"]["fits"] == 0 and "owner_nova_filter" in json.dumps(counted["no2"]), counted["no2"]
    shown = json.loads(_minbw(env, "candidate", "list", *SHAPE, "--json").stdout)
    assert "owner_nova_filter: root_required OWNER_NOVA (every nova-compute is at service version 73 or later: " \
           "all 2 compute node roots in Placement have OWNER_NOVA)" in shown["nova_filters"], shown["nova_filters"]
    # the caller's own answer wins (--owner-nova no): Nova's query without OWNER_NOVA
    assert _minbw(env, "candidate", "list", *SHAPE, "--owner-nova", "no", "-f", "value", "-c", "host").stdout.split() \
        .count("no2") >= 1


def test_nova_options_by_nova_names_and_bad_ones_refused(placement, placement_server, tmp_path):
    env = placement_server.env()
    _computes(placement_server, tmp_path, ["nz0"])
    conf = tmp_path / "nova.conf"
    conf.write_text("[scheduler]\nmax_placement_results = 7\n")
    shown = json.loads(_minbw(env, "candidate", "list", *SHAPE, "--nova-conf", str(conf), "--json").stdout)
    assert shown["query"]["limit"] == "7"
    shown = json.loads(_minbw(env, "candidate", "list", *SHAPE, "--nova-conf", str(conf), "--nova-option",
                              "scheduler.max_placement_results=3", "--json").stdout)
    assert shown["query"]["limit"] == "3"
    bad = _minbw(env, "candidate", "list", *SHAPE, "--nova-option", "scheduler.no_such_option=1")
    assert bad.returncode != 0 and "no_such_option" in bad.stderr and "Fix" in bad.stderr, bad.stderr
    flavor = _minbw(env, "candidate", "list", "--flavor", "m1.small", *SHAPE[2:])
    assert flavor.returncode != 0 and "Nova" in flavor.stderr, flavor.stderr  # Placement alone has no flavors
