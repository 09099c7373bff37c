"""docs/operators.md's recipes for kolla-ansible, openstack-ansible and RHOSO's SR-IOV agents, rendered by the tools'
own templating and fed to minbw: each recipe's files as written in the guide, then the tool's own role (its
templates, defaults and tasks; kolla's merge_configs and openstack-ansible's config_template action plugins:
tests/support/deployment_tools/README.md) run by ansible-playbook on an inventory of computes and network nodes, then
the guide's minbw command, as written, on each host's rendered files against the real (embedded) Placement, with
the compute nodes' root providers as nova-compute makes them. The command's ``$(hostname)`` is the host's name (a
``hostname`` first on PATH prints it), and the tool's directory on the host is the host's output directory."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import yaml

from minbw.neutron import agentconf as ac
from tests.support.compute_roots import compute_root
from tests.support.playbook_runner import BIN, run_playbook

REPO = Path(__file__).resolve().parents[2]
OPERATORS = REPO / "docs" / "operators.md"
TOOLS = REPO / "tests" / "support" / "deployment_tools"
BANDWIDTH = "NET_BW_EGR_KILOBIT_PER_SEC"


def block(marker: str) -> str:
    """The fenced block right after ``<!-- marker -->`` in docs/operators.md."""
    m = re.search(rf"<!-- {re.escape(marker)} -->\s*```\w*\n(.*?)```", OPERATORS.read_text(), re.S)
    assert m, f"docs/operators.md has no <!-- {marker} --> block"
    return m.group(1)


def inventory(path: Path, groups: dict[str, list[str]]) -> Path:
    lines = [line for group, hosts in groups.items() for line in (f"[{group}]", *hosts)]
    path.write_text("\n".join([*lines, "[all:vars]", "ansible_connection=local"]) + "\n")
    return path


def on_host(tmp_path: Path, host: str, script: str, env: dict) -> subprocess.CompletedProcess:
    """``script`` run by bash as on ``host``: ``hostname`` prints its name, minbw is the one under test."""
    shim = tmp_path / "bin" / host
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "hostname").write_text(f"#!/bin/sh\necho {host}\n")
    (shim / "hostname").chmod(0o755)
    env = dict(env, PATH=f"{shim}:{BIN}:{os.environ['PATH']}")
    return subprocess.run(["bash", "-euc", script], capture_output=True, text=True, env=env, timeout=300)


def providers(run: subprocess.CompletedProcess) -> dict[str, dict]:
    """The providers a ``provider sync --dry-run`` (JSON) would write: name → inventories."""
    assert run.returncode == 0, run.stdout + run.stderr
    return {p["name"]: p["inventories"] for p in json.loads(run.stdout)["providers"]}


# ---------------------------------------------------------------- kolla-ansible

KOLLA_HOSTS = {"control": ["controller-1", "controller-trunk enable_neutron_trunk=yes",
                           "controller-ovn neutron_plugin_agent=ovn"],
               "network": ["network-1"], "compute": ["compute1", "compute2"]}


def kolla(tmp_path: Path) -> Path:
    """/etc/kolla/config as the guide's play leaves it (with an operator's own override kept), then kolla's neutron
    role run with the guide's globals.yml lines as extra vars: each host's /etc/kolla under <out>/<host>."""
    config = tmp_path / "kolla-config"
    (config / "neutron").mkdir(parents=True)
    (config / "neutron" / "openvswitch_agent.ini").write_text("[ovs]\nof_inactivity_probe = 20\n")  # the shared one
    play = tmp_path / "kolla.yml"
    play.write_text(block("playbook: kolla"))
    run = run_playbook(play, {"kolla_config_dir": str(config)})
    assert not run.failed, run.output
    out = tmp_path / "kolla"
    deployed = run_playbook(TOOLS / "kolla" / "deploy.yml",
                            {**yaml.safe_load(block("globals: kolla")), "out": str(out),
                             "node_custom_config": str(config)},
                            inventory=inventory(tmp_path / "kolla-inventory.ini", KOLLA_HOSTS), local_hosts=True)
    assert not deployed.failed, deployed.output
    return out


def test_kolla_per_host_overrides_give_the_computes_their_bandwidth_and_the_network_node_none(
        tmp_path, placement, placement_server):
    out = kolla(tmp_path)
    agents = {h: ac.read_ini((out / h / "neutron-openvswitch-agent" / "openvswitch_agent.ini").read_text())["ovs"]
              for h in ("compute1", "compute2", "network-1")}
    # kolla's own bridge mapping on every agent, the shared override on every agent, each compute's bandwidth on it
    assert {h: (a["bridge_mappings"], a["of_inactivity_probe"], a.get("resource_provider_bandwidths"))
            for h, a in agents.items()} == {
        "compute1": ("physnet1:br-ex", "20", "br-ex:10000000:10000000"),
        "compute2": ("physnet1:br-ex", "20", "br-ex:25000000:25000000"),
        "network-1": ("physnet1:br-ex", "20", None)}

    for compute in ("compute1", "compute2"):
        compute_root(placement, compute)
    script = block("commands: kolla compute")
    assert "/etc/kolla/neutron-openvswitch-agent" in script
    runs = {host: on_host(tmp_path, host, script.replace("/etc/kolla", str(out / host)).replace(
        "--dry-run", "--dry-run --json"), placement_server.env()) for host in ("compute1", "compute2", "network-1")}
    assert providers(runs["compute1"])["compute1:Open vSwitch agent:br-ex"][BANDWIDTH]["total"] == 10000000
    assert providers(runs["compute2"])["compute2:Open vSwitch agent:br-ex"][BANDWIDTH]["total"] == 25000000
    # the network node (no compute node provider): the sync stops as the guide says, writing nothing
    network = runs["network-1"]
    assert network.returncode == 1 and network.stderr.startswith(
        "minbw: error: No resource provider named 'network-1' in Placement: "), network.stdout + network.stderr
    assert "`minbw: error: No resource provider named 'network-1' in Placement: ...` (exit 1)" in " ".join(
        OPERATORS.read_text().split())
    assert {p.name for p in placement.list_providers()} == {"compute1", "compute2"}  # dry runs wrote nothing
    # the kolla line of "The agent files minbw reads", on compute1
    (kolla_line, _) = block("commands: agent files").splitlines()
    seen = providers(on_host(tmp_path, "compute1", kolla_line.replace("/etc/kolla", str(out / "compute1")).replace(
        "--dry-run", "--dry-run --json"), placement_server.env()))
    assert seen["compute1:Open vSwitch agent:br-ex"][BANDWIDTH]["total"] == 10000000


def test_kolla_shared_override_puts_bandwidth_on_the_network_node_and_drift_names_it(tmp_path, placement,
                                                                                     placement_server):
    """What the guide warns of: bandwidth in the shared override file reaches every agent kolla renders, the network
    node's too; minbw's drift (from the ini files, Placement's side) names that host's rows as on a host without a
    compute node, and compares the computes' as usual."""
    config = tmp_path / "kolla-config"
    (config / "neutron").mkdir(parents=True)
    (config / "neutron" / "openvswitch_agent.ini").write_text(
        "[ovs]\nresource_provider_bandwidths = br-ex:10000000:10000000\n")
    out = tmp_path / "kolla"
    run = run_playbook(TOOLS / "kolla" / "deploy.yml", {"out": str(out), "node_custom_config": str(config)},
                       inventory=inventory(tmp_path / "kolla-inventory.ini",
                                           {"control": [], "network": ["network-1"], "compute": ["compute1"]}),
                       local_hosts=True)
    assert not run.failed, run.output
    compute_root(placement, "compute1")
    files = {h: [str(out / h / "neutron-openvswitch-agent" / f) for f in ("neutron.conf", "openvswitch_agent.ini")]
             for h in ("compute1", "network-1")}
    sync = on_host(tmp_path, "compute1", "minbw provider sync --host compute1 --agent-config "
                   + " ".join(files["compute1"]), placement_server.env())
    assert sync.returncode == 0, sync.stdout + sync.stderr
    rows = {}
    for host, paths in files.items():
        drift = on_host(tmp_path, host, f"minbw drift show --no-neutron --host {host} --agent-config {' '.join(paths)} "
                                        "-f json", placement_server.env())
        rows[host] = {r["name"]: r for r in json.loads(drift.stdout)["providers"]}
        assert drift.returncode == (3 if host == "network-1" else 0), drift.stdout + drift.stderr
    assert "compute1:Open vSwitch agent:br-ex" in rows["compute1"]
    assert all(r["agree"] for r in rows["compute1"].values())
    assert sorted(rows["network-1"]) == ["network-1:Open vSwitch agent", "network-1:Open vSwitch agent:br-ex"]
    assert all(r["differences"][-1].startswith("no compute node provider 'network-1' in Placement")
               for r in rows["network-1"].values())


def test_kolla_service_plugins_extend_kollas_own_list(tmp_path):
    """globals.yml's neutron_service_plugins adds placement to the list kolla computes from its switches: a switch
    turned on (enable_neutron_trunk) still adds its plugin; on ML2/OVN kolla's ovn-router replaces router."""
    out = kolla(tmp_path)

    def plugins(host):
        conf = ac.read_ini((out / host / "neutron-server" / "neutron.conf").read_text())
        return conf["DEFAULT"]["service_plugins"].split(",")

    assert plugins("controller-1") == ["qos", "router", "placement"]
    assert plugins("controller-trunk") == ["qos", "router", "trunk", "placement"]
    assert plugins("controller-ovn") == ["qos", "ovn-router", "placement"]


# ---------------------------------------------------------------- openstack-ansible


def test_osa_host_vars_give_the_compute_its_bandwidth_and_the_network_node_none(tmp_path, placement,
                                                                               placement_server):
    deploy = tmp_path / "openstack_deploy"
    (deploy / "host_vars").mkdir(parents=True)
    (deploy / "host_vars" / "compute1.yml").write_text(block("host_vars: osa compute1"))
    user_variables = yaml.safe_load(block("user_variables: osa"))
    hosts = inventory(deploy / "inventory.ini", {"neutron_openvswitch_agent": ["compute1", "compute2", "network1"],
                                                 "compute_hosts": ["compute1", "compute2"],
                                                 "network_hosts": ["network1"]})
    out = tmp_path / "osa"
    run = run_playbook(TOOLS / "osa_neutron.yml", {**user_variables, "out": str(out)}, inventory=hosts,
                       local_hosts=True)
    assert not run.failed, run.output
    ini = {h: ac.read_ini((out / h / "plugins" / "ml2" / "openvswitch_agent.ini").read_text())
           for h in ("compute1", "compute2", "network1")}
    assert ini["compute1"]["ovs"]["resource_provider_bandwidths"] == "br-vlan:10000000:10000000"
    assert ini["compute1"]["agent"]["extensions"] == "qos"  # os_neutron's, from qos in neutron_plugin_base
    assert all("resource_provider_bandwidths" not in ini[h]["ovs"] for h in ("compute2", "network1"))
    assert all(ini[h]["ovs"]["bridge_mappings"] == "physnet0:br-vlan" for h in ini)

    compute_root(placement, "compute1")
    script = block("commands: osa compute").replace("/etc/neutron", str(out / "compute1")).replace(
        "--dry-run", "--dry-run --json")
    seen = providers(on_host(tmp_path, "compute1", script, placement_server.env()))
    assert seen["compute1:Open vSwitch agent:br-vlan"][BANDWIDTH]["total"] == 10000000


# ---------------------------------------------------------------- RHOSO: edpm-ansible's SR-IOV agent


def test_rhoso_sriov_node_variables_render_the_agents_bandwidth(tmp_path, placement, placement_server):
    patch = yaml.safe_load(block("patch: edpm sriov"))
    ((node, spec),) = patch["spec"]["nodes"].items()
    hypervisor = "edpm-compute-0.ctlplane.example.com"
    secrets = tmp_path / "secrets"  # the service's data source, as the role's molecule test has it
    secrets.mkdir()
    (secrets / "10-neutron-sriov.conf").write_text((TOOLS / "edpm_neutron_sriov" / "10-neutron-sriov.conf").read_text())
    out = tmp_path / "edpm"
    hosts = inventory(tmp_path / "edpm-inventory.ini", {"edpm": [f"{node} canonical_hostname={hypervisor}"]})
    run = run_playbook(TOOLS / "edpm_neutron_sriov.yml",
                       {**spec["ansible"]["ansibleVars"], "out": str(out), "secrets": str(secrets)}, inventory=hosts,
                       local_hosts=True)
    assert not run.failed, run.output
    conf = ac.read_ini((out / node / "01-neutron-sriov-agent.conf").read_text())
    assert conf["sriov_nic"]["resource_provider_bandwidths"] == "ens5:10000000:10000000"

    compute_root(placement, hypervisor)
    script = block("commands: edpm sriov")
    assert "/var/lib/openstack/neutron-sriov-agent" in script
    seen = providers(on_host(tmp_path, node, script.replace("/var/lib/openstack/neutron-sriov-agent", str(out / node))
                             .replace("--dry-run", "--dry-run --json"), placement_server.env()))
    assert seen[f"{hypervisor}:NIC Switch agent:ens5"][BANDWIDTH]["total"] == 10000000
    # the edpm line of "The agent files minbw reads": the same command
    (_, edpm_line) = block("commands: agent files").splitlines()
    assert edpm_line.split("#")[0].strip() == script.strip()
