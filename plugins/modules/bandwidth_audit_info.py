#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_audit_info
short_description: Find leaked or double bandwidth allocations, stale bindings and providers over capacity
description:
  - Reads every resource provider with an inventory and its allocations (Placement), the live servers and
    Nova's migrations (Nova) and the ports with a C(resource_request) or a C(binding:profile.allocation)
    (Neutron), and reports, one finding each,
  - C(leaked-allocation), a consumer holding bandwidth or packet rate that is neither a live server nor an
    in-progress migration;
  - C(stale-binding), a port whose C(binding:profile.allocation) names a provider that holds nothing of its
    request for its server, or a port bound to no server;
  - C(double-allocation), a server holding more of a class on a provider than the request groups bound there
    request (and more than its ports and flavor request in all), naming the port and group, the provider and
    the extra amount (what C(nova-manage placement heal_allocations) leaves when it heals a port whose binding
    allocation was cleared while its allocation stayed);
  - C(over-allocation), the same excess on a provider no binding allocation of the server's ports names;
  - C(over-capacity), a provider whose usage of a class is above C((total - reserved) * allocation_ratio), with
    its consumers youngest first (servers by creation or the migration that brought them to the host; other
    consumers have no known age, Placement keeps no allocation times) and which of them to move.
  - With O(fix=true) (off by default), leaked bandwidth is removed from its consumer (its other allocations stay)
    and stale binding allocations are cleared; the other findings are reported only (an interface attach in
    progress looks like a double allocation for a moment; which consumer leaves a full provider is the
    operator's choice). Needs admin credentials.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.service_cloud
  - ansible.builtin.action_common_attributes
options:
  fix:
    description: Apply the fixes. In check mode nothing is changed and RV(fixes) is empty.
    type: bool
    default: false
  ignore_consumers:
    description: Consumers that are not Nova's (claims made with M(minbw.openstack.allocation), bare metal).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details: Without O(fix) the module only reads; with it, check mode changes nothing and RV(fixes) is empty.
  diff_mode:
    support: none
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Audit bandwidth allocations (a CI gate)
  minbw.openstack.bandwidth_audit_info:
    cloud: mycloud
  register: audit
  failed_when: not audit.ok
'''

RETURN = r'''
ok:
  description: No finding (or every finding was fixed).
  returned: always
  type: bool
findings:
  description:
    - C(kind), C(subject) (consumer, port, server or provider), C(detail) and the C(fix) it would take (or null).
    - C(double-allocation) and C(over-allocation) add C(provider), C(holds), C(extra), C(keep), C(bound) (the
      port groups bound there) and C(ambiguous); C(over-capacity) adds C(provider), C(host), C(classes) (used,
      capacity, total, reserved, allocation_ratio, over), C(consumers) (youngest first, with C(since), null when
      not known, C(basis) and C(todo)) and C(move) (the consumers to move, youngest first, to fit again).
  returned: always
  type: list
  elements: dict
fixes:
  description: With O(fix=true), each fix applied, with C(done) and C(error).
  returned: always
  type: list
  elements: dict
checked:
  description: How many consumers with bandwidth, ports with requests and providers with inventories were checked.
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import SERVICE_CLOUD_SPEC, MinbwModule


def audit_info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.audit import AuditRequest, audit

    p = module.params
    result = audit(module.cloud(), AuditRequest(fix=p['fix'], ignore_consumers=tuple(p['ignore_consumers']),
                                                check=module.check_mode))
    report = result.to_dict()
    return module.result(result.changed, ok=result.ok, findings=report['findings'], fixes=report['fixes'],
                         checked=report['checked'])


def main():
    MinbwModule(dict(SERVICE_CLOUD_SPEC, fix=dict(type='bool', default=False),
                     ignore_consumers=dict(type='list', elements='str', default=[]))).run(audit_info)


if __name__ == '__main__':
    main()
