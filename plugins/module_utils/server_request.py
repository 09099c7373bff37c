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


def server_request_of(params, api=None):
    """The core's ServerRequest from the SERVER_REQUEST_SPEC options (kept off or onto the hosts reserved
    for QoS ports as O(separation) says); O(ports) are read from Neutron through ``api``'s connection."""
    from minbw.model.requests import ServerRequest
    from minbw.plan.separation import separate, separation_of
    plain = [opt for opt in SERVER_REQUEST_SPEC if opt not in ('separation', 'ports', 'any_traits')]
    req = ServerRequest.from_options(**{opt: params[opt] for opt in plain})
    if params.get('ports'):
        from minbw.ops.schedule import with_neutron_ports
        req = with_neutron_ports(api, req, params['ports'], any_traits=params['any_traits'])[0]
    return separate(req, separation_of(option='separation', **(params['separation'] or {})))
