# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r'''
options:
  flavor:
    description:
      - A Nova flavor (name or id) whose vcpus, ram, disk and extra specs (C(resources*:), C(trait*:),
        C(group_policy), C(hw:*)) make the server's request as Nova builds it, instead of O(resources) (and the
        traits and group policy given beside it, where the module takes them).
    type: str
  image:
    description: A Glance image (name or id) whose properties (C(trait:*), C(hw_*)) Nova's request adds.
    type: str
  availability_zone:
    description:
      - The requested availability zone, as Nova's C(map_az_to_placement_aggregate) reads it - C(member_of) the
        aggregates whose metadata names it; a count leaves the hosts outside them at 0, saying why.
    type: str
  project:
    description: The server's project, for Nova's tenant isolation (C(scheduler.limit_tenants_to_placement_aggregate)).
    type: str
'''

    # Nova's scheduler options alone (module_utils/server_request.py NOVA_SCHEDULER_SPEC): modules that read Nova's
    # request filters without a server of their own (host_drain, host_drain_info)
    SCHEDULER = r'''
options:
  nova_options:
    description:
      - "Nova's scheduler options by Nova's names, C(section.option) to value, for example
        C({scheduler.image_metadata_prefilter: true}); Nova's defaults otherwise."
      - Nova's request filters apply as Nova applies them, these options included (docs/scheduling.md).
    type: dict
    default: {}
  nova_conf:
    description: A nova.conf to read Nova's scheduler options from (O(nova_options) win).
    type: path
  owner_nova:
    description:
      - Whether every nova-compute reports C(OWNER_NOVA), so that Nova requires it on the compute node.
      - C(auto) reads it as Nova decides it (the minimum nova-compute service version, 73 or more) from Nova's
        nova-compute services and their compute nodes' roots in Placement, or, where Nova's API cannot be read,
        from every C(COMPUTE_NODE) root in Placement. During a rolling upgrade to Nova 34 either says no while an
        older nova-compute is counted.
    type: str
    default: auto
    choices: [auto, 'yes', 'no']
'''
