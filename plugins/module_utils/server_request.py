# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""The options that describe what a server asks Placement for, shared by allocation modules."""

from __future__ import annotations

# Nova's scheduler options (doc fragment minbw.openstack.nova_server.scheduler)
NOVA_SCHEDULER_SPEC = dict(
    nova_options=dict(type='dict', default={}),
    nova_conf=dict(type='path'),
    owner_nova=dict(type='str', default='auto', choices=['auto', 'yes', 'no']),
)

# the server as operators name it (doc fragment minbw.openstack.nova_server), and Nova's scheduler options
NOVA_SPEC = dict(
    flavor=dict(type='str'),
    image=dict(type='str'),
    availability_zone=dict(type='str'),
    project=dict(type='str'),
    **NOVA_SCHEDULER_SPEC
)

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
    **NOVA_SPEC
)


def server_spec(params):
    """The use cases' ServerSpec from the SERVER_REQUEST_SPEC options (O(ports) are read from Neutron by the use
    case; O(separation) keeps the server off or onto the hosts reserved for QoS ports)."""
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.server_request import ServerSpec
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.separation import separation_of
    return ServerSpec(resources=params['resources'] or {}, required=tuple(params['required']),
                      port_requests=tuple(params['port_requests']), ports=tuple(params['ports']),
                      any_traits=params['any_traits'], group_policy=params['group_policy'], in_tree=params['in_tree'],
                      root_required=tuple(params['root_required']), limit=params['limit'],
                      separation=separation_of(option='separation', **(params['separation'] or {})),
                      **nova_fields(params))


def nova_scheduler_fields(params):
    """The use cases' fields of the NOVA_SCHEDULER_SPEC options: Nova's scheduler options by Nova's names
    (O(nova_options): C(section.option) to value; O(nova_conf)), and O(owner_nova)."""
    options = tuple('%s=%s' % (k, str(v).lower() if isinstance(v, bool) else v)
                    for k, v in (params['nova_options'] or {}).items())
    return dict(nova_options=options, nova_conf=params['nova_conf'],
                owner_nova={'auto': None, 'yes': True, 'no': False}[params['owner_nova']])


def nova_fields(params):
    """The ServerSpec (and CapacityQuery) fields of the Nova options: the server as operators name it, and Nova's
    scheduler options (nova_scheduler_fields)."""
    return dict(flavor=params['flavor'], image=params['image'], availability_zone=params['availability_zone'],
                project=params['project'], **nova_scheduler_fields(params))
