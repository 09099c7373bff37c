#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: host_drain_info
short_description: Plan the drain of a compute host - where every server on it would go, all placed at once
description:
  - Reads every server on O(host) (all projects), each with what Nova's scheduler asks Placement for when it moves
    it (its flavor, image, pinned availability zone, every port's request groups, Nova's request filters, its server
    group), and the other hosts' providers with their usage, then places all the servers at once so that no
    destination is overcommitted by the moves together.
  - Returns the plan - each server's destination host and providers (RV(moves)), or why it cannot move
    (RV(stuck)). RV(complete) says whether every server has a destination. The source host is never a destination,
    nor is a disabled compute.
  - Nothing is changed; the drain itself (disable the compute, live-migrate each server) is not done by this module.
version_added: 0.3.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
  - minbw.openstack.nova_server.scheduler
options:
  host:
    description: The compute host to drain (its nova-compute host name).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Can devstack0 be drained, and where will each server go?
  minbw.openstack.host_drain_info:
    cloud: mycloud
    host: devstack0
  register: drain

- name: Stop before the window when some server cannot move
  ansible.builtin.assert:
    that: drain.complete
    fail_msg: "{{ drain.stuck }}"
'''

RETURN = r'''
complete:
  description: Whether every server on the host has a destination (RV(stuck) is empty).
  returned: always
  type: bool
source:
  description: The host drained.
  returned: always
  type: str
moves:
  description:
    - "One per server that can move - C(server_id), C(server_name), C(kind) (C(live) or C(cold)), C(host) (the
      destination), C(root) (its compute node's provider), C(allocations) (provider UUID to C({class: amount})) and
      C(mappings) (request group suffix to its providers)."
  returned: always
  type: list
  elements: dict
stuck:
  description: One per server that cannot move - C(server_id), C(server_name), C(reason) and C(limits).
  returned: always
  type: list
  elements: dict
method:
  description: How the plan was found - C(greedy) (largest server first placed every one) or C(exact) (the solver).
  returned: always
  type: str
greedy_moves:
  description: How many servers greedy-by-size alone placed.
  returned: always
  type: int
optimal:
  description: Whether no plan places more servers (false when the solver stopped early; RV(notes) say why).
  returned: always
  type: bool
notes:
  description: Remarks on the plan (the solver's time limit, hosts left out of the exact solve).
  returned: always
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import NOVA_SCHEDULER_SPEC, nova_scheduler_fields


def info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.drain import HostDrainQuery, plan_host_drain

    p = module.params
    result = plan_host_drain(module.cloud(), HostDrainQuery(p['host'], **nova_scheduler_fields(p)))
    return module.result(False, **dict(result.to_dict(), complete=result.complete))


def main():
    MinbwModule(dict(host=dict(type='str', required=True), **NOVA_SCHEDULER_SPEC)).run(info)


if __name__ == '__main__':
    main()
