#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: host_drain
short_description: Drain a compute host - every server moved to its planned host and verified - or enable it again
description:
  - With O(state=drained), plans the drain of O(host) as M(minbw.openstack.host_drain_info) does (every server
    placed at once on the other hosts, no destination overcommitted by the moves together), then disables the host's
    nova-compute with O(reason) (Nova's C(disabled_reason); a compute already disabled keeps its own), then moves
    each server to its planned host through Nova's scheduler, never forced - a live migration for an C(ACTIVE)
    server, a cold one (confirmed) otherwise or with O(cold) - at most O(parallel) at once. Before each group of
    moves after the first the drain is planned again from fresh reads of Nova and Placement - room taken by another
    boot, or a compute gone down, is never a destination - and a server the re-plan has no place for is not moved
    (its step's outcome is C(no place), with which resource is short, by how much, on which providers).
  - After each move it verifies the server's allocation sits exactly on the planned providers (or, when Nova chose
    other providers on the planned host, serves every request group there - the step's C(note) says so), every
    port's C(binding:profile.allocation) names them, and the migration consumer holds nothing on the source. The
    first failure (Nova's refusal, an C(ERROR), a failed, cancelled or timed-out migration, a verification, a server
    with no place, Nova or Placement unreachable) fails the task before the next move is started; RV(message) says
    where things stand. Running it again reads Nova and Placement again
    and goes on (a cold migration left in C(VERIFY_RESIZE) is confirmed first).
  - When some server cannot move, nothing is moved and the host is left as it is (the task fails with the plan)
    unless O(partial=true).
  - A host already disabled with no server left is C(changed=false).
  - With O(state=enabled), enables the host's nova-compute again (Nova clears the reason).
version_added: 0.3.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.nova_server.scheduler
options:
  host:
    description: The compute host (its nova-compute host name).
    type: str
    required: true
  state:
    description: C(drained) - disabled with every server moved off; C(enabled) - its nova-compute enabled again.
    type: str
    default: drained
    choices: [drained, enabled]
  reason:
    description: Why the host is disabled (Nova's C(disabled_reason)).
    type: str
    default: 'minbw host drain: maintenance'
  cold:
    description: Cold-migrate every server (by default C(ACTIVE) servers are live-migrated).
    type: bool
    default: false
  parallel:
    description: At most this many moves in flight at once.
    type: int
    default: 1
  partial:
    description: When some server cannot move, move the others anyway (the host then still holds those).
    type: bool
    default: false
  wait:
    description: The module always waits for each move's end, to verify it before the next; C(false) is refused.
    type: bool
    default: true
  timeout:
    description: Seconds one move may take.
    type: int
    default: 300
attributes:
  check_mode:
    support: full
    details: The plan is made and returned, nothing is changed; C(changed) says whether the run would change anything.
  diff_mode:
    support: full
    details: The moves, each server's host before and after, and the compute's state.
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Drain devstack0 for a kernel update
  minbw.openstack.host_drain:
    cloud: mycloud
    host: devstack0
    reason: kernel update
  register: drain

- name: Enable it again after the window
  minbw.openstack.host_drain:
    cloud: mycloud
    host: devstack0
    state: enabled
'''

RETURN = r'''
host:
  description: The host.
  returned: always
  type: str
state:
  description:
    - C(drained), C(enabled), C(planned) (check mode), C(refused) (the plan is incomplete, nothing moved) or
      C(stopped) (a move failed, the next ones were not made).
  returned: always
  type: str
message:
  description: Where things stand, in one line.
  returned: always
  type: str
compute:
  description: The nova-compute service as it stands - C(host), C(id), C(disabled), C(reason).
  returned: always
  type: dict
steps:
  description:
    - One per server moved (or confirmed) - C(server_id), C(server_name), C(kind), C(host) (the destination),
      C(outcome) (C(moved), C(confirmed), C(failed), C(no place)), C(error), C(problems), C(note).
  returned: always
  type: list
  elements: dict
pending:
  description: The planned moves not made (check mode - every one).
  returned: always
  type: list
  elements: dict
plan:
  description: The plan followed, as M(minbw.openstack.host_drain_info) returns it (null for O(state=enabled)).
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import NOVA_SCHEDULER_SPEC, nova_scheduler_fields


def diff_of(run):
    """Before/after: the compute's state and each planned server's host."""
    plan = run['plan'] or {'moves': [], 'source': run['host']}
    before = {'disabled': run['compute']['disabled'], 'servers': dict((m['server_name'], plan['source']) for m in plan['moves'])}
    after = {'disabled': run['state'] != 'enabled', 'servers': dict((m['server_name'], m['host']) for m in plan['moves'])}
    return {'before': before, 'after': after}


def drain(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.drain import HostDrainRequest, drain_host

    p = module.params
    if not p['wait']:
        module.ansible.fail_json(msg='wait=false: host_drain waits for each move to verify it before the next; leave wait out '
                                     '(or set it to true) and bound each move with timeout')
    run = drain_host(module.cloud(), HostDrainRequest(
        p['host'], **nova_scheduler_fields(p), cold=p['cold'], parallel=p['parallel'],
        partial=p['partial'], reason=p['reason'], timeout=p['timeout'], check=module.check_mode,
        undo=p['state'] == 'enabled'))
    doc = run.to_dict()
    if doc['state'] in ('refused', 'stopped'):
        doc.pop('changed')
        module.ansible.fail_json(msg=doc['message'], changed=run.changed, **doc)
    return module.result(run.changed, diff=diff_of(doc), **dict((k, v) for k, v in doc.items() if k != 'changed'))


def main():
    MinbwModule(dict(host=dict(type='str', required=True),
                     state=dict(type='str', default='drained', choices=['drained', 'enabled']),
                     reason=dict(type='str', default='minbw host drain: maintenance'),
                     cold=dict(type='bool', default=False), parallel=dict(type='int', default=1),
                     partial=dict(type='bool', default=False), **NOVA_SCHEDULER_SPEC,
                     wait=dict(type='bool', default=True), timeout=dict(type='int', default=300))).run(drain)


if __name__ == '__main__':
    main()
