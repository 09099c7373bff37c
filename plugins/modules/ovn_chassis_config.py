#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: ovn_chassis_config
short_description: Set the bandwidth options of an ML2/OVN chassis, validated as Neutron reads them
version_added: 0.2.0
author:
  - minbw developers (@minbw)
description:
  - On a compute with ML2/OVN, Neutron's OVN placement extension reads the bandwidth from the chassis's
    C(ovn-cms-options) (C(resource_provider_bandwidths), C(resource_provider_inventory_defaults),
    C(resource_provider_hypervisors)) and C(ovn-bridge-mappings), which ovn-controller copies from the
    compute's Open vSwitch C(external_ids) into the southbound C(Chassis) table. This module sets them
    in the Open vSwitch database with C(ovs-vsctl), in one transaction.
  - The other options of C(ovn-cms-options) (for example C(enable-chassis-as-gw),
    C(availability-zones=...)) are kept as written and in their order.
  - The new options are read back with Neutron's own parsing rules before anything is written; the task
    fails, writing nothing, when Neutron would not report a bridge (not in the bridge mappings), when
    another cms option would shadow one of ours (Neutron matches them by substring), or when Placement
    would refuse an inventory.
  - OVN has no default hypervisor, so every bandwidth bridge gets a C(resource_provider_hypervisors) entry
    (O(resource_provider_default_hypervisor) or the chassis host name when not given), because Neutron
    silently skips a bridge without one.
  - Neutron reads the change without a restart (the chassis update event). Needs only Python >= 3.9 and
    C(ovs-vsctl) on the target.
options:
  state:
    description:
      - V(present) sets the bandwidth options; V(absent) removes the three bandwidth options from
        C(ovn-cms-options) (Neutron then deletes the bridges' providers).
    type: str
    default: present
    choices: [present, absent]
  bridge_mappings:
    description:
      - Physical network name to bridge (C(ovn-bridge-mappings)). Left as it is when not given.
    type: dict
  resource_provider_bandwidths:
    description:
      - Bridge to its bandwidth in kilobits per second, as a dict with the keys C(egress) and/or C(ingress)
        (a direction left out or 0 has no inventory). The bridge C(rp_tunnelled) stands for tunnelled networks.
    type: dict
  resource_provider_inventory_defaults:
    description:
      - Inventory fields of each bandwidth inventory, from C(allocation_ratio), C(min_unit), C(max_unit),
        C(reserved) and C(step_size).
    type: dict
  resource_provider_hypervisors:
    description:
      - Bridge to the name of the compute node's resource provider (C(openstack hypervisor list)).
    type: dict
  resource_provider_default_hypervisor:
    description:
      - The hypervisor name written for bandwidth bridges not in O(resource_provider_hypervisors).
      - Defaults to the chassis host name.
    type: str
  hostname:
    description:
      - The chassis host name. Defaults to C(external_ids:hostname), else the target's host name (as
        ovn-controller finds it).
    type: str
  db:
    description:
      - The Open vSwitch database (C(ovs-vsctl --db)), e.g. C(unix:/run/openvswitch/db.sock). Defaults to
        ovs-vsctl's own default.
    type: str
  ovs_vsctl:
    description:
      - How to run ovs-vsctl, as a list of words, e.g. C([docker, exec, openvswitch_vswitchd, ovs-vsctl]) on
        kolla-ansible computes.
    type: list
    elements: str
    default: [ovs-vsctl]
notes:
  - Supports check mode and diff mode (the two C(external_ids) values before and after).
  - kolla-ansible rewrites C(ovn-cms-options) on every deploy and reconfigure, and openstack-ansible on
    gateway hosts; see the filter P(minbw.openstack.ovn_cms_options#filter) and docs/operators.md.
'''

EXAMPLES = r'''
- name: Bandwidth of br-ex on this chassis (kept beside enable-chassis-as-gw)
  minbw.openstack.ovn_chassis_config:
    bridge_mappings: {physnet1: br-ex}
    resource_provider_bandwidths:
      br-ex: {egress: 10000000, ingress: 10000000}
    resource_provider_inventory_defaults: {allocation_ratio: 1.0, min_unit: 1000}
  register: chassis

- name: Sync the providers from the controller with what the chassis now says
  minbw.openstack.bandwidth_providers:
    ovn_chassis: ["{{ chassis.chassis }}"]
  delegate_to: localhost
'''

RETURN = r'''
external_ids:
  description: The two C(external_ids) keys as they are after the task (null when absent).
  returned: always
  type: dict
  sample: {"ovn-bridge-mappings": "physnet1:br-ex",
           "ovn-cms-options": "enable-chassis-as-gw,resource_provider_bandwidths=br-ex:10000000:10000000,resource_provider_hypervisors=br-ex:compute1"}
updates:
  description: The keys written (null when removed). Empty when nothing changed.
  returned: always
  type: dict
chassis:
  description:
    - The chassis as O(minbw.openstack.bandwidth_providers#module:ovn_chassis) takes it, to sync the providers
      from elsewhere.
  returned: always
  type: dict
  sample: {"name": "6f1c3a9e-...", "hostname": "compute1", "ovn-bridge-mappings": "physnet1:br-ex",
           "ovn-cms-options": "resource_provider_bandwidths=br-ex:10000000:10000000,resource_provider_hypervisors=br-ex:compute1"}
'''

import json
import socket

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
# The core's own code, shipped with the collection: this module needs no minbw package on the host.
from ansible_collections.minbw.openstack.plugins.module_utils.core.errors import ConfigError
from ansible_collections.minbw.openstack.plugins.module_utils.core.neutron import ovn


def vsctl(module, *args):
    p = module.params
    argv = list(p['ovs_vsctl']) + (['--db=%s' % p['db']] if p['db'] else []) + ['--timeout=30'] + list(args)
    rc, out, err = module.ansible.run_command(argv)
    if rc != 0:
        raise ConfigError('%s failed (exit %s): %s' % (' '.join(argv), rc, ' '.join(err.split()) or 'no message'),
                          source='the Open vSwitch database')
    return out


def external_ids(module):
    rows = ovn.ovsdb_rows(json.loads(vsctl(module, *ovn.OVS_LIST)), 'the Open vSwitch database')
    if len(rows) != 1:
        raise ConfigError('expected one Open_vSwitch row, found %d (ovs-vsctl init?)' % len(rows),
                          source='the Open vSwitch database')
    return dict(rows[0]['external_ids'] or {})


def shown(keys):
    return ''.join('%s=%s\n' % (k, keys[k]) for k in ovn.CHASSIS_KEYS if keys.get(k) is not None)


def ensure(module):
    p = module.params
    ids = external_ids(module)
    hostname = p['hostname'] or ids.get('hostname') or socket.gethostname()
    current = dict((k, ids.get(k)) for k in ovn.CHASSIS_KEYS)
    values = dict((o, p[o]) for o in ovn.VALUE_OPTIONS)
    after = ovn.configured_chassis(current, values, hostname, name=ids.get('system-id') or '', state=p['state'])
    updates = dict((k, after[k]) for k in ovn.CHASSIS_KEYS if after[k] != current[k])
    if updates and not module.check_mode:
        vsctl(module, '--no-wait', *ovn.vsctl_update_args(updates))
        ids = external_ids(module)
        now = dict((k, ids.get(k)) for k in ovn.CHASSIS_KEYS)
        if now != after:
            raise ConfigError('ovs-vsctl wrote %r but the database reads back %r' % (after, now),
                              source='the Open vSwitch database')
    chassis = ovn.Chassis(name=ids.get('system-id') or hostname, hostname=hostname,
                          bridge_mappings=after[ovn.BRIDGE_MAPPINGS], cms_options=after[ovn.CMS_OPTIONS])
    diff = dict(before=shown(current), after=shown(after), before_header='external_ids', after_header='external_ids')
    return module.result(bool(updates), diff=diff, external_ids=after, updates=updates, chassis=chassis.to_dict())


def main():
    MinbwModule(dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        bridge_mappings=dict(type='dict'),
        resource_provider_bandwidths=dict(type='dict'),
        resource_provider_inventory_defaults=dict(type='dict'),
        resource_provider_hypervisors=dict(type='dict'),
        resource_provider_default_hypervisor=dict(type='str'),
        hostname=dict(type='str'),
        db=dict(type='str'),
        ovs_vsctl=dict(type='list', elements='str', default=['ovs-vsctl']),
    ), cloud=False).run(ensure)


if __name__ == '__main__':
    main()
