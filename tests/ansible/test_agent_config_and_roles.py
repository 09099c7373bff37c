"""Issue 2's modules and roles by ansible-playbook: agent_config on seed 003's files, the role
bandwidth_agent, and the role bandwidth_report (module bandwidth_providers) against the real
embedded Placement started by the role placement_local.

Assertions are on what the playbooks write (the registered results as JSON), the PLAY RECAP,
the files on disk and the providers in Placement.
"""
from __future__ import annotations

import base64
import json
import re
import uuid
from pathlib import Path

from minbw.plan.providers import root_uuid

OVS_INI = """# ml2_conf.ini of devstack0 (seed 003)
[DEFAULT]
host = devstack0

[ml2]
type_drivers = flat,vlan,vxlan
extension_drivers = port_security

[ovs]
resource_provider_bandwidths = br-test:1500:1500,br-ex::1
bridge_mappings = public:br-ex, physnet0:br-test
# the tunnel endpoint
local_ip = 192.168.2.169

[agent]
tunnel_types = vxlan
"""
SRIOV_INI = """[DEFAULT]
host = devstack0

[sriov_nic]
physical_device_mappings = physnet0:ens5
resource_provider_bandwidths = ens5:100000:100000
"""
NEUTRON_CONF = """[DEFAULT]
core_plugin = ml2
service_plugins = router, segments
auth_strategy = keystone
"""

SEED_003 = {  # uuid: (name, parent: "root" or uuid, {class: total})
    "89ca1421-5117-5348-acab-6d0e2054239c": ("devstack0:Open vSwitch agent", "root", {}),
    "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6": ("devstack0:NIC Switch agent", "root", {}),
    "f9c9ce07-679d-5d72-ac5f-31720811629a": ("devstack0:Open vSwitch agent:br-test",
                                             "89ca1421-5117-5348-acab-6d0e2054239c",
                                             {"NET_BW_EGR_KILOBIT_PER_SEC": 1500, "NET_BW_IGR_KILOBIT_PER_SEC": 1500}),
    "193134fd-464c-5545-9d20-df7d58c0166f": ("devstack0:Open vSwitch agent:br-ex",
                                             "89ca1421-5117-5348-acab-6d0e2054239c",
                                             {"NET_BW_IGR_KILOBIT_PER_SEC": 1}),
    "1c7e83f0-108d-5c35-ada7-7ebebbe43aad": ("devstack0:NIC Switch agent:ens5",
                                             "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6",
                                             {"NET_BW_EGR_KILOBIT_PER_SEC": 100000, "NET_BW_IGR_KILOBIT_PER_SEC": 100000}),
}
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
BR_EX = "193134fd-464c-5545-9d20-df7d58c0166f"


def seed_files(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = {"ovs": directory / "ml2_conf.ini", "sriov": directory / "sriov_agent.ini",
             "server": directory / "neutron.conf"}
    for key, text in (("ovs", OVS_INI), ("sriov", SRIOV_INI), ("server", NEUTRON_CONF)):
        files[key].write_text(text)
    files["ovs"].chmod(0o640)
    return files


# ---------------------------------------------------------------- module agent_config

def test_agent_config_module(tmp_path, playbook):
    files = seed_files(tmp_path / "etc")
    result_file = tmp_path / "result.json"
    run = playbook("agent_config.yml", dict(dir=str(tmp_path / "etc"), result_file=str(result_file)))
    assert run.recap["failed"] == 0 and run.recap["ignored"] == 4, run.output
    r = json.loads(result_file.read_text())

    # The [ovs] edit: changed lines in place, new ones at the end of the section; the
    # bridge_mappings given as a dict equal to the file's (other spacing) is not rewritten.
    expected_ovs = OVS_INI.replace("br-test:1500:1500", "br-test:2000:2000").replace(
        "local_ip = 192.168.2.169\n",
        "local_ip = 192.168.2.169\nresource_provider_inventory_defaults = allocation_ratio:2.0\n")

    # (check): changed, predicted diff, file untouched
    assert r["ovs_check"]["changed"] is True
    assert r["ovs_check"]["diff"] == {"before": OVS_INI, "after": expected_ovs,
                                      "before_header": str(files["ovs"]), "after_header": str(files["ovs"])}
    assert r["ovs_after_check"] == OVS_INI
    # real run: the same diff, then the file has it
    assert r["ovs_real"]["changed"] is True
    assert r["ovs_real"]["diff"]["after"] == expected_ovs
    assert r["ovs_real"]["updates"] == {"resource_provider_bandwidths": "br-test:2000:2000,br-ex::1",
                                        "resource_provider_inventory_defaults": "allocation_ratio:2.0"}
    conf = r["ovs_real"]["configurations"]
    assert conf["resource_provider_bandwidths"] == {"br-test": {"egress": 2000, "ingress": 2000},
                                                    "br-ex": {"egress": None, "ingress": 1}}
    assert conf["resource_provider_hypervisors"] == {"br-ex": "devstack0", "br-test": "devstack0",
                                                     "rp_tunnelled": "devstack0"}
    # IDEMPOTENCY, for real and in check mode
    assert r["ovs_again"]["changed"] is False and r["ovs_again"]["updates"] == {}
    assert r["ovs_check_again"]["changed"] is False
    # the ML2 step later added qos to [ml2] extension_drivers of the same file
    assert files["ovs"].read_text() == expected_ovs.replace("port_security\n", "port_security,qos\n")
    assert r["ml2_real"]["changed"] is True and r["ml2_again"]["changed"] is False
    assert files["ovs"].stat().st_mode & 0o777 == 0o640  # mode kept by the atomic move

    # SR-IOV: a physnet with two PFs, a device without bandwidth
    assert r["sriov_real"]["changed"] is True and r["sriov_again"]["changed"] is False
    assert files["sriov"].read_text() == SRIOV_INI.replace(
        "physnet0:ens5\n", "physnet0:ens5,physnet0:ens6\n").replace(
        "ens5:100000:100000\n", "ens5:100000:100000,ens6::\n")
    assert r["sriov_real"]["configurations"]["device_mappings"] == {"physnet0": ["ens5", "ens6"]}

    # bad values: Neutron's message, the file's bytes unchanged
    assert r["bad_device"]["failed"] is True
    assert r["bad_device"]["msg"] == (f"{files['ovs']}: resource_provider_bandwidths: Invalid "
                                      "resource_provider_bandwidths: Device name br-missing is missing from "
                                      "device mappings. Fix: list only devices mapped in bridge_mappings "
                                      "(or rp_tunnelled).")
    assert r["bad_device"]["fix"] == "list only devices mapped in bridge_mappings (or rp_tunnelled)"
    assert "configuration options are mutually exclusive" in r["bad_packet_rate"]["msg"]
    assert r["ovs_before_bad"] == r["ovs_after_bad"]
    assert base64.b64decode(r["ovs_after_bad"]).decode() == expected_ovs
    assert r["bad_option"]["msg"].startswith("bridge_mappings: not an option of the NIC Switch agent (physical_device_mappings")
    assert "does not exist" in r["bad_path"]["msg"]

    # neutron-server: qos and placement appended, the others kept as written
    expected_server = NEUTRON_CONF.replace("router, segments", "router, segments,qos,placement")
    assert r["server_check"]["changed"] is True
    assert r["server_check"]["diff"]["after"] == expected_server
    assert r["server_real"]["changed"] is True and r["server_again"]["changed"] is False
    assert files["server"].read_text() == expected_server


# ---------------------------------------------------------------- role bandwidth_agent

def test_bandwidth_agent_role_check_real_again(tmp_path, playbook):
    files = seed_files(tmp_path / "etc")
    variables = dict(
        bandwidth_agent_ovs_config=str(files["ovs"]),
        bandwidth_agent_ovs=dict(resource_provider_bandwidths={"br-test": {"egress": 1500, "ingress": 1500},
                                                               "br-ex": {"egress": 10, "ingress": 1}},
                                 resource_provider_packet_processing_without_direction={"": 1000}),
        bandwidth_agent_sriov_config=str(files["sriov"]),
        bandwidth_agent_sriov=dict(resource_provider_inventory_defaults={"reserved": 1000}),
        bandwidth_agent_neutron_server=True,
        bandwidth_agent_neutron_conf=str(files["server"]),
        bandwidth_agent_ml2_conf=str(files["ovs"]),
    )
    before = {k: p.read_bytes() for k, p in files.items()}

    run = playbook("bandwidth_agent_role.yml", variables, check=True, diff=True)
    assert not run.failed and run.recap["changed"] == 4, run.output
    assert "+resource_provider_bandwidths = br-test:1500:1500,br-ex:10:1" in run.output
    assert "-resource_provider_bandwidths = br-test:1500:1500,br-ex::1" in run.output
    assert {k: p.read_bytes() for k, p in files.items()} == before

    run = playbook("bandwidth_agent_role.yml", variables, diff=True)
    assert not run.failed and run.recap["changed"] == 4, run.output
    ovs = files["ovs"].read_text()
    assert "resource_provider_bandwidths = br-test:1500:1500,br-ex:10:1\n" in ovs
    assert "resource_provider_packet_processing_without_direction = :1000\n" in ovs
    assert "extension_drivers = port_security,qos\n" in ovs
    assert "# the tunnel endpoint\nlocal_ip = 192.168.2.169\n" in ovs and "[agent]\ntunnel_types = vxlan\n" in ovs
    assert "resource_provider_inventory_defaults = reserved:1000\n" in files["sriov"].read_text()
    assert "service_plugins = router, segments,qos,placement\n" in files["server"].read_text()
    # no services named: the handler restarts nothing
    assert "RUNNING HANDLER [minbw.openstack.bandwidth_agent : Restart the Neutron services]" in run.output

    after = {k: p.read_bytes() for k, p in files.items()}
    for check in (False, True):                      # IDEMPOTENCY, real and (check)
        run = playbook("bandwidth_agent_role.yml", variables, check=check)
        assert not run.failed and not run.changed, run.output
    assert {k: p.read_bytes() for k, p in files.items()} == after


# ---------------------------------------------------------------- role bandwidth_report

def allocate(state_dir: Path, provider: str, resources: dict) -> str:
    """A consumer with an allocation on ``provider`` (as nova would make for a bound port)."""
    import openstack.config
    from openstack import connection
    cfg = openstack.config.OpenStackConfig(config_files=[str(state_dir / "clouds.yaml")])
    conn = connection.Connection(config=cfg.get_one(cloud="minbw-local"))
    consumer = str(uuid.uuid4())
    resp = conn.placement.put(f"/allocations/{consumer}", microversion="1.28", json={
        "allocations": {provider: {"resources": resources}}, "consumer_generation": None,
        "project_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4())})
    assert resp.status_code == 204, resp.text
    return consumer


def by_uuid(result: dict) -> dict:
    return {p["uuid"]: p for p in result["providers"]}


def test_bandwidth_report_role_against_embedded_placement(tmp_path, playbook, placement_local):
    port, state_dir = placement_local
    files = seed_files(tmp_path / "etc")
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file),
                bandwidth_report_agent_configs=[str(files["ovs"]), str(files["sriov"])],
                start_placement=False)  # the first run starts it

    def step(check=False, diff=False, **variables):
        result_file.unlink(missing_ok=True)
        run = playbook("bandwidth_report_role.yml", dict(base, **variables), check=check, diff=diff)
        result = json.loads(result_file.read_text()) if result_file.exists() else None
        return run, result

    # No compute node root provider and no create_root: a clear failure naming the hypervisor
    # (this first run also starts the embedded Placement).
    run, result = step(start_placement=True)
    assert run.recap["failed"] == 1 and result is None, run.output
    assert "No resource provider named 'devstack0' in Placement" in run.output
    assert "create_root" in run.output

    root = dict(bandwidth_report_create_root=True,
                bandwidth_report_root_inventories={"VCPU": 8, "MEMORY_MB": {"total": 16384, "reserved": 512}})

    # (check): the plan, nothing written
    run, result = step(check=True, **root)
    assert not run.failed and run.changed, run.output
    report = result["report"]
    assert report["changed"] is True and report["writes"] == len(report["ops"]) > 0
    assert {op["uuid"] for op in report["ops"] if op["action"] == "create_provider"} == set(SEED_003)
    assert result["providers"] == []

    # real run: seed 003's providers, with Neutron's UUIDs, names, parents and inventories
    run, result = step(**root)
    assert not run.failed and run.changed, run.output
    assert result["report"]["writes"] == len(result["report"]["ops"]) > 0
    got = by_uuid(result)
    root_id = root_uuid("devstack0")
    assert got[root_id]["name"] == "devstack0"
    assert {rc: inv["total"] for rc, inv in got[root_id]["inventories"].items()} == {"VCPU": 8, "MEMORY_MB": 16384}
    assert got[root_id]["inventories"]["MEMORY_MB"]["reserved"] == 512
    assert set(got) == set(SEED_003) | {root_id}
    for rp_uuid, (name, parent, totals) in SEED_003.items():
        assert got[rp_uuid]["name"] == name
        assert got[rp_uuid]["parent_provider_uuid"] == (root_id if parent == "root" else parent)
        assert {rc: inv["total"] for rc, inv in got[rp_uuid]["inventories"].items()} == totals
    assert "CUSTOM_PHYSNET_PHYSNET0" in got[BR_TEST]["traits"]
    assert "CUSTOM_PHYSNET_PUBLIC" in got[BR_EX]["traits"]
    assert "writes made for 5 providers" in run.output
    assert result["report"]["summary"].startswith("1 host, 5 providers: 5 created, 0 updated, 0 deleted, "
                                                  "1 root created (")
    assert "1 host, 5 providers: 5 created" in run.output  # the role prints the module's summary line

    # IDEMPOTENCY: 0 writes, for real and in check mode
    for check in (False, True):
        run, result = step(check=check, **root)
        assert not run.failed and not run.changed, run.output
        assert result["report"]["writes"] == 0 and result["report"]["ops"] == []

    # (check) a changed bandwidth in diff mode: one inventory write, before/after totals, Placement unchanged
    files["ovs"].write_text(OVS_INI.replace("br-test:1500:1500", "br-test:2000:1500"))
    run, result = step(check=True, diff=True, **root)
    assert not run.failed and run.changed, run.output
    report = result["report"]
    assert [(op["action"], op["uuid"]) for op in report["ops"]] == [("set_inventories", BR_TEST)]
    [diff] = report["diff"]                          # one diff per changing provider
    assert diff["before_header"] == diff["after_header"] == f"devstack0:Open vSwitch agent:br-test ({BR_TEST})"
    before, after = diff["before"], diff["after"]
    assert before["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 1500
    assert after["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 2000
    assert after["inventories"]["NET_BW_IGR_KILOBIT_PER_SEC"] == before["inventories"]["NET_BW_IGR_KILOBIT_PER_SEC"]
    assert "generation" not in before
    assert f"before: devstack0:Open vSwitch agent:br-test ({BR_TEST})" in run.output
    assert re.search(r"^-\s+total: 1500\n\+\s+total: 2000$", run.output, re.M), run.output
    assert by_uuid(result)[BR_TEST]["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 1500

    # br-ex loses its bandwidth while a consumer holds some of it: kept, reported with the consumer
    consumer = allocate(state_dir, BR_EX, {"NET_BW_IGR_KILOBIT_PER_SEC": 1})
    files["ovs"].write_text(OVS_INI.replace("br-test:1500:1500,br-ex::1", "br-test:1500:1500"))
    run, result = step(**root)
    assert not run.failed and not run.changed, run.output
    assert result["report"]["kept"] == [{"uuid": BR_EX, "name": "devstack0:Open vSwitch agent:br-ex",
                                         "consumers": {consumer: {"NET_BW_IGR_KILOBIT_PER_SEC": 1}}}]
    assert f"devstack0:Open vSwitch agent:br-ex: kept, allocated to {consumer}" in run.output
    assert BR_EX in by_uuid(result)
