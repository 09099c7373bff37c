"""How a Neutron agent reads its configuration files, run for real: a ``cfg.ConfigOpts`` with Neutron's own options
registered as the Open vSwitch and SR-IOV agents register them (the groups ``OVS``, ``SRIOV_NIC``, ``ml2`` and
``DEFAULT``: their types, defaults and deprecated names), called with the agent's command line. The oracle of
minbw.neutron.agentconf's reading of layered files (tests/unit/neutron/test_agentconf_layers.py)."""
from __future__ import annotations

from neutron.conf import common as neutron_common
from neutron.conf.plugins.ml2 import config as ml2_config
from neutron.conf.plugins.ml2.drivers import ovs_conf
from neutron.conf.plugins.ml2.drivers.mech_sriov import agent_common as sriov_conf
from oslo_config import cfg


def option(opts, name: str) -> cfg.Opt:
    return next(o for o in opts if o.name == name)


HOST = option(neutron_common.core_opts, "host")  # a HostAddressOpt
TUNNELLED = option(ml2_config.ml2_opts, "tunnelled_network_rp_name")
OVS_OPTS = ovs_conf.ovs_opts
SRIOV_OPTS = sriov_conf.sriov_nic_opts


def agent_conf(files: list[str], dirs: list[str]) -> cfg.ConfigOpts:
    """The ConfigOpts of an agent started with ``--config-file F`` for each file, in order, then ``--config-dir D``
    for each directory (no default files or directories: only those given)."""
    conf = cfg.ConfigOpts()
    ovs_conf.register_ovs_opts(conf)
    sriov_conf.register_agent_sriov_nic_opts(conf)
    ml2_config.register_ml2_plugin_opts(conf)
    conf.register_opts([HOST])
    args = [a for f in files for a in ("--config-file", f)] + [a for d in dirs for a in ("--config-dir", d)]
    conf(args, project="minbw-oracle", default_config_files=[], default_config_dirs=[])
    return conf
