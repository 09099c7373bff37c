"""The agents' files as the deployment tools write them, rendered from the tools' own templates with their defaults
(tests/support/deployment_tools/README.md names the sources), read by minbw as the agents read them - and, for the
same files, by oslo.config with Neutron's options registered (what the agent gets)."""
from __future__ import annotations

import importlib.util
from io import StringIO
from pathlib import Path

import jinja2
import pytest
import yaml

from minbw.errors import ConfigError
from minbw.neutron import agentconf as ac
from minbw.neutron import naming
from minbw.ops.agent_files import read_agent_units
from tests.support.oracle.neutron_agent_conf import agent_conf

TOOLS = Path(__file__).resolve().parents[2] / "support" / "deployment_tools"


def render(template: Path, values: dict) -> str:
    """As Ansible's template module renders: trim_blocks on unless the file's ``#jinja2:`` header says otherwise
    (the header line itself dropped); Ansible's ``bool`` and ``zip`` filters."""
    text, options = template.read_text(), {"trim_blocks": True}
    if text.startswith("#jinja2:"):
        header, text = text.split("\n", 1)
        for item in header.removeprefix("#jinja2:").split(","):
            key, value = (x.strip() for x in item.split(":"))
            options[key] = value == "True"
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, **options)
    env.filters["bool"] = lambda v: v if isinstance(v, bool) else str(v).lower() in ("yes", "true", "1", "on")
    env.filters["zip"] = lambda a, *b: list(zip(a, *b))
    return env.from_string(text).render(**values)


# ---------------------------------------------------------------- RHOSO: edpm-ansible's SR-IOV agent

EDPM = TOOLS / "edpm_neutron_sriov"
# what an operator gives the node set (the role's edpm_neutron_sriov_agent_SRIOV_NIC_* variables)
EDPM_NODE = {"canonical_hostname": "edpm-compute-0.ctlplane.example.com",
             "edpm_neutron_sriov_agent_SRIOV_NIC_physical_device_mappings": "sriovnet1:ens5",
             "edpm_neutron_sriov_agent_SRIOV_NIC_resource_provider_bandwidths": "ens5:10000000:10000000"}


def edpm_config_dir(root: Path) -> Path:
    """/var/lib/openstack/neutron-sriov-agent as tasks/configure.yml writes it: the three templates rendered with the
    role's defaults and the node's variables as 01-*.conf, and a custom file copied beside them."""
    values = {**yaml.safe_load((EDPM / "defaults" / "main.yml").read_text()), **EDPM_NODE}
    d = root / "neutron-sriov-agent"
    d.mkdir()
    for src, dest in (("neutron.conf.j2", "01-neutron.conf"), ("rootwrap.conf.j2", "01-rootwrap.conf"),
                      ("neutron-sriov-agent.conf.j2", "01-neutron-sriov-agent.conf")):
        (d / dest).write_text(render(EDPM / "templates" / "config" / src, values))
    (d / "10-neutron-sriov.conf").write_text((EDPM / "10-neutron-sriov.conf").read_text())
    return d


def test_edpm_sriov_agent_read_from_its_config_dir(tmp_path):
    """edpm writes [SRIOV_NIC] (oslo.config's group sriov_nic) and everything in the config dir the container mounts
    as /etc/neutron.conf.d, where the agent, started without options, reads it: one SR-IOV agent, its host the
    node's canonical_hostname."""
    d = edpm_config_dir(tmp_path)
    assert "[SRIOV_NIC]\nphysical_device_mappings = sriovnet1:ens5\n" in (d / "01-neutron-sriov-agent.conf").read_text()
    configs, unread = read_agent_units(config_dirs=[str(d)])
    assert not unread
    (cfg,) = configs
    assert cfg.kind == naming.SRIOV and cfg.host == "edpm-compute-0.ctlplane.example.com"
    assert cfg.source == str(d / "01-neutron-sriov-agent.conf")
    assert dict(cfg.device_mappings) == {"sriovnet1": ("ens5",)}
    assert dict(cfg.bandwidths) == {"ens5": {"egress": 10000000, "ingress": 10000000}}
    assert dict(cfg.hypervisors) == {"ens5": "edpm-compute-0.ctlplane.example.com"}  # default_hypervisor: ''
    # what the agent gets from the same directory
    conf = agent_conf([], [str(d)])
    assert conf.host == cfg.host and conf.SRIOV_NIC.physical_device_mappings == ["sriovnet1:ens5"]
    assert conf.SRIOV_NIC.resource_provider_bandwidths == ["ens5:10000000:10000000"]
    # the module's way (agent_config_info on the node): the same agent as option values
    (values,) = [ac.agent_values(a) for a in ac.read_agent_set(
        [], [(p, Path(p).read_text()) for p in ac.conf_files(str(d), [f.name for f in d.iterdir()])])]
    assert values["agent_type"] == naming.SRIOV and values["physical_device_mappings"] == {"sriovnet1": ["ens5"]}


def test_edpm_sriov_agent_file_alone_was_refused_before_and_is_read_now(tmp_path):
    """The file alone (``--agent-config``), as minbw took it before: [SRIOV_NIC] is the SR-IOV agent's section."""
    d = edpm_config_dir(tmp_path)
    configs, unread = read_agent_units([str(d / "01-neutron-sriov-agent.conf")])
    assert not unread and configs[0].kind == naming.SRIOV and configs[0].host == EDPM_NODE["canonical_hostname"]


# ---------------------------------------------------------------- kolla-ansible: neutron.conf and the agent's ini

KOLLA = TOOLS / "kolla_neutron"


def merge(texts) -> str:
    """The file kolla-ansible writes from these sources (rendered), in order: its merge_configs action plugin's
    OverrideConfigParser parses each and writes the result, as the plugin's run() does."""
    spec = importlib.util.spec_from_file_location("merge_configs", KOLLA / "action_plugins" / "merge_configs.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    config = plugin.OverrideConfigParser()
    for text in texts:
        config.parse(StringIO(text))
    out = StringIO()
    config.write(out)
    return out.getvalue()
# kolla-ansible's defaults (ansible/group_vars/all/*.yml, ansible/roles/neutron/defaults/main.yml at 1a681814),
# evaluated for a compute with provider networks (enable_neutron_provider_networks: the compute gets bridge_mappings)
# and QoS on (enable_neutron_qos: the qos agent extension)
KOLLA_VALUES = {
    "inventory_hostname": "compute-1", "groups": {"network": ["network-1"], "compute": ["compute-1"]},
    "enable_neutron_dvr": False, "enable_nova_fake": False, "enable_neutron_sriov": False,
    "computes_need_external_bridge": True,  # group_vars/all/neutron.yml: ... or enable_neutron_provider_networks
    "neutron_physical_networks": "physnet1", "neutron_bridge_name": "br-ex",  # group_vars/all/neutron.yml
    "neutron_agent_extensions": [{"name": "qos", "enabled": True}],  # roles/neutron/defaults: agent_extensions
    "ovs_datapath": "system", "ovsdb_port": "6640", "ovsdb_timeout": 10,  # group_vars/all/openvswitch.yml, defaults
    "tunnel_interface_address": "192.0.2.11",  # 'tunnel' | kolla_address: the host's tunnel address
    # neutron.conf's [DEFAULT]
    "neutron_logging_debug": False, "service_name": "neutron-openvswitch-agent", "api_interface_address": "192.0.2.11",
    "neutron_server_listen_port": "9696", "neutron_api_workers": 2, "openstack_service_rpc_workers": 2,
    "neutron_plugin_agent": "openvswitch",
    "neutron_service_plugins": [{"name": "router"}, {"name": "qos"}, {"name": "placement"}],
    "enable_neutron_agent_ha": False, "rpc_transport_url": "rabbit://openstack:secret@192.0.2.10:5672//",
    "neutron_dns_domain": "openstacklocal", "enable_designate": False, "neutron_dns_integration": False,
}
# the operator's overrides kolla merges in (/etc/kolla/config/neutron.conf, .../neutron/openvswitch_agent.ini)
HOST_OVERRIDE = "[DEFAULT]\nhost = compute-1.example.com\n"
BANDWIDTH_OVERRIDE = "[OVS]\nresource_provider_bandwidths = br-ex:10000000:10000000\n"


def kolla_files(root: Path, neutron_overrides=(), agent_overrides=()) -> tuple[Path, Path]:
    """/etc/kolla/neutron-openvswitch-agent/{neutron.conf,openvswitch_agent.ini}: each template rendered, then the
    overrides merged in by kolla's merge_configs (its sections as written: [OVS] stays beside [ovs])."""
    neutron = root / "neutron.conf"
    neutron.write_text(merge([render(KOLLA / "templates" / "neutron.conf.j2", KOLLA_VALUES), *neutron_overrides]))
    agent = root / "openvswitch_agent.ini"
    agent.write_text(merge([render(KOLLA / "templates" / "openvswitch_agent.ini.j2", KOLLA_VALUES), *agent_overrides]))
    return neutron, agent


def test_kolla_host_in_neutron_conf_reaches_the_agent_file_read_after_it(tmp_path):
    """The agent's command line (kolla's neutron-openvswitch-agent.json.j2): --config-file neutron.conf --config-file
    openvswitch_agent.ini. [DEFAULT] host is in neutron.conf (the operator's override), the bandwidth in [OVS] of the
    agent's file: one agent, no --host needed."""
    neutron, agent = kolla_files(tmp_path, [HOST_OVERRIDE], [BANDWIDTH_OVERRIDE])
    assert "[ovs]\nbridge_mappings = physnet1:br-ex\n" in agent.read_text() and "[OVS]\n" in agent.read_text()
    assert "host" not in ac.read_ini(agent.read_text()).get("DEFAULT", {})
    configs, unread = read_agent_units([str(neutron), str(agent)])
    assert not unread
    (cfg,) = configs
    assert (cfg.kind, cfg.host, cfg.source) == (naming.OVS, "compute-1.example.com", str(agent))
    assert dict(cfg.device_mappings) == {"physnet1": ("br-ex",)}
    assert dict(cfg.bandwidths) == {"br-ex": {"egress": 10000000, "ingress": 10000000}}
    conf = agent_conf([str(neutron), str(agent)], [])
    assert conf.host == cfg.host and conf.OVS.bridge_mappings == ["physnet1:br-ex"]
    assert conf.OVS.resource_provider_bandwidths == ["br-ex:10000000:10000000"]


def test_kolla_without_a_host_anywhere_needs_one_and_says_which_files_it_read(tmp_path):
    """kolla writes no [DEFAULT] host (the agent takes its machine's name): minbw asks for --host, naming the files;
    on the node (agent_config_info) the machine's name is the host, as for the agent."""
    neutron, agent = kolla_files(tmp_path, agent_overrides=[BANDWIDTH_OVERRIDE])
    configs, unread = read_agent_units([str(neutron), str(agent)])
    assert not configs
    ((unit, error),) = unread
    assert unit.name == str(agent) and unit.kind == naming.OVS
    assert str(error) == (f"{agent}: the agent host is not known: no file of the agent ({neutron}, {agent}) sets "
                          "[DEFAULT] host. Fix: give --host (module option 'host') or set [DEFAULT] host in one of "
                          "them.")
    (cfg,) = read_agent_units([str(neutron), str(agent)], host="compute-1")[0]
    assert cfg.host == "compute-1"
    (cfg,) = ac.read_agent_set([(str(p), p.read_text()) for p in (neutron, agent)], machine_host="compute-1")
    assert cfg.host == "compute-1"


def test_kolla_and_an_sriov_agent_of_the_same_host_in_one_set(tmp_path):
    """One neutron.conf under two agents' files (the README tour's --agent-config ovs.ini --agent-config sriov.ini,
    with kolla's neutron.conf first): two agents, each reading neutron.conf and its own file."""
    neutron, agent = kolla_files(tmp_path, [HOST_OVERRIDE], [BANDWIDTH_OVERRIDE])
    sriov = tmp_path / "sriov_agent.ini"
    sriov.write_text("[sriov_nic]\nphysical_device_mappings = physnet2:ens6\nresource_provider_bandwidths = ens6:5:5\n")
    configs, unread = read_agent_units([str(neutron), str(agent), str(sriov)])
    assert not unread
    assert [(c.kind, c.host, c.source) for c in configs] == [(naming.OVS, "compute-1.example.com", str(agent)),
                                                             (naming.SRIOV, "compute-1.example.com", str(sriov))]


# ---------------------------------------------------------------- the rule that tells the agents of a set


def sections(text: str) -> dict:
    return ac.read_ini(text)


@pytest.mark.parametrize("files, dirs, expected", [
    # one agent's command line: neutron.conf, its own file, an override after it
    ([("neutron.conf", "[DEFAULT]\nhost = h0\n"), ("ovs.ini", "[OVS]\nbridge_mappings = p:br\n"),
      ("extra.ini", "[ovs]\nresource_provider_bandwidths = br:1:1\n")], [],
     [("ovs.ini", naming.OVS, ("neutron.conf", "ovs.ini", "extra.ini"))]),
    # two agents of one host: neutron.conf under each; the other agent's file left out
    ([("neutron.conf", "[DEFAULT]\nhost = h0\n"), ("ovs.ini", "[ovs]\nbridge_mappings = p:br\n"),
      ("sriov.ini", "[SRIOV_NIC]\nphysical_device_mappings = p:ens5\n")], [("d/01.conf", "[DEFAULT]\ndebug = 1\n")],
     [("ovs.ini", naming.OVS, ("neutron.conf", "ovs.ini", "d/01.conf")),
      ("sriov.ini", naming.SRIOV, ("neutron.conf", "sriov.ini", "d/01.conf"))]),
    # many hosts' files: each its own agent
    ([("h1.ini", "[DEFAULT]\nhost = h1\n[ovs]\nbridge_mappings = p:br\n"),
      ("h2.ini", "[DEFAULT]\nhost = h2\n[ovs]\nbridge_mappings = p:br\n")], [],
     [("h1.ini", naming.OVS, ("h1.ini",)), ("h2.ini", naming.OVS, ("h2.ini",))]),
    # no file of an agent's own among the files: the whole set is one agent's (edpm's config dir)
    ([("neutron.conf", "[DEFAULT]\nhost = h0\n")],
     [("d/01-agent.conf", "[SRIOV_NIC]\nphysical_device_mappings = p:e\n"),
      ("d/01-neutron.conf", "[DEFAULT]\ndebug = 1\n")],
     [("d/01-agent.conf", naming.SRIOV, ("neutron.conf", "d/01-agent.conf", "d/01-neutron.conf"))]),
    # nothing tells the kind: one agent of no kind (its error says what is missing)
    ([("neutron.conf", "[DEFAULT]\nhost = h0\n[ovs]\nintegration_bridge = br-int\n")], [],
     [("neutron.conf", None, ("neutron.conf",))]),
])
def test_the_agents_of_a_set(files, dirs, expected):
    agents = ac.agents_of([(p, sections(t)) for p, t in files], [(p, sections(t)) for p, t in dirs])
    assert [(a.name, a.kind, a.layers.files) for a in agents] == expected


def test_a_set_whose_files_tell_no_agent_kind_says_so():
    (unread,) = ac.read_agent_set([("neutron.conf", "[DEFAULT]\nhost = h0\n")])
    assert isinstance(unread, ac.UnreadAgent) and unread.host == "h0"
    assert "cannot tell the agent kind" in str(unread.error) and "neutron.conf" in str(unread.error)


def test_an_error_names_the_file_that_set_the_option():
    (unread,) = ac.read_agent_set([("ovs.ini", "[DEFAULT]\nhost = h0\n[ovs]\nbridge_mappings = p:br\n")],
                                  [("d/99-bw.conf", "[OVS]\nresource_provider_bandwidths = br:1:2:3\n")])
    assert unread.name == "ovs.ini" and unread.error.source == "d/99-bw.conf"
    assert str(unread.error).startswith("d/99-bw.conf: resource_provider_bandwidths: Cannot parse")


def test_a_file_that_does_not_parse_is_named_and_the_others_read():
    out = ac.read_agent_set([("bad.ini", "[ovs\n"),
                             ("ovs.ini", "[DEFAULT]\nhost = h0\n[ovs]\nbridge_mappings = p:br\n")])
    assert [type(x).__name__ for x in out] == ["UnreadAgent", "AgentConfig"]
    assert str(out[0].error) == ("bad.ini: not a valid ini file: at line 1, Invalid section (must end with ]): '[ovs'. "
                                 "Fix: every option must be NAME = VALUE under a [section] header, a continuation "
                                 "line indented right after it.")


def test_edit_ini_edits_the_group_whatever_the_case_of_its_header():
    text = "[SRIOV_NIC]\nphysical_device_mappings = p:ens5\n"
    out = ac.edit_ini(text, "sriov_nic", {"resource_provider_bandwidths": "ens5:1:1"})
    assert out == text + "resource_provider_bandwidths = ens5:1:1\n"
    with pytest.raises(ConfigError, match="cannot tell the agent kind"):
        ac.load_agent_ini("[DEFAULT]\nhost = h\n", source="x")
