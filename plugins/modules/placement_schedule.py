#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: placement_schedule
short_description: Schedule existing ports and a resource set ports-first, bind the ports, claim everything
description:
  - The ports-first workflow for a consumer that is not Nova. The ports exist first, so their
    bandwidth requests and, on routed networks, their segments go into one C(GET /allocation_candidates) with
    the consumer's own O(resources).
  - For each candidate in Placement's order (Nova's alternates, up to O(max_hosts) hosts) every port is bound to
    that host (C(binding:host_id) and C(binding:profile.allocation) from the candidate's mapping). When a binding
    fails (no live agent on the host, no free address in the host's segment) this attempt's ports are unbound and
    the next host is tried; when all are bound, everything is claimed in one atomic
    C(PUT /allocations/{consumer}).
  - On give-up nothing is left bound or claimed and the task fails with every attempt and why it failed.
  - On a routed network the query carries C(member_of) the aggregates of the port's segments, leaving out
    segments with no free IPv4 address (for ports that still need one).
  - Neutron lets only the service role write C(binding:profile); give O(service_cloud).
  - The query is the one Nova's scheduler sends for a server of these resources (or O(flavor), O(image),
    O(availability_zone), O(project)) with these ports, Nova's request filters included (docs/scheduling.md).
  - Check mode returns the host and bindings the first attempt would make, and writes nothing.
version_added: 0.2.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.service_cloud
  - minbw.openstack.nova_server
  - minbw.openstack.nova_server.scheduler
  - ansible.builtin.action_common_attributes
options:
  ports:
    description: Names or ids of existing, unbound ports.
    type: list
    elements: str
    required: true
  resources:
    description:
      - "The consumer's own resources by resource class, for example C({VCPU: 1, MEMORY_MB: 512, DISK_GB: 1}),
        or give O(flavor)."
      - Needed when a port is on a routed network (the segment filter rides on these).
    type: dict
    default: {}
  consumer:
    description: The consumer UUID of the allocation; a new one when not given. A consumer that already has
      allocations is not scheduled again (the task reports it unchanged).
    type: str
  max_hosts:
    description: How many hosts to try, in Placement's order.
    type: int
    default: 3
  any_traits:
    description:
      - A port on a network with several physnet segments may get its bandwidth on any of them
        (C(required=in:A,B), Placement 1.39). The module schedules, binds and claims the ports itself, so Nova's
        scheduler never sees it; Neutron's own C(resource_request), which Nova asks for when it boots a server
        with the port, uses only the first segment.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Bind two ports and claim a small resource set, on whichever host can take both
  minbw.openstack.placement_schedule:
    cloud: admin
    service_cloud: neutron-service
    ports: [vm0-port0, vm0-port1]
    resources: {VCPU: 1, MEMORY_MB: 512, DISK_GB: 1}
    consumer: 0b7d6a44-1c5e-4a3e-9b1e-7f1d2c3b4a50
  register: placed

- name: Where it landed
  ansible.builtin.debug:
    msg: "{{ placed.host }}: {{ placed.bindings | map(attribute='binding_profile') | list }}"
'''

RETURN = r'''
consumer:
  description: The consumer UUID holding the allocation.
  returned: always
  type: str
host:
  description: The host the ports were bound to (Neutron's C(binding:host_id)).
  returned: always
  type: str
allocations:
  description: "The claimed allocations, C({provider uuid: {resources: {...}}})."
  returned: success, not in check mode
  type: dict
bindings:
  description: Each port's C(port), C(name), C(host) and C(binding_profile) (C(allocation)).
  returned: always
  type: list
  elements: dict
attempts:
  description: Each host tried, its C(outcome) (C(claimed), C(binding-failed), C(claim-failed), C(skipped)) and C(why).
  returned: always
  type: list
  elements: dict
segments:
  description: For ports on routed networks, the segments they may use, the C(member_of) sent and the segments
    left out with why.
  returned: always
  type: list
  elements: dict
ports:
  description: Each port's request as sent (C(resource_request), C(mode)) and notes (for example that Neutron uses
    only the first segment of a multi-segment network).
  returned: always
  type: list
  elements: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import SERVICE_CLOUD_SPEC, MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import NOVA_SPEC, nova_fields


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.schedule import ScheduleRequest, schedule

    p = module.params
    result = schedule(module.cloud(), ScheduleRequest(tuple(p['ports']), p['resources'], consumer=p['consumer'],
                                                      max_hosts=p['max_hosts'], any_traits=p['any_traits'],
                                                      check=module.check_mode, **nova_fields(p)))
    return module.result(result.changed, **result.to_dict())


def main():
    MinbwModule(dict(SERVICE_CLOUD_SPEC, ports=dict(type='list', elements='str', required=True),
                     resources=dict(type='dict', default={}), consumer=dict(type='str'),
                     max_hosts=dict(type='int', default=3), any_traits=dict(type='bool', default=False),
                     **NOVA_SPEC)).run(ensure)


if __name__ == '__main__':
    main()
