#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_drift_info
short_description: Compare agent ini files, what the agents report to Neutron, and Placement's providers
description:
  - Turns each source into the bandwidth resource providers it stands for (Neutron's uuid5 UUIDs, names,
    traits, inventories) and compares them provider by provider, the agents' ini files (O(agent_configs),
    read on the host the module runs on), the C(configurations) the L2 agents report in their heartbeat
    (Neutron's agent list, O(neutron)), and what Placement holds.
  - A provider missing from one side, or with other traits or inventories there, is a row with its
    C(differences). Parents are not compared (the compute node's UUID is known to Placement only).
  - Fails when there is nothing to compare (no ini file, no agent reporting bandwidth to Neutron, no OVN chassis),
    with RV(nothing_compared) true and the options to give in RV(fix); on ML2/OVN, Neutron's agent list carries no
    bandwidth, so give O(ovn_sb_db) or O(ovn_chassis).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.agent_files
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
options:
  agent_configs:
    description:
      - OVS and SR-IOV agent ini files to compare, and the files their agents read beside them (C(neutron.conf)),
        in the order of the agents' C(--config-file) options (leave out to compare Neutron with Placement only).
    type: list
    elements: path
    default: []
  host:
    description: The agent host, over C([DEFAULT] host) of the files (needed only when no file of an agent sets it).
    type: str
  neutron:
    description: Read the agents' reports from Neutron (needs the network service in the catalog).
    type: bool
    default: true
  ovn_chassis:
    description:
      - ML2/OVN chassis as the computes hold them (the C(ini) side), one dict each with C(name), C(hostname),
        C(ovn-bridge-mappings) and C(ovn-cms-options) (RV(minbw.openstack.ovn_chassis_config#module:chassis)).
    type: list
    elements: dict
    default: []
  ovn_sb_db:
    description:
      - ML2/OVN, the C(agent) side, every chassis of the OVN southbound database (what Neutron's OVN placement
        extension reads), read with C(ovn-sbctl) on the host the module runs on (its C(--db); an empty string
        for ovn-sbctl's default). Neutron's agent list carries no bandwidth for OVN chassis.
    type: str
  ovn_sbctl:
    description: How to run ovn-sbctl, as a list of words (for example C([docker, exec, ovn_sb_db, ovn-sbctl])).
    type: list
    elements: str
    default: [ovn-sbctl]
'''

EXAMPLES = r'''
- name: Is Placement what the agents' files say?
  minbw.openstack.bandwidth_drift_info:
    cloud: mycloud
    agent_configs: [/etc/neutron/plugins/ml2/openvswitch_agent.ini]
  register: drift
  failed_when: not drift.ok
'''

RETURN = r'''
nothing_compared:
  description: True when the task failed because no side held a bandwidth provider to compare.
  returned: failure
  type: bool
ovn_chassis:
  description: With RV(nothing_compared), how many OVN chassis Neutron's agent list shows (an ML2/OVN cloud).
  returned: failure
  type: int
fix:
  description: With RV(nothing_compared), the options that give the comparison a source.
  returned: failure
  type: str
ok:
  description: Every side agrees on every provider, and no configuration was skipped.
  returned: always
  type: bool
skipped:
  description:
    - The agent ini files and chassis left out of the comparison, one line each naming it, its host, what is wrong
      and the fix (C(ini:) or C(agent:) the side); the others are compared. Their hosts have no rows.
  returned: always
  type: list
  elements: str
providers:
  description: >-
    One row per provider, C(uuid), C(name), C(agree), C(differences) and the provider as each side has it
    (C(ini), C(agent), C(placement); null where it is missing, left out where that side was not read).
  returned: always
  type: list
  elements: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def drift_info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.drift import DriftRequest, drift
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.providers import OvnSources

    p = module.params
    result = drift(module.cloud(), DriftRequest(
        tuple(p['agent_configs']), p['host'], p['neutron'], chassis=OvnSources(values=tuple(p['ovn_chassis'])),
        config_dirs=tuple(p['config_dirs'] or ()),
        southbound=OvnSources(southbound=p['ovn_sb_db'] is not None, sb_db=p['ovn_sb_db'] or None,
                              sbctl=tuple(p['ovn_sbctl'])),
        options=dict(neutron='neutron: false', ovn_chassis='ovn_chassis (minbw.openstack.ovn_chassis_config)',
                     ovs_db=None)))
    for warning in list(result.warnings) + ['skipped: %s' % line for line in result.skipped]:
        module.ansible.warn(warning)
    return module.result(False, **result.to_dict())


def main():
    MinbwModule(dict(agent_configs=dict(type='list', elements='path', default=[]),
                     config_dirs=dict(type='list', elements='path'), host=dict(type='str'),
                     neutron=dict(type='bool', default=True), ovn_chassis=dict(type='list', elements='dict', default=[]),
                     ovn_sb_db=dict(type='str'),
                     ovn_sbctl=dict(type='list', elements='str', default=['ovn-sbctl']))).run(drift_info)


if __name__ == '__main__':
    main()
