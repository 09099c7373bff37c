#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: agent_config
short_description: Set the bandwidth options of a Neutron agent's ini file, validated as Neutron does
version_added: 0.1.0
author:
  - minbw developers (@minbw)
description:
  - Edits an existing ini file in place and keeps every other line of it (comments, other
    sections, other options, their order).
  - O(agent_type=openvswitch) and O(agent_type=sriov) set the bandwidth and packet-rate options of
    the agent section (C([ovs]) of C(openvswitch_agent.ini) or C(ml2_conf.ini), C([sriov_nic]) of
    C(sriov_agent.ini)). Options that are not given keep the value the file has.
  - After the edit, the agent section of the new text is parsed and validated as the agent does at
    start-up, with Neutron's own error messages (for example
    C(Device name X is missing from device mappings)), and the providers Neutron would build from it
    are checked against what Placement accepts. A bad value fails the task and leaves the file as it was.
  - O(agent_type=neutron_server) makes sure C([DEFAULT] service_plugins) of C(neutron.conf) includes
    C(qos) and C(placement); O(agent_type=ml2) makes sure C([ml2] extension_drivers) of
    C(ml2_conf.ini) includes C(qos). Other entries and their order are kept; missing ones are appended.
  - Values are compared with what the file holds as Neutron parses them, so a value written with
    other spacing is not rewritten.
  - The agent must be restarted to use the new values (role P(minbw.openstack.bandwidth_agent#role) can do it).
options:
  path:
    description:
      - The ini file on the target. It must exist.
    type: path
    required: true
  agent_type:
    description:
      - V(openvswitch) for the C([ovs]) section of the Open vSwitch agent.
      - V(sriov) for the C([sriov_nic]) section of the SR-IOV NIC agent.
      - V(neutron_server) for C(neutron.conf), V(ml2) for C(ml2_conf.ini) of the Neutron server.
    type: str
    required: true
    choices: [openvswitch, sriov, neutron_server, ml2]
  host:
    description:
      - The agent's host name, which is also the default hypervisor name. Only used to validate
        the packet-processing options, where an empty hypervisor name means this host.
      - Defaults to C([DEFAULT] host) of the file, else the target's host name (as the agent does).
    type: str
  bridge_mappings:
    description:
      - Open vSwitch only. Physical network name to bridge, as C(physnet:bridge) pairs.
    type: dict
  physical_device_mappings:
    description:
      - SR-IOV only. Physical network name to a device name or a list of device names (PFs).
    type: dict
  resource_provider_bandwidths:
    description:
      - Device (bridge or PF) to its bandwidth in kilobits per second, as a dict with the keys
        C(egress) and C(ingress). Either key may be left out or null, and the whole value may be
        null; an unset or 0 direction gets no inventory.
      - Each device must be in O(bridge_mappings) / O(physical_device_mappings) (or be
        C(rp_tunnelled) for Open vSwitch).
    type: dict
  resource_provider_inventory_defaults:
    description:
      - Inventory fields of every bandwidth inventory besides C(total)
        (C(allocation_ratio), C(min_unit), C(max_unit), C(reserved), C(step_size)).
    type: dict
  resource_provider_hypervisors:
    description:
      - Device to the hypervisor name (the compute node's root provider) its provider hangs under.
    type: dict
  resource_provider_default_hypervisor:
    description:
      - The hypervisor name for devices not in O(resource_provider_hypervisors).
        Neutron's default is the agent host.
    type: str
  resource_provider_packet_processing_without_direction:
    description:
      - Open vSwitch only. Hypervisor name to the packet rate in kilopackets per second, both
        directions together. The key V('') means this agent's host.
      - Mutually exclusive with O(resource_provider_packet_processing_with_direction) in the file.
    type: dict
  resource_provider_packet_processing_with_direction:
    description:
      - Open vSwitch only. Hypervisor name to a dict with the keys C(egress) and C(ingress)
        (kilopackets per second). The key V('') means this agent's host.
    type: dict
  resource_provider_packet_processing_inventory_defaults:
    description:
      - Open vSwitch only. Inventory fields of the packet-rate inventories besides C(total).
    type: dict
  backup:
    description:
      - Keep a time-stamped copy of the file when it changes.
    type: bool
    default: false
notes:
  - An empty value (V({}) or V('')) removes the option from the file, so Neutron's default applies.
  - The file is written through a temporary file and an atomic rename; its mode and owner are kept.
requirements:
  - python >= 3.9 on the target. Nothing else - the code that parses and validates the files travels
    with the module (the collection's C(module_utils/core), the core of minbw shipped with the collection).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Bandwidth of the Open vSwitch agent
  minbw.openstack.agent_config:
    path: /etc/neutron/plugins/ml2/openvswitch_agent.ini
    agent_type: openvswitch
    bridge_mappings:
      public: br-ex
      physnet0: br-test
    resource_provider_bandwidths:
      br-test: {egress: 1500, ingress: 1500}
      br-ex: {ingress: 1}

- name: Bandwidth of the SR-IOV agent, reported under another hypervisor name
  minbw.openstack.agent_config:
    path: /etc/neutron/plugins/ml2/sriov_agent.ini
    agent_type: sriov
    physical_device_mappings:
      physnet0: [ens5, ens6]
    resource_provider_bandwidths:
      ens5: {egress: 100000, ingress: 100000}
      ens6: {egress: 100000, ingress: 100000}
    resource_provider_inventory_defaults:
      reserved: 1000
    resource_provider_default_hypervisor: compute0.example.org

- name: Packet rate of the Open vSwitch agent on this host
  minbw.openstack.agent_config:
    path: /etc/neutron/plugins/ml2/openvswitch_agent.ini
    agent_type: openvswitch
    resource_provider_packet_processing_without_direction:
      '': 1000000

- name: Neutron server loads the qos and placement service plugins
  minbw.openstack.agent_config:
    path: /etc/neutron/neutron.conf
    agent_type: neutron_server

- name: ML2 loads the qos extension driver
  minbw.openstack.agent_config:
    path: /etc/neutron/plugins/ml2/ml2_conf.ini
    agent_type: ml2
'''

RETURN = r'''
path:
  description: The file.
  returned: always
  type: str
  sample: /etc/neutron/plugins/ml2/openvswitch_agent.ini
section:
  description: The section edited.
  returned: always
  type: str
  sample: ovs
updates:
  description: The options written (or, with null, removed), as their raw ini values. Empty when nothing changed.
  returned: always
  type: dict
  sample: {"resource_provider_bandwidths": "br-test:1500:1500,br-ex::1"}
configurations:
  description:
    - The agent's bandwidth configuration as Neutron parses it from the new file, in the shape of the
      C(configurations) the agent reports in its heartbeat.
  returned: when agent_type is openvswitch or sriov
  type: dict
  sample:
    bridge_mappings: {"public": "br-ex", "physnet0": "br-test"}
    resource_provider_bandwidths:
      br-test: {"egress": 1500, "ingress": 1500}
      br-ex: {"egress": null, "ingress": 1}
    resource_provider_inventory_defaults: {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}
    resource_provider_hypervisors: {"br-ex": "devstack0", "br-test": "devstack0", "rp_tunnelled": "devstack0"}
    resource_provider_packet_processing_inventory_defaults: {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}
backup_file:
  description: The copy of the original file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/neutron/neutron.conf.12345.2024-01-01@00:00:00~
'''

import os
import socket
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
# The core's own code, shipped with the collection: this module needs no minbw package on the host.
from ansible_collections.minbw.openstack.plugins.module_utils.core.errors import ConfigError
from ansible_collections.minbw.openstack.plugins.module_utils.core.neutron.agentconf import RENDER
from ansible_collections.minbw.openstack.plugins.module_utils.core.plan.agent_file import plan_agent_file


def ensure(module):
    params = module.params
    path = params['path']
    if not os.path.isfile(path):
        raise ConfigError('does not exist or is not a file: agent_config edits an existing file', source=path)
    with open(path, 'rb') as f:
        before = to_text(f.read(), errors='surrogate_or_strict')
    edit = plan_agent_file(path, before, params['agent_type'], {o: params[o] for o in RENDER}, host=params['host'],
                           machine_host=socket.gethostname())
    result = dict(path=path, section=edit.section, updates=dict(edit.updates))
    if edit.configurations is not None:
        result['configurations'] = edit.configurations
    if edit.changed and not module.check_mode:
        if params['backup']:
            result['backup_file'] = module.ansible.backup_local(path)
        fd, tmp = tempfile.mkstemp(dir=module.ansible.tmpdir)
        with os.fdopen(fd, 'wb') as f:
            f.write(to_bytes(edit.after))
        module.ansible.atomic_move(tmp, path, unsafe_writes=False)
    return module.result(edit.changed, diff=edit.diff(), **result)


def main():
    MinbwModule(dict(
        path=dict(type='path', required=True),
        agent_type=dict(type='str', required=True, choices=['openvswitch', 'sriov', 'neutron_server', 'ml2']),
        host=dict(type='str'),
        bridge_mappings=dict(type='dict'),
        physical_device_mappings=dict(type='dict'),
        resource_provider_bandwidths=dict(type='dict'),
        resource_provider_inventory_defaults=dict(type='dict'),
        resource_provider_hypervisors=dict(type='dict'),
        resource_provider_default_hypervisor=dict(type='str'),
        resource_provider_packet_processing_without_direction=dict(type='dict'),
        resource_provider_packet_processing_with_direction=dict(type='dict'),
        resource_provider_packet_processing_inventory_defaults=dict(type='dict'),
        backup=dict(type='bool', default=False),
    ), cloud=False).run(ensure)


if __name__ == '__main__':
    main()
