#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: port
short_description: A Neutron port with its QoS policy, vnic type and fixed IPs
description:
  - Creates, updates or deletes a port. The port's QoS policy (O(qos_policy)) converges to the value given,
    so a port with minimum bandwidth rules gets its C(resource_request) (see
    M(minbw.openstack.port_resource_request_info)) and an omitted or null O(qos_policy) removes the policy.
  - Written because C(openstack.cloud.port) cannot set C(qos_policy_id).
  - Idempotent - a second run with the same options changes nothing. Check mode predicts the port;
    diff mode shows it before and after.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  name:
    description: Name or id of the port. A new port gets this as its name.
    type: str
    required: true
  network:
    description:
      - Name or id of the port's network; required to create it. Neutron cannot move a port to another
        network, so a different network for an existing port fails the task.
    type: str
  vnic_type:
    description:
      - The port's C(binding:vnic_type) (for example C(normal), or C(direct) for an SR-IOV VF). Neutron's
        default (C(normal)) for a new port when not given; an existing port's is then left as it is.
      - Neutron refuses to change it while the port is bound to a server.
      - C(binding_vnic_type) is openstack.cloud.port's name for it.
    type: str
    aliases: [binding_vnic_type]
  qos_policy:
    description: Name or id of the port's QoS policy; omitted or null means the port has none.
    type: str
  fixed_ips:
    description:
      - The port's fixed IPs. Each entry names a subnet, an IP address or both; an entry without an address
        matches any address on its subnet. Left as Neutron assigned them when not given.
    type: list
    elements: dict
    suboptions:
      subnet:
        description: Name or id of the subnet (C(subnet_id) is openstack.cloud.port's name for it).
        type: str
        aliases: [subnet_id]
      ip_address:
        description: The IP address.
        type: str
  state:
    description: C(present) or C(absent).
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
- name: A port with a minimum bandwidth policy
  minbw.openstack.port:
    cloud: mycloud
    name: port-normal-qos
    network: net0
    vnic_type: normal
    qos_policy: qp0

- name: An SR-IOV port with a fixed address
  minbw.openstack.port:
    cloud: mycloud
    name: port-direct-qos
    network: net0
    vnic_type: direct
    qos_policy: qp0
    fixed_ips:
      - {subnet: subnet0, ip_address: 10.0.4.20}

- name: Take the policy away (the port keeps everything else)
  minbw.openstack.port:
    cloud: mycloud
    name: port-normal-qos
    qos_policy: null
'''

RETURN = r'''
port:
  description: The port as it is now (in check mode, as it will be). Null when absent.
  returned: always
  type: dict
  contains:
    id: {description: The port's id (null for a port check mode would create)., type: str}
    name: {description: Its name., type: str}
    network_id: {description: Its network., type: str}
    binding:vnic_type: {description: Its vnic type., type: str}
    qos_policy_id: {description: Its QoS policy (null for none)., type: str}
    fixed_ips: {description: "Its fixed IPs (C(subnet_id), C(ip_address)).", type: list, elements: dict}
  sample:
    id: 99a97b12-6364-4d10-8d8e-c3dab4161691
    name: port-normal-qos
    network_id: e55618be-7d30-4623-8c1f-f7d85738feab
    binding:vnic_type: normal
    qos_policy_id: 5c543f8c-d513-48bb-a6e4-602eb728209a
    fixed_ips: [{subnet_id: 225159c4-2447-4347-a8a8-a3ad6142cb8d, ip_address: 10.0.4.15}]
resource_request:
  description: Neutron's C(resource_request) of the port after the change (admin only; null otherwise, and in check mode).
  returned: state=present
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.port import DesiredPort, port

    p = module.params
    result = port(module.cloud(), DesiredPort(p['name'], network=p['network'], vnic_type=p['vnic_type'],
                                              qos_policy=p['qos_policy'],
                                              fixed_ips=None if p['fixed_ips'] is None else tuple(p['fixed_ips']),
                                              present=p['state'] == 'present', check=module.check_mode))
    return module.result(result.changed, diff=result.diff(), **result.to_dict())


# openstack.cloud.port's option names are aliases, so its tasks' options carry over.
ARGUMENT_SPEC = dict(
    name=dict(type='str', required=True), network=dict(type='str'),
    vnic_type=dict(type='str', aliases=['binding_vnic_type']), qos_policy=dict(type='str'),
    fixed_ips=dict(type='list', elements='dict',
                   options=dict(subnet=dict(type='str', aliases=['subnet_id']), ip_address=dict(type='str'))),
    state=dict(type='str', default='present', choices=['present', 'absent']))


def main():
    MinbwModule(ARGUMENT_SPEC).run(ensure)


if __name__ == '__main__':
    main()
