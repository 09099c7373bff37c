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
  ports:
    description:
      - Neutron ports (names or ids), read from Neutron as an admin. Each port's C(resource_request) joins the
        request and, for a port on a routed network, C(member_of) the aggregates of its segments (its fixed IPs'
        segments, or every segment of its network for a port without an address yet), leaving out segments
        without free IPv4 addresses, as Nova's routed-network prefilter does.
    type: list
    elements: str
    default: []
  any_traits:
    description:
      - With O(ports), a port on a network with several physnet segments may get its bandwidth on any of them
        (C(required=in:A,B), Placement 1.39); Neutron's own request uses only the first segment.
    type: bool
    default: false
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
  separation:
    description:
      - Hosts reserved for servers with QoS ports (see M(minbw.openstack.host_separation)). Off unless given.
    type: dict
    suboptions:
      mode:
        description:
          - C(off) changes nothing. C(avoid) keeps a server without QoS ports off the reserved hosts
            (C(root_required=!TRAIT), Placement 1.35, or C(member_of=!in:AGGREGATE), 1.32).
          - C(strict) also makes a server with QoS ports land on a reserved host (C(root_required=TRAIT) or
            C(member_of=AGGREGATE)).
        type: str
        choices: ['off', avoid, strict]
        default: 'off'
      trait:
        description: The trait on the reserved hosts' root providers (C(CUSTOM_) and A-Z, 0-9, _).
        type: str
        default: CUSTOM_MINBW_QOS_HOST
      aggregate:
        description: Reserved hosts are this Placement aggregate's members instead (a UUID).
        type: str
'''
