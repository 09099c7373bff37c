#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: allocation
short_description: Claim or free a consumer's resources in Placement, QoS ports included
description:
  - C(state=present) claims everything a server asks for (flavor resources and every QoS port's request
    groups) in one atomic C(PUT /allocations/{consumer}) on a candidate from one allocation candidates query.
    A capacity conflict moves to the next candidate, then the next host (as Nova's alternates); a provider
    generation conflict is retried with jittered backoff; a consumer generation conflict fails.
  - The result names the host, the allocations, which provider fulfils each request group, and each port's
    C(binding:profile.allocation) value.
  - When nothing fits, the task fails with a per-group diagnosis (C(diagnosis)).
  - When Placement accepted the claim and its verification (a read of the usages of the providers it raised)
    then failed, the task fails with C(changed=true), C(written_unverified=true) and the claim in C(written); the
    consumer holds it, not verified. Running the task again finds it held and reports it unchanged; C(state=absent)
    frees it.
  - A consumer that already has allocations satisfying the request is left as it is (idempotent).
  - C(state=absent) frees the consumer's allocations with a safe delete (at its consumer generation).
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
    description: The consumer UUID (a server's UUID).
    type: str
    required: true
  state:
    description: C(present) claims, C(absent) frees.
    type: str
    choices: [present, absent]
    default: present
  project_id:
    description: Project of the consumer; required to claim.
    type: str
  user_id:
    description: User of the consumer; required to claim.
    type: str
  consumer_type:
    description: Consumer type, for example C(INSTANCE) (Placement 1.38).
    type: str
  max_hosts:
    description: How many hosts to try before giving up (Nova's alternates).
    type: int
    default: 3
attributes:
  check_mode:
    support: full
    details: The claim is planned (the host, the allocations, the binding profiles) and not made.
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Claim vm0 with its QoS port
  minbw.openstack.allocation:
    cloud: minbw-local
    consumer: 71cb7e04-3d5a-40f9-a99f-07f0d0831741
    project_id: demo
    user_id: demo
    resources: {VCPU: 1, MEMORY_MB: 256, DISK_GB: 1}
    port_requests:
      - port_id: 99a97b12-6364-4d10-8d8e-c3dab4161691
        resource_request: "{{ request.resource_request }}"
  register: vm0

- name: Free it
  minbw.openstack.allocation:
    cloud: minbw-local
    consumer: 71cb7e04-3d5a-40f9-a99f-07f0d0831741
    state: absent
'''

RETURN = r'''
claim:
  description: >-
    The consumer's claim (absent after freeing or when nothing was claimed). In check mode, the claim
    the real run makes first: the same plan, the same host and providers (without C(host_name) and
    C(attempts)).
  returned: state=present
  type: dict
  contains:
    host: {description: Root provider (compute node) UUID., type: str}
    host_name: {description: Its name., type: str}
    allocations: {description: "Provider UUID to C({resources: {class: amount}}).", type: dict}
    mapping: {description: "Request group id (C('') for the flavor) to provider UUIDs.", type: dict}
    binding_profiles: {description: "Port id to its C(binding:profile.allocation) value.", type: dict}
    attempts: {description: Each claim attempt and its outcome., type: list}
planned:
  description: >-
    In check mode, the claim plan: C(ops) (the claim), C(attempts) (how many candidates the real run
    would try at most) and C(skipped) (candidates without a single group-to-provider mapping, and why).
  returned: check mode, state=present, when a claim is needed
  type: dict
diagnosis:
  description: When nothing fits, per request group why.
  returned: failure
  type: list
written_unverified:
  description: >-
    True when the claim is written in Placement and its verification's read failed (the task failed with
    C(changed=true)).
  returned: failure, when the claim is written and not verified
  type: bool
written:
  description: >-
    The claim written and not verified: C(consumer), C(host), C(allocations), C(mapping), C(binding_profiles).
  returned: failure, when the claim is written and not verified
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule
from ansible_collections.minbw.openstack.plugins.module_utils.server_request import (
    SERVER_REQUEST_SPEC, server_spec)


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.allocation import ClaimRequest, FreeRequest, claim, free

    p = module.params
    if p['state'] == 'absent':
        result = free(module.cloud(), FreeRequest(p['consumer'], check=module.check_mode))
        return module.result(result.changed, diff=result.plan.diff())
    result = claim(module.cloud(), ClaimRequest(p['consumer'], server_spec(p), project_id=p['project_id'],
                                                user_id=p['user_id'], consumer_type=p['consumer_type'],
                                                max_hosts=p['max_hosts'], check=module.check_mode))
    values = dict(claim=result.claim.to_dict())
    if result.plan is not None:
        values['planned'] = result.plan.to_dict()
    return module.result(result.changed, diff=result.diff() if result.changed else None, **values)


def main():
    spec = dict(SERVER_REQUEST_SPEC, consumer=dict(type='str', required=True),
                state=dict(type='str', default='present', choices=['present', 'absent']),
                project_id=dict(type='str'), user_id=dict(type='str'), consumer_type=dict(type='str'),
                max_hosts=dict(type='int', default=3))
    MinbwModule(spec).run(ensure)


if __name__ == '__main__':
    main()
