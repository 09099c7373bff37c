#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: host_separation
short_description: Reserve compute hosts for servers with QoS ports, and keep other servers off them
version_added: 0.2.0
author:
  - minbw developers (@minbw)
description:
  - Marks the root providers (compute nodes) of O(hosts) in Placement with a trait (default
    C(CUSTOM_MINBW_QOS_HOST)) or makes them members of a Placement O(aggregate). Only that trait or aggregate
    is added or removed; the roots' other traits (nova-compute's C(COMPUTE_*) traits) and aggregates are kept.
    A generation conflict re-reads the root and writes again.
  - Sets the flavor extra specs Nova reads so that it schedules the same way. O(flavors_plain) (servers without
    QoS ports) get C(trait:TRAIT=forbidden); in O(mode=strict) O(flavors_qos) get C(trait:TRAIT=required).
    Other extra specs are left as they are.
  - minbw's own requests do the same with the O(minbw.openstack.allocation_candidates_info#module:separation) /
    O(minbw.openstack.allocation#module:separation) option.
  - Check mode returns the plan (RV(ops)) without writing; diff mode shows each changing host and flavor
    before and after.
options:
  hosts:
    description: Hypervisor names (root provider names, as C(openstack hypervisor list) shows) to reserve.
    type: list
    elements: str
    default: []
  exclusive:
    description: Also unreserve every other host that is reserved now.
    type: bool
    default: false
  trait:
    description: The trait that marks reserved hosts (C(CUSTOM_) followed by A-Z, 0-9 and _).
    type: str
    default: CUSTOM_MINBW_QOS_HOST
  aggregate:
    description:
      - Mark reserved hosts by membership of this Placement aggregate (a UUID) instead of the trait.
      - Nova keeps other servers off an aggregate through a Nova host aggregate with metadata
        C(trait:CUSTOM_X=required) and C([scheduler] enable_isolated_aggregate_filtering), which this module
        does not manage; O(flavors_qos) and O(flavors_plain) are refused with an aggregate.
    type: str
  mode:
    description:
      - C(avoid) keeps servers without QoS ports off the reserved hosts; C(strict) also makes servers with QoS
        ports land on them.
    type: str
    choices: [avoid, strict]
    default: avoid
  flavors_qos:
    description: Flavors (names or ids) of servers with QoS ports.
    type: list
    elements: str
    default: []
  flavors_plain:
    description: Flavors (names or ids) of servers without QoS ports.
    type: list
    elements: str
    default: []
  state:
    description:
      - C(present) reserves O(hosts) and sets the flavors' extra specs.
      - C(absent) unreserves every reserved host and unsets C(trait:TRAIT) of the named flavors.
    type: str
    choices: [present, absent]
    default: present
extends_documentation_fragment:
  - minbw.openstack.auth
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
- name: Reserve two hosts for QoS ports; plain flavors keep off them, QoS flavors must land there
  minbw.openstack.host_separation:
    cloud: mycloud
    hosts: [compute-7, compute-8]
    exclusive: true
    mode: strict
    flavors_qos: [m1.qos]
    flavors_plain: [m1.small, m1.medium]

- name: minbw's own claim, kept off the reserved hosts (the server has no QoS port)
  minbw.openstack.allocation:
    cloud: mycloud
    consumer: "{{ server_uuid }}"
    project_id: "{{ project_id }}"
    user_id: "{{ user_id }}"
    resources: {VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}
    separation: {mode: avoid}

- name: Undo
  minbw.openstack.host_separation:
    cloud: mycloud
    flavors_qos: [m1.qos]
    flavors_plain: [m1.small, m1.medium]
    state: absent
'''

RETURN = r'''
writes:
  description: The number of writes (made, or planned in check mode). 0 when everything already matched.
  returned: always
  type: int
  sample: 3
ops:
  description: The writes in the order they run (hosts first, then flavors).
  returned: always
  type: list
  elements: dict
  sample:
    - {"action": "create_trait", "trait": "CUSTOM_MINBW_QOS_HOST"}
    - {"action": "reserve", "host": "compute-7", "uuid": "3b36d91e-bf60-460f-b1f8-3322dee5cdfd",
       "trait": "CUSTOM_MINBW_QOS_HOST"}
    - {"action": "set_extra_spec", "flavor": "m1.small", "flavor_id": "2", "key": "trait:CUSTOM_MINBW_QOS_HOST",
       "value": "forbidden"}
separation:
  description: The trait or aggregate and the mode used.
  returned: always
  type: dict
  sample: {"mode": "strict", "trait": "CUSTOM_MINBW_QOS_HOST", "aggregate": null}
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.separation import SeparationRequest, separation, separation_of

    p = module.params
    sep = separation_of(p['mode'], p['trait'], p['aggregate'], option='mode/trait/aggregate')
    plan = separation(module.cloud(), SeparationRequest(
        sep, tuple(p['hosts']), exclusive=p['exclusive'], flavors_qos=tuple(p['flavors_qos']),
        flavors_plain=tuple(p['flavors_plain']), absent=p['state'] == 'absent', check=module.check_mode))
    planned = plan.to_dict()
    return module.plan_result(plan, writes=plan.writes(), ops=planned['ops'], separation=planned['separation'])


def main():
    MinbwModule(dict(
        hosts=dict(type='list', elements='str', default=[]),
        exclusive=dict(type='bool', default=False),
        trait=dict(type='str', default='CUSTOM_MINBW_QOS_HOST'),
        aggregate=dict(type='str'),
        mode=dict(type='str', default='avoid', choices=['avoid', 'strict']),
        flavors_qos=dict(type='list', elements='str', default=[]),
        flavors_plain=dict(type='list', elements='str', default=[]),
        state=dict(type='str', default='present', choices=['present', 'absent']),
    )).run(ensure)


if __name__ == '__main__':
    main()
