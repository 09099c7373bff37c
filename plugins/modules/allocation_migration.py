#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: allocation_migration
short_description: Move a consumer's Placement allocations to another host, then confirm or revert the move
description:
  - For consumers that are not Nova servers (bare metal, containers, scripts), Nova's own migration pattern.
  - C(state=migrated) moves the consumer's allocations to O(target_host) in one atomic C(POST /allocations) that
    also gives the migration consumer O(migration) the consumer's source allocations. The target's allocations
    come from one allocation candidates query restricted to the target host's tree, for the flavor resources and
    every QoS port's request groups; each port's C(binding:profile.allocation) is mapped again on the target.
    Both hosts hold the consumer's resources until the move is confirmed or reverted.
  - C(state=confirmed) releases the source (the migration consumer's allocations).
  - C(state=reverted) gives the consumer its source allocations back and empties the migration consumer, in one
    C(POST /allocations); the target is released.
  - A consumer generation conflict (someone changed either consumer's allocations meanwhile) re-reads both and
    plans again, a bounded number of times; a capacity conflict on the target tries the target's next candidate.
    When the target has no room, the task fails with the per-group diagnosis (C(diagnosis)). Nothing is ever
    half written.
  - Idempotent. C(migrated) changes nothing when the consumer is already on the target (with the migration
    holding the source, or after a confirm). C(confirmed) and C(reverted) change nothing when the migration
    consumer holds no allocations.
  - Refused, with nothing written, when the consumer has no allocations, or when the migration consumer already
    holds allocations of another move (a move is in progress - confirm or revert it first), or (for C(reverted))
    when the consumer holds nothing or is of another project or user than the migration consumer.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.server_request
  - minbw.openstack.nova_server
  - minbw.openstack.nova_server.scheduler
  - ansible.builtin.action_common_attributes
options:
  consumer:
    description: The consumer UUID whose allocations move. Required for C(migrated) and C(reverted).
    type: str
  migration:
    description:
      - The migration consumer's UUID; it holds the source allocations from the move until confirm or revert.
        Choose a new UUID per move and keep it until then (for example C("{{ 'move-vm0-1' | to_uuid }}")).
    type: str
    required: true
  target_host:
    description: The host to move to, its compute node's root provider name or UUID. Required for C(migrated).
    type: str
  state:
    description:
      - C(migrated) moves the consumer to O(target_host), C(confirmed) releases the source, C(reverted) goes back.
      - The server request options (O(resources), O(port_requests), ...) describe what the consumer needs on the
        target for C(migrated); for C(reverted) they are optional and, given, map the source again (the ports'
        old C(binding:profile.allocation) in RV(binding_profiles)).
    type: str
    choices: [migrated, confirmed, reverted]
    default: migrated
  retries:
    description: How many times a consumer generation conflict is read again and planned again before failing.
    type: int
    default: 4
attributes:
  check_mode:
    support: full
    details: The plan the real run applies first, with the C(POST /allocations) body it would send.
  diff_mode:
    support: full
    details: The host and the allocations (by provider name) of the consumer and of the migration consumer.
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Move ironic-node-7's allocations (and its QoS port's bandwidth) to host h2
  minbw.openstack.allocation_migration:
    cloud: minbw-local
    consumer: 71cb7e04-3d5a-40f9-a99f-07f0d0831741
    migration: "{{ 'move-71cb7e04-1' | to_uuid }}"
    target_host: h2
    resources: {VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}
    port_requests:
      - port_id: 99a97b12-6364-4d10-8d8e-c3dab4161691
        resource_request: "{{ request.resource_request }}"
  register: moved

- name: Bind the port to h2's bandwidth provider
  ansible.builtin.debug:
    msg: "{{ moved.binding_profiles }}"

- name: Keep it there (release h1)
  minbw.openstack.allocation_migration:
    cloud: minbw-local
    migration: "{{ 'move-71cb7e04-1' | to_uuid }}"
    state: confirmed

- name: Or go back to h1 (release h2)
  minbw.openstack.allocation_migration:
    cloud: minbw-local
    consumer: 71cb7e04-3d5a-40f9-a99f-07f0d0831741
    migration: "{{ 'move-71cb7e04-1' | to_uuid }}"
    state: reverted
'''

RETURN = r'''
migration:
  description: The migration consumer's UUID.
  returned: always
  type: str
claim:
  description: >-
    Where the consumer is (C(migrated)): host, allocations, which provider serves each request group, the ports'
    C(binding:profile.allocation) values. In check mode the claim the move makes. For C(reverted) with the
    server request options, the consumer back on the source.
  returned: when known
  type: dict
binding_profiles:
  description: Port id to its C(binding:profile.allocation) value where the consumer is (or, in check mode, goes).
  returned: always
  type: dict
written:
  description: >-
    The exact C(POST /allocations) body Placement accepted (consumer UUID to its allocations, generation,
    project and user); null when nothing was written.
  returned: always
  type: dict
planned:
  description: In check mode, the plan (C(ops) with the POST body, C(source), C(target), C(skipped) candidates).
  returned: check mode
  type: dict
attempts:
  description: Each POST made for C(migrated) and its outcome (C(moved), C(capacity), C(generation-conflict)).
  returned: state=migrated
  type: list
reason:
  description: >-
    Why the move was refused (C(in-progress), C(no-allocations), C(several-hosts), C(mismatch)), or C(same-host)
    when C(migrated) found the consumer on the target with nothing held by the migration consumer.
  returned: failure, or C(same-host)
  type: str
diagnosis:
  description: When the target has no room, per request group why.
  returned: failure
  type: list
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import (
    SERVER_REQUEST_SPEC, server_spec)


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.allocation_migration import MoveRequest, move

    p = module.params
    step = {'migrated': 'move', 'confirmed': 'confirm', 'reverted': 'revert'}[p['state']]
    result = move(module.cloud(), MoveRequest(step=step, consumer=p['consumer'], server=server_spec(p),
                                              target_host=p['target_host'], migration=p['migration'],
                                              retries=p['retries'], check=module.check_mode, settled='unchanged'))
    values = dict(migration=result.migration, claim=result.claim.to_dict() if result.claim else None,
                  binding_profiles=result.binding_profiles,
                  written={c: dict(b) for c, b in result.written.items()} if result.written else None)
    if result.reason:
        values.update(reason=result.reason, msg=result.message)
    elif module.check_mode:
        values['planned'] = result.plan.to_dict()
    if step == 'move' and not result.reason:
        values['attempts'] = [a.to_dict() for a in result.attempts]
    return module.result(result.changed, diff=None if result.reason else result.diff(), **values)


def main():
    spec = dict(SERVER_REQUEST_SPEC, consumer=dict(type='str'), migration=dict(type='str', required=True),
                target_host=dict(type='str'), retries=dict(type='int', default=4),
                state=dict(type='str', default='migrated', choices=['migrated', 'confirmed', 'reverted']))
    MinbwModule(spec, required_if=[('state', 'migrated', ('consumer', 'target_host')),
                                   ('state', 'reverted', ('consumer',))]).run(ensure)


if __name__ == '__main__':
    main()
