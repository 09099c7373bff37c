# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""The options that describe what a server asks Placement for, shared by allocation modules."""

from __future__ import annotations

SERVER_REQUEST_SPEC = dict(
    resources=dict(type='dict', default={}),
    required=dict(type='list', elements='str', default=[]),
    port_requests=dict(type='list', elements='dict', default=[]),
    ports=dict(type='list', elements='str', default=[]),
    any_traits=dict(type='bool', default=False),
    group_policy=dict(type='str', choices=['none', 'isolate']),
    in_tree=dict(type='str'),
    root_required=dict(type='list', elements='str', default=[]),
    limit=dict(type='int'),
    separation=dict(type='dict', options=dict(
        mode=dict(type='str', default='off', choices=['off', 'avoid', 'strict']),
        trait=dict(type='str', default='CUSTOM_MINBW_QOS_HOST'),
        aggregate=dict(type='str'),
    )),
)


def server_spec(params):
    """The use cases' ServerSpec from the SERVER_REQUEST_SPEC options (O(ports) are read from Neutron by the use
    case; O(separation) keeps the server off or onto the hosts reserved for QoS ports)."""
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.candidates import ServerSpec
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.separation import separation_of
    return ServerSpec(resources=params['resources'] or {}, required=tuple(params['required']),
                      port_requests=tuple(params['port_requests']), ports=tuple(params['ports']),
                      any_traits=params['any_traits'], group_policy=params['group_policy'], in_tree=params['in_tree'],
                      root_required=tuple(params['root_required']), limit=params['limit'],
                      separation=separation_of(option='separation', **(params['separation'] or {})))
