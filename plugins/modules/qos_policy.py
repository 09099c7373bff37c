#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: qos_policy
short_description: A Neutron QoS policy with its minimum bandwidth and minimum packet rate rules
description:
  - Creates, updates or deletes a QoS policy, and makes its C(minimum_bandwidth) and
    C(minimum_packet_rate) rules exactly the ones listed in O(rules) - missing rules are created,
    changed values updated, unlisted minimum rules deleted.
  - Rules are identified by type and direction (Neutron allows one rule per type and direction in a policy).
    Changing O(rules[].min_kbps) or O(rules[].min_kpps) updates the rule in place and keeps its id.
    Adding a rule, removing one or changing a direction creates or deletes rules, so rule ids change - and
    with them the ids of the request groups of every port using the policy (C(uuid5(port id, rule ids)), what
    C(binding:profile.allocation) is keyed by).
  - Other rule types (bandwidth limit, DSCP marking, packet rate limit) are not touched.
  - Check mode returns the planned writes and the predicted policy; diff mode shows the policy and its rules
    before and after. A second run with the same options changes nothing.
  - openstack.cloud has no module for QoS policies or rules.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  name:
    description: Name or id of the policy. A new policy gets this as its name.
    type: str
    required: true
  description:
    description: The policy's description. Left as it is when not given.
    type: str
  shared:
    description: Whether other projects may use the policy. Left as it is when not given.
    type: bool
  is_default:
    description: Whether the policy is the project's default (extension C(qos-default)). Left as it is when not given.
    type: bool
  rules:
    description:
      - The policy's minimum rules. When not given, the rules are left as they are; V([]) removes every minimum rule.
    type: list
    elements: dict
    suboptions:
      type:
        description: The rule type.
        type: str
        required: true
        choices: [minimum_bandwidth, minimum_packet_rate]
      direction:
        description:
          - C(egress) or C(ingress) (from the server's point of view); C(minimum_packet_rate) also takes
            C(any) (both directions together; it cannot be mixed with directed packet-rate rules).
          - Defaults to C(egress), as in Neutron's API.
        type: str
        choices: [egress, ingress, any]
      min_kbps:
        description: The guaranteed bandwidth in kilobits per second (C(minimum_bandwidth)).
        type: int
      min_kpps:
        description: The guaranteed packet rate in kilopackets per second (C(minimum_packet_rate)).
        type: int
  state:
    description: C(present) or C(absent). Deleting a policy that ports or networks use fails (Neutron refuses).
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: A policy that guarantees 1000 kbps each way
  minbw.openstack.qos_policy:
    cloud: mycloud
    name: qp0
    rules:
      - {type: minimum_bandwidth, direction: egress, min_kbps: 1000}
      - {type: minimum_bandwidth, direction: ingress, min_kbps: 1000}

- name: Bandwidth plus a packet rate in both directions together
  minbw.openstack.qos_policy:
    cloud: mycloud
    name: qp-pps
    shared: true
    rules:
      - {type: minimum_bandwidth, direction: egress, min_kbps: 10000}
      - {type: minimum_packet_rate, direction: any, min_kpps: 1000}

- name: Remove it
  minbw.openstack.qos_policy:
    cloud: mycloud
    name: qp-pps
    state: absent
'''

RETURN = r'''
policy:
  description: The policy as it is now (in check mode, as it will be; rules still to be created have a null id).
    Null when absent.
  returned: always
  type: dict
  contains:
    id: {description: The policy's id., type: str}
    name: {description: Its name., type: str}
    description: {description: Its description., type: str}
    shared: {description: Whether it is shared., type: bool}
    is_default: {description: Whether it is the project's default., type: bool}
    rules:
      description: Every rule of the policy (minimum rules and others), sorted by type and direction.
      type: list
      elements: dict
  sample:
    id: 5c543f8c-d513-48bb-a6e4-602eb728209a
    name: qp0
    description: ''
    shared: false
    is_default: false
    rules:
      - {id: dea6c72e-fd80-44fb-8975-949d88bf1007, type: minimum_bandwidth, direction: egress, min_kbps: 1000}
      - {id: 74048477-5fe3-43a4-a678-39c154e9ed97, type: minimum_bandwidth, direction: ingress, min_kbps: 1000}
changes:
  description: The writes made (or, in check mode, planned), in order.
  returned: always
  type: list
  elements: dict
  sample:
    - {action: update_rule, rule_type: minimum_bandwidth, rule_id: dea6c72e-fd80-44fb-8975-949d88bf1007,
       values: {min_kbps: 2000}}
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.qos_policy import DesiredPolicy, qos_policy

    p = module.params
    result = qos_policy(module.cloud(), DesiredPolicy(
        p['name'], description=p['description'], shared=p['shared'], is_default=p['is_default'],
        rules=None if p['rules'] is None else tuple(p['rules']), present=p['state'] == 'present',
        check=module.check_mode))
    return module.result(result.plan.changed, diff=result.diff(), **result.to_dict())


def main():
    rule = dict(type=dict(type='str', required=True, choices=['minimum_bandwidth', 'minimum_packet_rate']),
                direction=dict(type='str', choices=['egress', 'ingress', 'any']),
                min_kbps=dict(type='int'), min_kpps=dict(type='int'))
    spec = dict(name=dict(type='str', required=True), description=dict(type='str'), shared=dict(type='bool'),
                is_default=dict(type='bool'), rules=dict(type='list', elements='dict', options=rule),
                state=dict(type='str', default='present', choices=['present', 'absent']))
    MinbwModule(spec).run(ensure)


if __name__ == '__main__':
    main()
