#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_enforcement_info
short_description: Check that a host's Open vSwitch data plane enforces the minimum bandwidth Placement reserved
version_added: 0.2.0
author:
  - minbw developers (@minbw)
description:
  - For each minimum rule of the ports bound to O(host) (Neutron's C(binding:host_id)), side by side, what the
    rule of the port's QoS policy (the port's, else its network's) asks, what Placement reserved for the port's
    server on the provider named by the port's C(binding:profile.allocation), what the Open vSwitch agent programmed
    (the Queue whose C(external_ids:port) is the port, in the QoS row of each NIC of the port's physical bridge) and
    what the kernel applies (the NIC's HTB class of the queue, C(1:6) for queue 5); and a verdict, C(enforced),
    C(missing), C(wrong rate) (with the factor), C(placement-only) (no backend enforces it upstream, with why, such
    as ingress, a tunnelled network, a minimum packet rate) or C(orphan) (a Queue row for no bound port's egress
    minimum, or a minimum bandwidth QoS row on no port, such as each restart of the agent leaves).
  - Per NIC of the agent's physical bridges, its speed, what Placement admits on the bridge's provider and the sum
    of the minimums enforced on it; an inventory above the link's speed is an error.
  - Reads only, never writes to OVSDB, netlink, Neutron or Placement. Run it on the host (C(delegate_to) the
    compute), as a user that may read the Open vSwitch database socket and netlink, with the C(dataplane) extra's
    libraries (ovsdbapp, pyroute2) and openstacksdk installed there. The calls are one Neutron agent listing, one
    port listing, one QoS policy and one network listing, one Placement allocation read per server and one
    inventory read per physical bridge, and one read of the Open vSwitch database.
  - The Open vSwitch agent only; ports of the SR-IOV agent are listed in RV(not_checked). See docs/enforcement.md.
requirements:
  - ovsdbapp>=3.0
  - pyroute2>=0.9
options:
  host:
    description: The compute host, as Neutron names it (the ports' C(binding:host_id), its agent's host).
    type: str
    required: true
  ovs_db:
    description: The host's Open vSwitch database, an OVSDB remote (C(unix:PATH), C(tcp:HOST:PORT)).
    type: str
    default: unix:/run/openvswitch/db.sock
  netns:
    description: The network namespace (C(ip netns)) of the host's NICs; leave out for the module's own.
    type: str
  kernel:
    description: Read the NICs' tc classes and speed (false when the module does not run on the host).
    type: bool
    default: true
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: Is the guaranteed bandwidth enforced on this compute? (a CI gate)
  minbw.openstack.bandwidth_enforcement_info:
    cloud: mycloud
    host: "{{ inventory_hostname }}"
  register: enforcement
  failed_when: not enforcement.ok
'''

RETURN = r'''
ok:
  description: Nothing to act on (no rule missing or at a wrong rate, no orphan, no NIC promised above its link).
  returned: always
  type: bool
host:
  description: The host checked.
  returned: always
  type: str
counts:
  description: How many checks of each verdict.
  returned: always
  type: dict
  sample: {"enforced": 1, "missing": 0, "wrong rate": 0, "placement-only": 1, "orphan": 0}
checks:
  description:
    - One per minimum rule of a bound port (C(kind) C(rule)), then one per orphan (C(kind) C(queue) or C(qos)).
    - C(subject) (the port, or the QoS row's uuid), C(server), C(backend), C(verdict), C(why), C(factor) (programmed
      or applied over expected, for a wrong rate), C(rule) (C(type), C(direction), C(value), C(unit), C(expected) in
      C(expected_unit), what upstream programs, C(policy) and C(policy_of), whose policy it is, the port's or its
      network's), C(reserved) (C(provider), C(name), C(class), C(amount),
      C(shared_by) the other ports of the server on that provider; null when Placement holds nothing for it),
      C(programmed) (per NIC, C(nic), C(qos), C(queue), C(queue_uuid), C(min_rate) in bit/s), C(kernel) (per NIC,
      C(nic), C(class), C(rate) in bit/s, null when there is no such class) and C(notes).
  returned: always
  type: list
  elements: dict
nics:
  description:
    - Per NIC of the physical bridges, C(nic), C(bridge), C(speed_kbps), C(provider), C(inventory_kbps) and
      C(ingress_inventory_kbps) (what Placement admits), C(enforced_kbps) and C(errors).
  returned: always
  type: list
  elements: dict
not_checked:
  description: The bound ports with a minimum rule of a backend this check does not read, one line each.
  returned: always
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def enforcement(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.enforcement import (
        EnforcementRequest, show_enforcement)

    p = module.params
    result = show_enforcement(module.cloud(), EnforcementRequest(p['host'], p['ovs_db'], p['netns'], p['kernel']))
    return module.result(False, **result.to_dict())


def main():
    MinbwModule(dict(host=dict(type='str', required=True),
                     ovs_db=dict(type='str', default='unix:/run/openvswitch/db.sock'),
                     netns=dict(type='str'), kernel=dict(type='bool', default=True))).run(enforcement)


if __name__ == '__main__':
    main()
