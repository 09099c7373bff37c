#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: agent_config_info
short_description: Read Neutron agents' bandwidth configuration from their ini files, as the agents parse it
version_added: 0.2.0
author:
  - minbw developers (@minbw)
description:
  - Reads Open vSwitch and SR-IOV agent ini files on the target and parses and validates their bandwidth
    options as the agent does at start-up (Neutron's own error messages). Changes nothing.
  - Returns each agent as option values (RV(agents)) in the shape O(minbw.openstack.bandwidth_providers#module:agents)
    takes, so the files can be read on the computes and the providers synced from the controller
    (C(delegate_to)), where the only host that needs the C(minbw) package and openstacksdk is the controller.
  - Needs only Python >= 3.9 on the target, no C(minbw) package (the parser travels with the module).
options:
  agent_configs:
    description:
      - Agent ini files on the target, for example C(/etc/neutron/plugins/ml2/openvswitch_agent.ini)
        (section C([ovs])) and C(/etc/neutron/plugins/ml2/sriov_agent.ini) (section C([sriov_nic])), and the files
        their agents read beside them (C(/etc/neutron/neutron.conf)), in the order of the agents' C(--config-file)
        options (how they are layered - O(config_dirs)).
      - The agent type of each file is told by its C(bridge_mappings) or C(physical_device_mappings).
      - At least one of O(agent_configs) and O(config_dirs) is required.
    type: list
    elements: path
  host:
    description:
      - The agents' host, which is also the default hypervisor name.
      - Defaults to C([DEFAULT] host) as each agent reads it (from the last of its files that sets it), else the
        target's host name (as the agent does).
    type: str
requirements:
  - python >= 3.9 on the target. Nothing else.
extends_documentation_fragment:
  - minbw.openstack.agent_files
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: Read the agents' ini files on each compute
  minbw.openstack.agent_config_info:
    agent_configs:
      - /etc/neutron/plugins/ml2/openvswitch_agent.ini
      - /etc/neutron/plugins/ml2/sriov_agent.ini
  register: agent_files

- name: Read an edpm-ansible node's SR-IOV agent, all of whose files are in its config dir
  minbw.openstack.agent_config_info:
    config_dirs: [/var/lib/openstack/neutron-sriov-agent]
  register: sriov_agent

- name: Sync this compute's providers from the controller (the only host with minbw and openstacksdk)
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    agents: "{{ agent_files.agents }}"
  delegate_to: localhost
'''

RETURN = r'''
agents:
  description:
    - One dict per agent (each file that is an agent's own, in the order given) - C(agent_type), C(host) and the
      agent's bandwidth options as
      structured values, with Neutron's defaults spelled out (every device's hypervisor, the inventory
      defaults), as O(minbw.openstack.bandwidth_providers#module:agents) and M(minbw.openstack.agent_config) take them.
  returned: always
  type: list
  elements: dict
  sample:
    - agent_type: openvswitch
      host: devstack0
      bridge_mappings: {"public": "br-ex", "physnet0": "br-test"}
      resource_provider_bandwidths:
        br-test: {"egress": 1500, "ingress": 1500}
        br-ex: {"egress": null, "ingress": 1}
      resource_provider_inventory_defaults: {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}
      resource_provider_hypervisors: {"br-ex": "devstack0", "br-test": "devstack0", "rp_tunnelled": "devstack0"}
      resource_provider_packet_processing_without_direction: {}
      resource_provider_packet_processing_inventory_defaults: {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}
'''

import os
import socket

from ansible.module_utils.common.text.converters import to_text
from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
# The core's own code, shipped with the collection: this module needs no minbw package on the host.
from ansible_collections.minbw.openstack.plugins.module_utils.core.errors import ConfigError
from ansible_collections.minbw.openstack.plugins.module_utils.core.neutron.agentconf import (
    UnreadAgent, agent_values, conf_files, read_agent_set)


def _text(path, option):
    """The file's text, or the ConfigError of a file that cannot be read."""
    try:
        with open(path, 'rb') as f:
            return to_text(f.read(), errors='surrogate_or_strict')
    except (IOError, OSError) as e:
        return ConfigError(e.strerror, option=option, source=path)


def read(module):
    p = module.params
    dir_files = []
    for directory in p['config_dirs'] or ():
        try:
            names = os.listdir(directory)
        except (IOError, OSError) as e:
            raise ConfigError(e.strerror, option='config_dirs', source=directory)
        dir_files += [(path, _text(path, 'config_dirs')) for path in conf_files(directory, names)]
    files = [(path, _text(path, 'agent_configs')) for path in p['agent_configs'] or ()]
    agents = []
    for agent in read_agent_set(files, dir_files, p['host'], machine_host=socket.gethostname()):
        if isinstance(agent, UnreadAgent):
            raise agent.error
        agents.append(agent_values(agent))
    return module.result(False, agents=agents)


def main():
    MinbwModule(dict(
        agent_configs=dict(type='list', elements='path'),
        config_dirs=dict(type='list', elements='path'),
        host=dict(type='str'),
    ), cloud=False, required_one_of=[('agent_configs', 'config_dirs')]).run(read)


if __name__ == '__main__':
    main()
