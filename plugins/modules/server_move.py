#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: server_move
short_description: Move a server through Nova (migrate, resize, confirm, revert, live migrate, evacuate, shelve)
description:
  - Makes one server action through Nova's compute API and waits, bounded by O(timeout), until the server and its
    migration record reach the state the action leads to - C(migrate) and C(resize) to C(VERIFY_RESIZE) with the
    migration C(finished); C(confirm) and C(revert) to C(ACTIVE) (or C(SHUTOFF)) with the migration C(confirmed) or
    C(reverted); C(live_migrate) to C(ACTIVE) with the migration C(completed); C(evacuate) to C(SHUTOFF) (Nova's
    compute API 2.95 and later leave an evacuated server stopped) with the migration C(done); C(shelve) to
    C(SHELVED_OFFLOADED); C(unshelve) and C(start) to C(ACTIVE).
  - Fails, naming the server, the migration and the statuses seen, when the server goes to C(ERROR), the migration
    to C(error) or C(failed), Nova refuses the request, or the wait runs out.
  - Does nothing (C(changed=false)) when the action is already done - the server already on O(host), already of
    O(flavor), its resize already confirmed or reverted, already offloaded, already C(ACTIVE).
  - An evacuation needs the source's nova-compute down; O(force_down_source) marks it forced down first (the host
    must really be down). Nova releases the source allocation when nova-compute on the source starts again, and
    refuses to lift the forced-down mark before that.
  - Verify the bandwidth guarantee at each step with M(minbw.openstack.server_move_info); the role
    C(minbw.openstack.bandwidth_move) does both.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  server:
    description: Name or id of the server.
    type: str
    required: true
  action:
    description: The Nova action.
    type: str
    required: true
    choices: [migrate, resize, confirm, revert, live_migrate, evacuate, shelve, unshelve, start]
  host:
    description:
      - Target compute host for C(migrate), C(live_migrate), C(evacuate) and C(unshelve) (checked by the
        scheduler). Omitted, the scheduler picks one.
    type: str
  flavor:
    description: Name (or id) of the flavor to resize to; required for C(resize).
    type: str
  force_down_source:
    description: For C(evacuate), mark the source's nova-compute forced down first (compute API 2.11+).
    type: bool
    default: false
  wait:
    description:
      - The module always waits for the end state of the action, since checking the server's allocations and
        bindings there is what it is for; C(false) is refused (leave it out, or bound the wait with O(timeout)).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the end state of the action.
    type: int
    default: 180
attributes:
  check_mode:
    support: full
    details: The action is planned from the server's state (the same plan the real run applies) and not made.
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Cold migrate vm0 to compute1
  minbw.openstack.server_move:
    cloud: mycloud
    server: vm0
    action: migrate
    host: compute1

- name: Confirm it
  minbw.openstack.server_move:
    cloud: mycloud
    server: vm0
    action: confirm

- name: Evacuate vm1 from its failed host
  minbw.openstack.server_move:
    cloud: mycloud
    server: vm1
    action: evacuate
    force_down_source: true
'''

RETURN = r'''
plan:
  description: The planned Nova call - C(changed), C(writes) and C(ops) (each with C(action), C(server), C(host),
    C(flavor) and C(force_down), the host marked forced down first).
  returned: always
  type: dict
server:
  description: The server when the wait ended - C(id), C(name), C(status), C(task_state), C(compute_host),
    C(hypervisor_hostname), C(flavor) (null in check mode or when nothing was done).
  returned: always
  type: dict
migration:
  description: The migration record the wait ended on (C(uuid), C(status), C(migration_type), C(source_compute),
    C(dest_compute), ...); null for actions without one (shelve, unshelve, start) and when nothing was done.
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def move(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.server_move import ServerMoveRequest, server_move

    p = module.params
    if not p['wait']:
        module.ansible.fail_json(msg='wait=false: server_move always waits for the end state of the action to '
                                     'check it; leave wait out (or set it to true) and bound the wait with timeout')
    result = server_move(module.cloud(), ServerMoveRequest(p['server'], p['action'], host=p['host'],
                                                           flavor=p['flavor'], force_down_source=p['force_down_source'],
                                                           timeout=p['timeout'], check=module.check_mode))
    return module.result(result.plan.changed, diff=result.plan.diff(), **result.to_dict())


def main():
    MinbwModule(dict(server=dict(type='str', required=True),
                     action=dict(type='str', required=True,
                                 choices=['migrate', 'resize', 'confirm', 'revert', 'live_migrate', 'evacuate',
                                          'shelve', 'unshelve', 'start']),
                     host=dict(type='str'), flavor=dict(type='str'),
                     force_down_source=dict(type='bool', default=False)),  # wait, timeout: the shared spec
                required_if=[('action', 'resize', ['flavor'])]).run(move)


if __name__ == '__main__':
    main()
