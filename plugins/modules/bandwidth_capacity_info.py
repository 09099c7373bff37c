#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_capacity_info
short_description: How many more servers of one shape (flavor and QoS ports) fit, per host and physnet
version_added: 0.1.0
author:
  - minbw developers (@minbw)
description:
  - Reads every resource provider (or one compute node's tree) with its traits, inventories and usages,
    and counts how many more servers of the given shape fit on each host now, honouring required and
    forbidden traits, C(reserved), C(allocation_ratio), C(min_unit), C(max_unit), C(step_size) and the
    current usage; the data behind C(minbw capacity show).
  - A port given by O(qos_ports) without C(physical_network) (and without a tunnel C(network_type)) is
    counted on each physnet of each host; the host's own count then lets each such port use any of its
    physnets.
  - Where several providers could serve a port (two bridges or PFs on a physnet) they add up. Where the
    ways to place a server compete for providers, the count is the best packing and a note says how few
    claims could reach when Placement picks candidates in an unlucky order.
  - Read-only. See docs/capacity.md for the rule.
options:
  resources:
    description:
      - "The flavor's resources (the unsuffixed request group), resource class to amount, for example
        C({VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}). Standard class names or C(CUSTOM_*); amounts >= 0."
    type: dict
    default: {}
  required:
    description: Traits the flavor requires (forbidden ones prefixed with C(!)).
    type: list
    elements: str
    default: []
  port_requests:
    description:
      - Ports as Neutron reports them, each a dict with C(port_id) (or C(id)) and C(resource_request) (either
        format), as for M(minbw.openstack.allocation_candidates_info).
    type: list
    elements: dict
    default: []
  qos_ports:
    description:
      - Ports described by their QoS minimum rules, built into a C(resource_request) exactly as Neutron builds
        one.
    type: list
    elements: dict
    default: []
    suboptions:
      qos_rules:
        description:
          - The policy's minimum rules, each C({type, direction, min_kbps}) for C(minimum_bandwidth) or
            C({type, direction, min_kpps}) for C(minimum_packet_rate), as the network API shows them.
        type: list
        elements: dict
        required: true
      vnic_type:
        description: The port's C(binding:vnic_type).
        type: str
        default: normal
      physical_network:
        description:
          - The physnet of the port's network (C(provider:physical_network)). Leave it out to count each
            physnet of each host.
        type: str
      network_type:
        description:
          - The network's C(provider:network_type); C(vxlan), C(geneve) and C(gre) ask for the tunnelled
            traffic's provider (C(CUSTOM_NETWORK_TUNNEL_PROVIDER)) instead of a physnet.
        type: str
        choices: [vlan, flat, vxlan, geneve, gre]
  group_policy:
    description:
      - How numbered groups may share providers; the default is C(none) with more than one numbered group,
        as Nova does.
    type: str
    choices: [none, isolate]
  hypervisor:
    description:
      - Only the compute node (root provider) with this name. Fails when there is none.
    type: str
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.nova_server
  - minbw.openstack.nova_server.scheduler
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: How many more 1 vCPU servers with a 1 Mbps port fit, per physnet?
  minbw.openstack.bandwidth_capacity_info:
    cloud: mycloud
    resources: {VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}
    qos_ports:
      - qos_rules:
          - {type: minimum_bandwidth, direction: egress, min_kbps: 1000}
          - {type: minimum_bandwidth, direction: ingress, min_kbps: 1000}
  register: capacity

- name: Say it
  ansible.builtin.debug:
    msg: "{{ item.physnet }}: {{ item.fits }} more server(s)"
  loop: "{{ capacity.physnets }}"
  loop_control:
    label: "{{ item.physnet }}"

- name: Direct ports on physnet0, one compute node
  minbw.openstack.bandwidth_capacity_info:
    cloud: mycloud
    hypervisor: compute1
    resources: {VCPU: 2, MEMORY_MB: 2048}
    qos_ports:
      - qos_rules: [{type: minimum_bandwidth, direction: egress, min_kbps: 5000}]
        vnic_type: direct
        physical_network: physnet0
'''

RETURN = r'''
hosts:
  description: One entry per compute node (root provider), by name.
  returned: always
  type: list
  elements: dict
  contains:
    host: {description: The root provider's name., type: str, sample: compute1}
    uuid: {description: The root provider's UUID., type: str}
    fits:
      description: How many more servers fit on the host (each open port on any of its physnets).
      type: int
      sample: 8
    first_fit:
      description: The fewest claims reach when each takes the first way that still fits, in the worst order
        (equal to RV(hosts[].fits) unless the ways to place a server compete).
      type: int
    exact: {description: Whether the search for the best packing finished., type: bool}
    ways: {description: Distinct ways to place one server on the host., type: int}
    limited_by:
      description:
        - What runs out first - C(resource_class) on C(providers) (names) together, C(needs) per server,
          C(free) now, C(copies) as far as that goes; or, when no server can be placed at all, C(reason).
      type: list
      elements: dict
    notes: {description: When the count depends on Placement's choices or is not exact., type: list, elements: str}
    physnets:
      description: The same per physnet of the host (C(physnet), C(traits), C(fits), ...).
      type: list
      elements: dict
physnets:
  description: Per physnet, C(fits) summed over the hosts and the number of C(hosts) that take at least one.
  returned: always
  type: list
  elements: dict
  sample: [{"physnet": "physnet0", "traits": ["CUSTOM_PHYSNET_PHYSNET0"], "fits": 10, "first_fit": 10, "hosts": 2}]
total:
  description: The hosts' C(fits) summed.
  returned: always
  type: int
  sample: 12
total_first_fit:
  description: The hosts' C(first_fit) summed.
  returned: always
  type: int
notes:
  description: About the whole count (sharing providers left out, providers that moved while read).
  returned: always
  type: list
  elements: str
providers:
  description: Bandwidth and packet rate of each provider (C(capacity), C(used), C(free), ...), as drawn by
    C(minbw capacity show --png).
  returned: always
  type: list
  elements: dict
request:
  description: The request groups counted (C(network) is C(each) for a group whose physnet was left open).
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import NOVA_SPEC, nova_fields

QOS_PORT_SPEC = dict(
    qos_rules=dict(type='list', elements='dict', required=True),
    vnic_type=dict(type='str', default='normal'),
    physical_network=dict(type='str'),
    network_type=dict(type='str', choices=['vlan', 'flat', 'vxlan', 'geneve', 'gre']),
)

ARGUMENT_SPEC = dict(
    resources=dict(type='dict', default={}),
    required=dict(type='list', elements='str', default=[]),
    port_requests=dict(type='list', elements='dict', default=[]),
    qos_ports=dict(type='list', elements='dict', default=[], options=QOS_PORT_SPEC),
    group_policy=dict(type='str', choices=['none', 'isolate']),
    hypervisor=dict(type='str'),
    **NOVA_SPEC
)


def capacity_info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.capacity import CapacityQuery, capacity

    p = module.params
    report = capacity(module.cloud(), CapacityQuery(p['resources'], tuple(p['required']), tuple(p['port_requests']),
                                                    tuple(p['qos_ports']), group_policy=p['group_policy'],
                                                    hypervisor=p['hypervisor'], **nova_fields(p)))
    return module.result(False, **report.to_dict())


def main():
    MinbwModule(ARGUMENT_SPEC).run(capacity_info)


if __name__ == '__main__':
    main()
