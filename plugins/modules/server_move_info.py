#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: server_move_info
short_description: Check a server's bandwidth guarantee at any step of a move through Nova
description:
  - Reads the server, its ports (their QoS request groups and C(binding:profile)), its newest migration record,
    the allocations of the server consumer and of the migration consumer (the migration record's uuid) and every
    provider of the host trees involved, and judges the step the server is at (RV(phase)).
  - C(verify_resize) (a cold migration or resize waiting for confirm or revert) - the migration consumer holds the
    source (every port group on a source provider with the group's physnet and vnic traits), the server holds the
    target, the ports are bound to the target and their C(binding:profile.allocation) names the target providers.
  - C(settled) (no move in progress) - the guarantee of M(minbw.openstack.server_bandwidth_info), the server's
    allocations in one host tree (on the target after a confirm, a live migration or an evacuation clean-up, on
    the source after a revert), the migration consumer empty, each port group's bandwidth counted once.
  - C(evacuated) (evacuation done, the source's nova-compute not started again yet) - the target part of the
    server's allocation serves its request and the ports name it; Nova keeps the source part until the source
    cleans up, which is reported in RV(notes).
  - C(shelved_offloaded) - no allocations, ports unbound without C(binding:profile.allocation).
  - Always - no provider's usage above its capacity, each provider's usage equal to the sum of its consumers'
    allocations.
  - Returns RV(ok) and RV(problems), one sentence each. It does not fail when a rule is broken; assert on RV(ok).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
options:
  server:
    description: Name or id of the server.
    type: str
    required: true
  expect_allocations:
    description:
      - "What the server consumer must hold exactly, provider UUID to C({class: amount}); for example, after a
        revert, RV(allocations) of the migration consumer read in C(verify_resize)."
    type: dict
'''

EXAMPLES = r'''
- name: Where is vm0 in its resize, and does its bandwidth follow?
  minbw.openstack.server_move_info:
    cloud: mycloud
    server: vm0
  register: vm0_move

- name: The source is held by the migration record, the target by the server
  ansible.builtin.assert:
    that: vm0_move.ok and vm0_move.phase == 'verify_resize'
    fail_msg: "{{ vm0_move.problems }}"

- name: After the revert, the server holds exactly what the migration held
  minbw.openstack.server_move_info:
    cloud: mycloud
    server: vm0
    expect_allocations: "{{ vm0_move.allocations[vm0_move.consumers.migration] }}"
'''

RETURN = r'''
ok:
  description: Whether every rule of the step holds (no problems).
  returned: always
  type: bool
problems:
  description: What breaks the rules, one sentence each, naming the server, migration, port, group and provider.
  returned: always
  type: list
  elements: str
  sample:
    - "port p0 (9a8c...): binding:profile.allocation is {'ca60...': 'f9c9...'}, but the server's allocation maps its
       request group(s) to {'ca60...': '2c88...'}"
notes:
  description: Remarks that are not problems (a move in progress, an evacuation's pending clean-up, an older
    migration record).
  returned: always
  type: list
  elements: str
phase:
  description: C(settled), C(verify_resize), C(evacuated), C(shelved_offloaded), C(moving) (a move in progress;
    only the capacity rules apply) or C(failed) (the server is ERROR).
  returned: always
  type: str
server:
  description: The server's C(id), C(name), C(status), C(task_state), C(vm_state), C(compute_host),
    C(hypervisor_hostname), C(flavor) and C(fault).
  returned: always
  type: dict
migration:
  description: The newest migration record - C(uuid), C(status), C(migration_type), C(source_compute),
    C(dest_compute), C(source_node), C(dest_node); null when the server was never moved.
  returned: always
  type: dict
last_action:
  description: The server's newest instance action that moved it (create, migrate, resize, confirmResize,
    revertResize, live-migration, evacuate, shelve, shelveOffload, unshelve) when it has a migration record.
  returned: always
  type: str
consumers:
  description: The consumer uuids - C(server) and C(migration) (null without a migration record).
  returned: always
  type: dict
allocations:
  description: "Allocations per consumer - consumer uuid to provider UUID to C({class: amount})."
  returned: always
  type: dict
binding_allocations:
  description: Each port's C(binding:profile.allocation) (port id to its value; null when absent).
  returned: always
  type: dict
binding_hosts:
  description: Each port's C(binding:host_id).
  returned: always
  type: dict
groups:
  description: Per consumer, each request group id to C(provider) and C(provider_name) holding its bandwidth.
  returned: always
  type: dict
hosts:
  description: Compute node name to its root provider UUID, for the hosts involved.
  returned: always
  type: dict
providers:
  description: "The providers that hold allocations, with C(name), C(root), C(capacity), C(usages) and
    C(consumers) (consumer uuid to C({class: amount}))."
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.server_move import MoveStateQuery, move_state

    p = module.params
    return module.result(False, **move_state(module.cloud(), MoveStateQuery(p['server'], p['expect_allocations'])).to_dict())


def main():
    MinbwModule(dict(server=dict(type='str', required=True), expect_allocations=dict(type='dict'))).run(info)


if __name__ == '__main__':
    main()
