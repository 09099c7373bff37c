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
  - Check mode returns the writes and changes nothing; a second run makes 0 writes.
version_added: 0.1.0
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
    C(inventories)), C(hosts) (Neutron's mapping) and C(free_ips) (from Neutron's IP availability).
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
  description: Hosts mapped to a segment that have no compute node provider (yet).
  returned: always
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from minbw.usecases.segments import SegmentsRequest, segments

    result = segments(module.cloud(), SegmentsRequest(tuple(module.params['networks']), sync=True,
                                                      check=module.check_mode))
    report = result.to_dict()
    for w in report['warnings']:
        module.ansible.warn(w)
    return module.result(report.pop('changed'), diff=report.pop('diff'), **report)


def main():
    MinbwModule(dict(networks=dict(type='list', elements='str', default=[]))).run(ensure)


if __name__ == '__main__':
    main()
