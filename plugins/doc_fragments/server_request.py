# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r'''
options:
  resources:
    description:
      - "The flavor's resources (the unsuffixed request group), resource class to amount,
        for example C({VCPU: 1, MEMORY_MB: 256, DISK_GB: 1})."
    type: dict
    default: {}
  required:
    description: Traits the flavor requires (forbidden ones prefixed with C(!)).
    type: list
    elements: str
    default: []
  port_requests:
    description:
      - One entry per QoS port, each a dict with C(port_id) (or C(id)) and C(resource_request), the port's
        C(resource_request) as Neutron reports it, in either format (C(request_groups)/C(same_subtree), or the
        legacy single group). A Neutron port as returned by the network API can be passed as it is.
    type: list
    elements: dict
    default: []
  group_policy:
    description:
      - How numbered groups may share providers. Placement requires it with more than one numbered group;
        the default is C(none) then, as Nova does.
    type: str
    choices: [none, isolate]
  in_tree:
    description: Only candidates in the tree of this provider UUID (for example one compute node).
    type: str
  root_required:
    description: Traits the root provider (compute node) must have (Placement 1.35).
    type: list
    elements: str
    default: []
  limit:
    description: At most this many allocation candidates.
    type: int
'''
