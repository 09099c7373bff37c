#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: segment_providers
short_description: Make sure Placement shows routed networks' segments as Neutron's segments plugin reports them
description:
  - For each segment of a routed network (subnets bound to segments), Neutron's segments plugin reports one
    resource provider (uuid = the segment id, name C(Neutron segment id <id>)) with an C(IPV4_ADDRESS) inventory
    (total and reserved computed from the segment's IPv4 subnets), an aggregate, and the compute node providers
    of the segment's hosts in that aggregate. This module predicts exactly that from Neutron's segments, subnets and
    agents' mappings, compares it with Placement and, where Neutron did not report it (plugin off, Nova
    unreachable when the subnet was made), writes what is missing.
  - A segment provider that has an aggregate keeps it (Neutron's is a Nova host aggregate's uuid); a new one gets
    the segment id as aggregate. Compute node providers are only added to aggregates, never removed.
  - The inventory's C(total) and C(reserved) are Neutron's running counts (C(reserved) counts every IPv4 address of
    a port that is neither a compute nor a DHCP port). They are written for a new provider or inventory only; a
    count that differs is returned in C(differences) with its possible causes (and warned about), and set to
    Neutron's count only with O(recount).
  - Check mode returns the writes and changes nothing; a second run makes 0 writes.
  - Each segment's writes are its own unit. When Placement refuses one (the segment's provider deleted meanwhile, a
    conflict past the retries), that segment's writes stop and it is named in RV(failed_segments) and warned
    about; the other segments are written and the task succeeds. The task fails when every segment's writes
    failed, or Placement is unavailable (the error names the writes made and not made).
version_added: 0.2.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  networks:
    description: Names or ids of the networks; every network with subnets on segments when empty.
    type: list
    elements: str
    default: []
  recount:
    description:
      - Set an C(IPV4_ADDRESS) count that differs from Neutron's count of the segment's subnets and ports to that
        count, the one Neutron's later deltas continue from. Only when neither the count nor the ports moved for
        O(quiet_window) seconds, and only at the generation read then.
    type: bool
    default: false
  quiet_window:
    description: With O(recount), how long the counts must stay still, in seconds (more than Neutron's
      C(send_events_interval)).
    type: float
    default: 5.0
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Routed networks' segment providers, as Neutron would report them
  minbw.openstack.segment_providers:
    cloud: admin
    networks: [multisegment1]
  register: segs

- name: Every segment has a host and addresses left
  ansible.builtin.assert:
    that: segs.segments | selectattr('free_ips', 'equalto', 0) | list | length == 0
'''

RETURN = r'''
segments:
  description: Each segment with C(id), C(name), C(physical_network), C(subnets), C(provider) (C(uuid), C(name),
    C(inventories)), C(hosts) (Neutron's mapping), C(free_ips) (from Neutron's IP availability) and
    C(reserved_ports) (the ports counted in C(reserved)).
  returned: always
  type: list
  elements: dict
plan:
  description: The writes (C(ops)), made or, in check mode, planned; C(writes) counts them.
  returned: always
  type: dict
steps:
  description: The writes as sentences.
  returned: always
  type: list
  elements: str
warnings:
  description: Hosts mapped to a segment that have no compute node provider (yet); recounts not made because the
    count moved during the quiet window.
  returned: always
  type: list
  elements: str
differences:
  description: Each C(IPV4_ADDRESS) count that differs from Neutron's count, with C(segment), C(field)
    (C(total) or C(reserved)), C(placement), C(neutron), C(causes) and C(outcome).
  returned: always
  type: list
  elements: dict
unresolved:
  description: The differences left as they are (not recounted), as sentences.
  returned: always
  type: list
  elements: str
failed_segments:
  description: The segments whose writes failed while the others were written, each with C(segment), C(label),
    C(error), C(code) (Placement's error code) and C(pending) (its writes not made, the failed one first); running
    the module again resumes from what is in Placement.
  returned: always
  type: list
  elements: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.segments import SegmentsRequest, segments

    p = module.params
    result = segments(module.cloud(), SegmentsRequest(tuple(p['networks']), sync=True, check=module.check_mode,
                                                      recount=p['recount'], quiet_window=p['quiet_window']))
    report = result.to_dict()
    for w in report['warnings'] + report['unresolved'] + result.failed:
        module.ansible.warn(w)
    return module.result(report.pop('changed'), diff=report.pop('diff'), **report)


def main():
    MinbwModule(dict(networks=dict(type='list', elements='str', default=[]), recount=dict(type='bool', default=False),
                     quiet_window=dict(type='float', default=5.0))).run(ensure)


if __name__ == '__main__':
    main()
