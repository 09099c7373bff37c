#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: allocation_candidates_info
short_description: Where a server with QoS ports could land, in one allocation candidates query
description:
  - Builds one granular C(GET /allocation_candidates) query from a flavor's resources and each QoS port's
    C(resource_request) (one suffixed request group per port group, C(same_subtree), C(group_policy)),
    at the lowest microversion that expresses it, and returns the candidates with the provider that fulfils
    each request group.
  - When there is no candidate, says why per request group (the trait no provider has, or the largest free
    capacity of the resource class that ran out).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.server_request
  - minbw.openstack.nova_server
  - minbw.openstack.nova_server.scheduler
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: Where would a server with one 1000 kbps port fit?
  minbw.openstack.allocation_candidates_info:
    cloud: minbw-local
    resources: {VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}
    port_requests:
      - port_id: 99a97b12-6364-4d10-8d8e-c3dab4161691
        resource_request: "{{ port.resource_request }}"
  register: where
'''

RETURN = r'''
candidates:
  description: The candidates in Placement's order.
  returned: always
  type: list
  elements: dict
  contains:
    host: {description: Root provider (compute node) UUID., type: str}
    host_name: {description: Its name., type: str}
    allocations: {description: "Provider UUID to C({resources: {class: amount}}).", type: dict}
    mapping: {description: "Request group id (C('') for the flavor) to provider UUIDs.", type: dict}
    mapping_source: {description: C(placement) (its mappings) or C(solver) (minbw's exact solver)., type: str}
    binding_profiles: {description: "Port id to its C(binding:profile.allocation) value.", type: dict}
count: {description: Number of candidates., returned: always, type: int}
query: {description: The query parameters sent., returned: always, type: dict}
microversion: {description: The microversion used., returned: always, type: str}
diagnosis:
  description: Per request group, why there is no candidate (empty when there are candidates).
  returned: always
  type: list
  elements: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import (
    SERVER_REQUEST_SPEC, server_spec)


def candidates_info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.candidates import candidates

    result = candidates(module.cloud(), server_spec(module.params))
    return module.result(False, candidates=[c.to_dict() for c in result.view], count=len(result.view),
                         query=dict(result.candidates.params), microversion=result.candidates.microversion,
                         diagnosis=[d.to_dict() for d in result.diagnosis])


def main():
    MinbwModule(dict(SERVER_REQUEST_SPEC)).run(candidates_info)


if __name__ == '__main__':
    main()
