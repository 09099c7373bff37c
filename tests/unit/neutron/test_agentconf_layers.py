"""Layered agent configuration (--config-file ... --config-dir ...): differential against oslo.config itself.

The oracle is what an agent gets (tests/support/oracle/neutron_agent_conf.py): a ``cfg.ConfigOpts`` with Neutron's
own options registered as the agents register them, called with the agent's command line, each option read through
its attribute as the agent reads it. Registering the real options rather than parsing with oslo.config's
``ConfigParser`` alone is deliberate: an agent's values come from ConfigOpts' lookup (group names folded, the newest
file first, ``$`` substitution, the option type's conversion and check), which the parser alone does not do.
minbw's side is :func:`minbw.neutron.agentconf.layer` over :func:`read_ini` of the same files, its raw value given the
option's own type."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from oslo_config import types

from minbw.errors import ConfigError
from minbw.neutron import agentconf as ac
from minbw.neutron import naming
from minbw.ops.agent_files import dir_conf_files
from tests.support.oracle.neutron_agent_conf import HOST, OVS_OPTS, SRIOV_OPTS, TUNNELLED, agent_conf, option

# (the group as Neutron registers it, the option, minbw's group: the one oslo.config folds the name to)
PROBES = ([("OVS", o, "ovs") for o in ac.OPTIONS[naming.OVS]]
          + [("SRIOV_NIC", o, "sriov_nic") for o in ac.OPTIONS[naming.SRIOV]]
          + [(None, "host", "DEFAULT"), ("ml2", "tunnelled_network_rp_name", "ml2")])
OPT_OF = {**{("OVS", o): option(OVS_OPTS, o) for o in ac.OPTIONS[naming.OVS]},
          **{("SRIOV_NIC", o): option(SRIOV_OPTS, o) for o in ac.OPTIONS[naming.SRIOV]},
          (None, "host"): HOST, ("ml2", "tunnelled_network_rp_name"): TUNNELLED}


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception:  # noqa: BLE001 - oslo.config raises its own errors (a type's ValueError wrapped), minbw its own
        return ("error",)


# ------------------------------------------------------------------ generated layered sets

# weighted towards the groups and options the agents read (each name's case varied)
SECTIONS = ["DEFAULT"] * 3 + ["default", "Default"] + ["ovs", "OVS"] * 2 + ["Ovs", "sriov_nic", "SRIOV_NIC", "ml2",
                                                                          "ML2", "agent", " ovs"]
KEYS = ["host"] * 3 + ["Host", "bridge_mappings", "bridge_mappings", "Bridge_Mappings", "physical_device_mappings",
                       "resource_provider_bandwidths", "resource_provider_hypervisors",
                       "resource_provider_default_hypervisor", "resource_provider_inventory_defaults",
                       "tunnelled_network_rp_name", "other"]
values = st.one_of(
    st.sampled_from(["", "h1", "h2", "compute-1", "p:br-a", "p:br-a,q:br-b", "br-a:1000:1000", "br-a::1,br-b:5:",
                     "reserved:10", "br-a:hv1", '"quoted"', "'h3'", '"', "a # not a comment", "x$$y", "x\\$y",
                     "$host", "${ovs.bridge_mappings}", "$nosuch", "a$", "a:b=c", "1.2.3.4"]),
    st.text(alphabet="ab12:-,= '\"$\\#;.", max_size=12))
assignment = st.builds(lambda k, sep, v, tail, more: [f"{k}{sep}{v}{tail}", *more], st.sampled_from(KEYS),
                       st.sampled_from([" = ", "=", ": ", ":", " =", "\t= "]), values, st.sampled_from(["", " ", "\t"]),
                       st.lists(st.builds(lambda ind, v: ind + v, st.sampled_from(["  ", "\t", " "]), values),
                                max_size=2))  # continuation lines
block = st.one_of(
    st.builds(lambda s: [f"[{s}]"], st.sampled_from(SECTIONS)),
    assignment, assignment,
    st.sampled_from([[""], ["   "], ["# a comment"], ["; a comment"], ["#[ovs]"]]),
)
# rarely, a line oslo.config refuses
bad_line = st.sampled_from(["garbage", "[ovs", "[]", "= v", "\ufeff[ovs]"])


@st.composite
def ini_text(draw):
    lines = [x for b in draw(st.lists(block, max_size=8)) for x in b]
    head = [] if draw(st.integers(0, 14)) == 0 else [f"[{draw(st.sampled_from(SECTIONS))}]"]
    if draw(st.booleans()):  # as the tools write them: the host, then an agent section's options
        agent = draw(st.sampled_from(["ovs", "OVS", "sriov_nic", "SRIOV_NIC"]))
        mappings = "bridge_mappings" if agent.lower() == "ovs" else "physical_device_mappings"
        head = [f"[{draw(st.sampled_from(['DEFAULT', 'default']))}]", f"host = {draw(values)}", f"[{agent}]",
                f"{mappings} = {draw(values)}", f"resource_provider_bandwidths = {draw(values)}"] + head
    lines = head + lines
    if draw(st.integers(0, 29)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(bad_line))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines) + draw(st.sampled_from([end, ""]))


DIR_NAMES = ["01-neutron.conf", "01-neutron-sriov-agent.conf", "02-b.conf", "10.conf", "B.conf", "b.conf",
             "a.ini", ".hidden.conf", "conf"]
layered_sets = st.tuples(
    st.lists(ini_text(), min_size=1, max_size=4),  # the --config-file files, in order
    st.one_of(st.none(), st.dictionaries(st.sampled_from(DIR_NAMES), ini_text(), max_size=3)))  # a --config-dir


def write(root: Path, files: list[str], directory: dict | None) -> tuple[list[str], list[str]]:
    paths = []
    for i, text in enumerate(files):
        (root / f"f{i}.ini").write_bytes(text.encode())
        paths.append(str(root / f"f{i}.ini"))
    dirs = []
    if directory is not None:
        (root / "conf.d").mkdir()
        for name, text in directory.items():
            (root / "conf.d" / name).write_bytes(text.encode())
        dirs.append(str(root / "conf.d"))
    return paths, dirs


def minbw_layers(paths: list[str], dirs: list[str]) -> ac.Layers:
    """minbw's reading of the same files: read_ini of each, the dirs' files listed by conf_files, layered."""
    every = paths + [f for d in dirs for f in dir_conf_files(d, "config_dirs")]
    return ac.layer([(p, ac.read_ini(Path(p).read_text(), p)) for p in every])


@settings(max_examples=300, deadline=None)
@given(layered_sets)
def test_layered_files_read_as_the_agents_read_them(case):
    """Every option minbw reads, in every generated set: oslo.config's value equals minbw's raw value given the
    option's type (the option's default where no file sets it), or both refuse (a line oslo.config cannot parse;
    a value the type refuses; a ``$`` reference, which minbw refuses where oslo.config looks it up)."""
    files, directory = case
    with tempfile.TemporaryDirectory() as tmp:
        paths, dirs = write(Path(tmp), files, directory)
        theirs = outcome(lambda: agent_conf(paths, dirs))
        ours = outcome(lambda: minbw_layers(paths, dirs))
        assert (theirs[0], ours[0]) in (("ok", "ok"), ("error", "error")), (theirs, ours)
        if ours[0] == "error":
            with pytest.raises(ConfigError, match="not a valid ini file: at line "):
                minbw_layers(paths, dirs)
            return
        conf, layers = theirs[1], ours[1]
        for group, option, ours_group in PROBES:
            opt = OPT_OF[group, option]
            oslo = outcome(lambda: conf[group][option] if group else conf[option])
            try:
                raw = layers.value(ours_group, option)
            except ConfigError as e:  # a $ reference: oslo.config substitutes it (or fails to)
                assert "stands for another option's value" in str(e)
                assert oslo[0] == "error" or oslo[1] != layers.group(ours_group)[option], (option, oslo)
                continue
            mine = outcome(lambda: opt.default if raw is None else opt.type(raw))
            assert oslo == mine, (group, option, raw, oslo, mine)
        # the host as minbw takes it from the files: the agent's, or refused where the agent does not start
        if "host" in layers.group("DEFAULT") and "$" not in layers.group("DEFAULT")["host"]:
            assert outcome(lambda: conf.host) == outcome(layers.host)
        # one agent's command line (at most one file of an agent's own): its agent reads the whole set
        agents = ac.agents_of([(p, ac.read_ini(Path(p).read_text(), p)) for p in paths],
                              [(f, ac.read_ini(Path(f).read_text(), f)) for f in layers.files[len(paths):]])
        if sum(bool(ac.own_kinds(ac.read_ini(Path(p).read_text()))) for p in paths) <= 1:
            assert all(a.layers.groups == layers.groups for a in agents)


def test_oslo_config_rules_minbw_follows():
    """The rules the generated sets exercise, each shown once with both readers (what docs/operators.md says)."""
    with tempfile.TemporaryDirectory() as tmp:
        made = iter(range(10))

        def both(files: list[str], directory: dict | None = None):
            root = Path(tmp) / str(next(made))
            root.mkdir()
            paths, dirs = write(root, files, directory)
            return agent_conf(paths, dirs), minbw_layers(paths, dirs)

        # a section's name in any case is its group; [DEFAULT] only as written
        conf, layers = both(["[SRIOV_NIC]\nphysical_device_mappings = p:ens5\n[default]\nhost = no\n"])
        assert conf.SRIOV_NIC.physical_device_mappings == ["p:ens5"] == \
            ac.parse_list(layers.value("sriov_nic", "physical_device_mappings"))
        assert conf.host != "no" and layers.value("DEFAULT", "host") is None
        # later files win option by option; a later section without the option keeps the earlier value
        conf, layers = both(["[DEFAULT]\nhost = h1\n[ovs]\nbridge_mappings = p:br-a\n",
                             "[OVS]\nresource_provider_bandwidths = br-a:1:1\n"])
        assert conf.host == "h1" == layers.host() and conf.OVS.bridge_mappings == ["p:br-a"]
        # the config dir's *.conf files, sorted, after every --config-file; names starting with a dot are skipped
        conf, layers = both(["[DEFAULT]\nhost = file\n"], {"10.conf": "[DEFAULT]\nhost = ten\n",
                                                          "02.conf": "[DEFAULT]\nhost = two\n",
                                                          ".z.conf": "[DEFAULT]\nhost = hidden\n",
                                                          "z.ini": "[DEFAULT]\nhost = ini\n"})
        assert conf.host == "ten" == layers.host()
        # within a file: the last assignment wins, sections of a group merge; option names are case-sensitive
        conf, layers = both(["[ovs]\nbridge_mappings = a:b\n[agent]\n[OVS]\nbridge_mappings = c:d\n"
                             "Resource_Provider_Bandwidths = d:1:1\n"])
        assert conf.OVS.bridge_mappings == ["c:d"] and conf.OVS.resource_provider_bandwidths == []
        assert layers.value("ovs", "bridge_mappings") == "c:d" and layers.value("ovs", ac.BANDWIDTHS) is None
        # a value goes on in indented lines (a comment ends it); quotes around it go; no inline comment
        conf, layers = both(["[DEFAULT]\nhost = 'h1'\n[ovs]\nbridge_mappings = a:b,\n  c:d  # e\n"])
        assert conf.OVS.bridge_mappings == ["a:b", "c:d  # e"] == ac.parse_list(layers.value("ovs", "bridge_mappings"))
        assert conf.host == "h1" == layers.host()


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(alphabet="ab1-.:%_ fF0", max_size=12),
                 st.sampled_from(["1.2.3.4", "01.2.3.4", "::1", "fe80::1%eth0", "a.", "12", "-a", "a" * 64])))
def test_host_is_checked_as_oslo_config_checks_it(value):
    """[DEFAULT] host is a HostAddressOpt: a value it refuses stops the agent, and minbw refuses it too."""
    assert outcome(lambda: ac.host_address(value)) == outcome(lambda: types.HostAddress()(value))


def test_a_reference_to_another_option_is_refused_naming_it():
    layers = ac.layer([("a.ini", ac.read_ini("[DEFAULT]\nhost = $my_ip\n[ovs]\nbridge_mappings = p:br$$1\n"))])
    assert layers.value("ovs", "bridge_mappings") == "p:br$1"
    with pytest.raises(ConfigError) as e:
        layers.host()
    assert str(e.value) == ("a.ini: host: $my_ip stands for another option's value (oslo.config substitutes it), "
                            "which minbw does not read. Fix: write the value itself (a $ that is meant as a $: $$).")
