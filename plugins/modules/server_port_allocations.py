#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: server_port_allocations
short_description: Make sure servers' QoS ports have their Placement allocations and binding allocations
description:
  - Heals what an upgrade or a failed operation leaves behind, like C(nova-manage placement heal_allocations)
    but deterministic where that gives up. For each request group of each QoS port of a server, it finds out
    whether the server's allocation holds the group's resources and whether the port's
    C(binding:profile.allocation) names that provider.
  - A group the allocation holds but the binding does not name gets its binding; a group the binding names
    but the allocation lacks gets its resources added there; a group with neither goes to a provider in the
    server's compute tree, chosen as Nova's scheduling implies (the PF of the port's C(physical_network) for
    SR-IOV, the bridge of the physnet for OVS, else the one with most room) and reported with C(chosen_by).
  - The allocation is written first (at the server's consumer generation), then the bindings; when a write
    fails, what was written is undone and the failure says so. A server that cannot be healed (no provider
    has the traits or the room) is left as it is and reported.
  - A server on which Nova has a task under way (a boot, a move, a resize) is left as it is and reported in
    RV(unhealed), as C(nova-manage placement heal_allocations) skips it (Nova is moving its allocations).
  - Needs admin credentials to read (C(binding:profile) is admin-only in Neutron) and the service role to write
    the bindings (O(service_cloud)).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.service_cloud
  - ansible.builtin.action_common_attributes
options:
  servers:
    description: Names or ids of the servers; all servers (of all projects) when empty.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: After an upgrade, heal every server's QoS port allocations (see the plan first with --check)
  minbw.openstack.server_port_allocations:
    cloud: mycloud
  register: healed

- name: Nothing may be left unhealed
  ansible.builtin.assert:
    that: healed.unhealed | length == 0
'''

RETURN = r'''
servers:
  description: >-
    One entry per server, C(server), C(name), C(plan) (C(ops), C(groups) with each group's C(status),
    C(provider), C(chosen_by) or C(why)), C(healed) and C(error).
  returned: always
  type: list
  elements: dict
unhealed:
  description: Ids of the servers that needed healing and could not be healed.
  returned: always
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import SERVICE_CLOUD_SPEC, MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.heal import HealRequest, heal

    result = heal(module.cloud(), HealRequest(tuple(module.params['servers']), check=module.check_mode))
    diffs = [dict(r.plan.diff(), before_header=r.name, after_header=r.name) for r in result.needed]
    return module.result(result.changed, diff=diffs, servers=result.to_dict(), unhealed=result.unhealed)


def main():
    MinbwModule(dict(SERVICE_CLOUD_SPEC, servers=dict(type='list', elements='str', default=[]))).run(ensure)


if __name__ == '__main__':
    main()
