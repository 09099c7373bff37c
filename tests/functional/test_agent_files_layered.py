"""The commands and modules take an agent's layered files (--agent-config in order, --config-dir; agent_configs,
config_dirs) and read them as the agent does: neutron.conf's [DEFAULT] host under each agent's own file, a config
dir's override after them, [SRIOV_NIC] as [sriov_nic] (docs/operators.md, "The agent files minbw reads")."""
from __future__ import annotations

import json
import sys

from tests.functional.test_bad_input_modules import cloud, collection, run_module  # noqa: F401 - fixtures
from tests.support.compute_roots import compute_root
from tests.support import cli_forks

NEUTRON_CONF = "[DEFAULT]\nhost = devstack0\ndebug = true\n"
OVS_INI = "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"
SRIOV_INI = ("[SRIOV_NIC]\nphysical_device_mappings = physnet0:ens5\n"
             "resource_provider_bandwidths = ens5:40000000:40000000\n")
OVERRIDE = "[OVS]\nresource_provider_bandwidths = br-test:2500:2500\n"  # a later file's option wins


def files(tmp_path):
    for name, text in (("neutron.conf", NEUTRON_CONF), ("ovs.ini", OVS_INI), ("sriov.ini", SRIOV_INI)):
        (tmp_path / name).write_text(text)
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "99-bandwidth.conf").write_text(OVERRIDE)
    (tmp_path / "conf.d" / "99-ignored.ini").write_text("[ovs]\nresource_provider_bandwidths = br-test:1:1\n")
    return [str(tmp_path / n) for n in ("neutron.conf", "ovs.ini", "sriov.ini")], str(tmp_path / "conf.d")


def minbw(env, *args):
    return cli_forks.run([sys.executable, "-m", "minbw.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_sync_and_drift_read_the_layered_set_without_host(placement, placement_server, tmp_path):
    compute_root(placement, "devstack0")
    paths, conf_d = files(tmp_path)
    args = ["--agent-config", *paths, "--config-dir", conf_d]
    sync = minbw(placement_server.env(), "provider", "sync", *args, "--no-cache", "--json")
    assert sync.returncode == 0, sync.stderr
    result = json.loads(sync.stdout)
    assert [(u["unit"], u["kind"], u["host"]) for u in result["units"]] == [
        (paths[1], "openvswitch", "devstack0"), (paths[2], "sriov", "devstack0")]
    inventories = {p["name"]: p["inventories"] for p in result["providers"]}
    assert inventories["devstack0:Open vSwitch agent:br-test"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 2500
    assert inventories["devstack0:NIC Switch agent:ens5"]["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == 40000000
    drift = minbw(placement_server.env(), "drift", "show", *args, "--no-neutron", "--json")
    assert drift.returncode == 0, drift.stdout + drift.stderr
    assert json.loads(drift.stdout)["ok"] is True
    # without the file that gives the host: the error names the files of the agent and asks for --host
    alone = minbw(placement_server.env(), "provider", "sync", "--dry-run", "--agent-config", paths[1])
    assert alone.returncode == 1 and "the agent host is not known: no file of the agent" in alone.stderr
    assert "give --host" in alone.stderr
    # a config dir that is not there is an error, as for the agent
    missing = minbw(placement_server.env(), "provider", "sync", "--dry-run", "--agent-config", *paths,
                    "--config-dir", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "--config-dir" in missing.stderr and "nope" in missing.stderr


def test_the_modules_take_config_dirs(collection, cloud, placement, tmp_path):
    """bandwidth_providers (check mode) and agent_config_info read the same set as the CLI."""
    compute_root(placement, "devstack0")
    paths, conf_d = files(tmp_path)
    info, _ = run_module("agent_config_info", {"agent_configs": paths, "config_dirs": [conf_d]})
    assert not info.get("failed"), info
    assert [(a["agent_type"], a["host"]) for a in info["agents"]] == [("openvswitch", "devstack0"),
                                                                       ("sriov", "devstack0")]
    assert info["agents"][0]["resource_provider_bandwidths"] == {"br-test": {"egress": 2500, "ingress": 2500}}
    plan, writes = run_module("bandwidth_providers", {"cloud": cloud, "agent_configs": paths, "config_dirs": [conf_d],
                                                      "cache": False, "_ansible_check_mode": True})
    assert not plan.get("failed") and plan["changed"] and writes == 0, plan
    assert [(u["unit"], u["host"]) for u in plan["units"]] == [(paths[1], "devstack0"), (paths[2], "devstack0")]
    # the files give no agent's own file (neutron.conf and the override only): nothing tells the kind
    kindless, _ = run_module("agent_config_info", {"agent_configs": paths[:1], "config_dirs": [conf_d]})
    assert kindless.get("failed") and "cannot tell the agent kind" in kindless["msg"], kindless
