#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: server_bandwidth_info
short_description: Verify that a server's minimum bandwidth and packet rate guarantee holds
description:
  - Reads the server (its embedded flavor, host and status), its ports and their QoS request groups - Neutron's
    own C(resource_request) when the caller may see it (admin), else computed from the port's QoS rules,
    network segments and vnic type exactly as Neutron does - and the server's allocations in Placement.
  - Maps the allocations to the request groups (flavor and every port group) with minbw's exact solver, which
    checks that each group's provider has its traits and amounts and that C(same_subtree) holds, and refuses
    an allocation that fits no or several mappings.
  - Then checks that each port's C(binding:profile.allocation) names exactly the providers of its groups, that
    those providers hold the amounts for the server and count them in their usage, that the ports are bound to
    the server's host and that the allocations are on the server's hypervisor.
  - Returns RV(ok) and a list of RV(problems), one sentence each, naming the port, group and provider concerned.
    It does not fail when the guarantee is broken; assert on RV(ok).
  - A server in ERROR holds no guarantee - its one problem is Nova's fault. When Nova found no valid host, the
    problem adds minbw's per-group diagnosis of the same request (the server's flavor and its ports' request
    groups), also returned in RV(diagnosis) - which group no provider could serve, the trait nobody has, or the
    largest free capacity left. This is what C(openstack.cloud.server) lacks when a boot fails - boot with it, then
    run this module (the role R(minbw.openstack.bandwidth_server,ansible_collections.minbw.openstack.bandwidth_server_role) does both).
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
options:
  server:
    description: Name or id of the server.
    type: str
    required: true
  ports:
    description:
      - Names or ids of the ports the server was booted with. Only read for a server in ERROR, whose ports
        Nova never bound (they do not name it as their device) - its diagnosis needs their request groups.
        Without them, the ports bound to the server are used.
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Does vm0 get its bandwidth?
  minbw.openstack.server_bandwidth_info:
    cloud: mycloud
    server: vm0
  register: vm0

- name: It must
  ansible.builtin.assert:
    that: vm0.ok
    fail_msg: "{{ vm0.problems }}"

- name: Boot vm1 with openstack.cloud; when Nova finds no valid host, say why group by group
  openstack.cloud.server:
    cloud: mycloud
    name: vm1
    flavor: cirros256
    image: cirros
    nics: [{port-name: port-normal-qos-2}]
    auto_ip: false
  register: vm1_boot
  failed_when: vm1_boot.failed and 'No valid host' not in vm1_boot.msg | default('')

- name: Explain vm1 (Nova's fault and minbw's diagnosis in problems, the groups in diagnosis)
  minbw.openstack.server_bandwidth_info:
    cloud: mycloud
    server: vm1
    ports: [port-normal-qos-2]
  register: vm1
'''

RETURN = r'''
ok:
  description: Whether the guarantee holds (no problems).
  returned: always
  type: bool
problems:
  description: What is wrong, one sentence each.
  returned: always
  type: list
  elements: str
  sample:
    - "port port-normal-qos (99a97b12-6364-4d10-8d8e-c3dab4161691): binding:profile.allocation is {} but the
       server's allocation maps its request group(s) to {'dde3a281-d069-5cbd-ba7a-2351f3808f27':
       'f9c9ce07-679d-5d72-ac5f-31720811629a'}"
server:
  description: The server's C(id), C(name), C(status), C(hypervisor_hostname) and C(compute_host).
  returned: always
  type: dict
host:
  description: Name of the root provider (compute node) holding the allocations; null without allocations.
  returned: always
  type: str
allocations:
  description: "The server's allocations: provider UUID to C({resources: {class: amount}})."
  returned: always
  type: dict
groups:
  description: Request group id to C(provider) (UUID) and C(provider_name), by the exact solver.
  returned: always
  type: dict
  sample: {"dde3a281-d069-5cbd-ba7a-2351f3808f27": {"provider": "f9c9ce07-679d-5d72-ac5f-31720811629a",
                                                     "provider_name": "devstack0:Open vSwitch agent:br-test"}}
ports:
  description:
    - Each port of the server - C(id), C(name), C(request_source) (C(neutron) or C(computed)),
      C(resource_request), C(binding_allocation), C(binding_host) and C(notes).
  returned: always
  type: list
  elements: dict
diagnosis:
  description:
    - For a server in ERROR because Nova found no valid host, per request group why (see
      M(minbw.openstack.allocation)); empty otherwise.
  returned: always
  type: list
  elements: dict
notes:
  description: Remarks that are not problems, for example a computed request that differs from Neutron's.
  returned: always
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def info(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.servers import GuaranteeQuery, guarantee

    p = module.params
    return module.result(False, **guarantee(module.cloud(), GuaranteeQuery(p['server'], tuple(p['ports']))).to_dict())


def main():
    MinbwModule(dict(server=dict(type='str', required=True),
                     ports=dict(type='list', elements='str', default=[]))).run(info)


if __name__ == '__main__':
    main()
