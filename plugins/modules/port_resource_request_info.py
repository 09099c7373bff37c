#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: port_resource_request_info
short_description: A port's resource_request, computed exactly as Neutron does, or read from Neutron
description:
  - Computes the request groups a port with minimum bandwidth / minimum packet rate QoS rules asks Placement
    for, from its QoS rules, its network's segments and its vnic_type, exactly as Neutron's QoS plugin does
    (group ids C(uuid5(port id, rule ids)), physnet or tunnel trait, vnic type trait, C(same_subtree)).
  - With O(port), reads the port, its QoS policy and its network from Neutron, and also returns Neutron's own
    C(resource_request) when the caller may see it (admin), saying whether both agree.
  - Multi-segment networks - Neutron uses only the first segment; with O(any_traits) the bandwidth group
    accepts any segment's physnet (C(required=in:A,B), Placement 1.39).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
options:
  port:
    description: Name or id of an existing port to read from Neutron. Mutually exclusive with O(port_id).
    type: str
  port_id:
    description: The port UUID, to compute a request without Neutron (with O(qos_rules) and O(segments)).
    type: str
  qos_rules:
    description:
      - The QoS policy's rules in the policy's order, as the network API shows them (C(id), C(type)
        C(minimum_bandwidth) or C(minimum_packet_rate), C(direction), C(min_kbps) or C(min_kpps)).
        Other rule types are ignored.
      - C(id) may be left out (rules not created yet). A stable one is then made up from the port UUID and the
        rule's position, as C(minbw request show) does; the request group ids derive from the rule ids.
    type: list
    elements: dict
    default: []
  segments:
    description: The network's segments (C(network_type), C(physical_network)); a tunnelled one has no physnet.
    type: list
    elements: dict
    default: []
  vnic_type:
    description: The port's C(binding:vnic_type).
    type: str
    default: normal
  agent_type:
    description: Check that this agent kind can serve the rules and vnic_type.
    type: str
    choices: [openvswitch, sriov]
  any_traits:
    description: Use any-traits for multi-segment networks instead of Neutron's first-segment behaviour.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: A port's request, computed without Neutron
  minbw.openstack.port_resource_request_info:
    port_id: 99a97b12-6364-4d10-8d8e-c3dab4161691
    qos_rules:
      - {id: dea6c72e-fd80-44fb-8975-949d88bf1007, type: minimum_bandwidth, direction: egress, min_kbps: 1000}
      - {id: 74048477-5fe3-43a4-a678-39c154e9ed97, type: minimum_bandwidth, direction: ingress, min_kbps: 1000}
    segments: [{network_type: vlan, physical_network: physnet0}]
    vnic_type: normal
  register: request

- name: A real port
  minbw.openstack.port_resource_request_info:
    cloud: mycloud
    port: port-normal-qos
'''

RETURN = r'''
resource_request:
  description: The request in Neutron's request-groups format (null when the port has no minimum rules).
  returned: always
  type: dict
legacy:
  description: The same request in the legacy single-group format, when it can be expressed so.
  returned: always
  type: dict
mode:
  description: C(neutron) (first segment only) or C(any-traits).
  returned: always
  type: str
notes:
  description: What the chosen mode excludes, for multi-segment networks.
  returned: always
  type: list
neutron_resource_request:
  description: Neutron's own value (with O(port); null when not visible to the caller).
  returned: when port is given
  type: dict
matches_neutron:
  description: Whether the computed request equals Neutron's (null when Neutron's is not visible).
  returned: when port is given
  type: bool
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def request_info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.inputs import qos_port_of_rules
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.port_request import (
        PortRequestQuery, port_request)

    p = module.params
    qos_port = None if p['port'] else qos_port_of_rules(p['qos_rules'], p['vnic_type'], p['segments'])
    result = port_request(module.cloud(), PortRequestQuery(qos_port=qos_port, port_id=p['port_id'], port=p['port'],
                                                           agent_type=p['agent_type'], any_traits=p['any_traits']))
    return module.result(False, **result.to_dict())


def main():
    spec = dict(port=dict(type='str'), port_id=dict(type='str'), qos_rules=dict(type='list', elements='dict', default=[]),
                segments=dict(type='list', elements='dict', default=[]), vnic_type=dict(type='str', default='normal'),
                agent_type=dict(type='str', choices=['openvswitch', 'sriov']),
                any_traits=dict(type='bool', default=False))
    MinbwModule(spec, mutually_exclusive=[('port', 'port_id')], required_one_of=[('port', 'port_id')]).run(request_info)


if __name__ == '__main__':
    main()
