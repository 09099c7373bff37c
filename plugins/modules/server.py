#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: server
short_description: Boot a server on QoS ports, explain "no valid host", delete it and check what it released
description:
  - C(state=present) boots a server on existing ports and waits until it is ACTIVE. An existing server of that
    name is left as it is.
  - When the server ends in ERROR because Nova found no valid host, the task fails with minbw's per-group
    diagnosis of the same request (the server's flavor and every port's request groups) in C(diagnosis) -
    which group no provider could serve, the trait nobody has, or the largest free capacity left.
  - C(state=absent) deletes the server, waits until it is gone, then until Placement holds no allocations for
    it and its ports' C(binding:profile.allocation) is cleared; what is left, if anything, is in
    C(release.problems).
  - Verify a running server's guarantee with M(minbw.openstack.server_bandwidth_info).
  - C(openstack.cloud.server) boots and deletes servers too (with many more boot options); this module adds
    what it lacks - the diagnosis of "No valid host" in the same task, and after a deletion the check that
    Placement and Neutron released the server's bandwidth (which needs the server's ports, read before it is
    deleted). To boot with C(openstack.cloud.server) and still get the diagnosis, run
    M(minbw.openstack.server_bandwidth_info) with the server's O(ports) after it, as the
    role R(minbw.openstack.bandwidth_server,ansible_collections.minbw.openstack.bandwidth_server_role) does.
version_added: 0.1.0
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  name:
    description: Name (or, to delete, id) of the server.
    type: str
    required: true
  flavor:
    description: Name or id of the flavor; required to boot.
    type: str
  image:
    description: Name or id of the image; required to boot.
    type: str
  ports:
    description: Names or ids of existing ports, in the order of the server's NICs; required to boot.
    type: list
    elements: str
    default: []
  state:
    description: C(present) or C(absent).
    type: str
    choices: [present, absent]
    default: present
  wait:
    description:
      - With C(false), the module returns as soon as Nova accepted the boot (the server is then usually
        C(BUILD); a later failure to find a host is not reported) or the deletion (no C(release) then).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the server to become ACTIVE (or ERROR), or to be gone.
    type: int
    default: 300
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Boot vm0 on the QoS port
  minbw.openstack.server:
    cloud: mycloud
    name: vm0
    flavor: cirros256
    image: cirros
    ports: [port-normal-qos]

- name: Delete it and check that its bandwidth was released
  minbw.openstack.server:
    cloud: mycloud
    name: vm0
    state: absent
  register: gone
  failed_when: gone.release.problems | length > 0
'''

RETURN = r'''
server:
  description: The server's C(id), C(name), C(status), C(hypervisor_hostname), C(compute_host) and C(fault).
  returned: state=present
  type: dict
release:
  description:
    - After a deletion, what Placement and Neutron still hold for it - C(allocations) (empty once released),
      C(binding_profiles) of its former ports, and C(problems) (empty once everything is released).
  returned: state=absent, the server existed and O(wait=true)
  type: dict
diagnosis:
  description: When Nova found no valid host, per request group why (see M(minbw.openstack.allocation)).
  returned: failure
  type: list
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.servers import DesiredServer, server

    p = module.params
    result = server(module.cloud(), DesiredServer(p['name'], flavor=p['flavor'], image=p['image'],
                                                  ports=tuple(p['ports']), present=p['state'] == 'present',
                                                  wait=p['wait'], timeout=p['timeout'], check=module.check_mode))
    return module.result(result.changed, diff=result.diff(), **result.to_dict())


def main():
    MinbwModule(dict(name=dict(type='str', required=True), flavor=dict(type='str'), image=dict(type='str'),
                     ports=dict(type='list', elements='str', default=[]),
                     state=dict(type='str', default='present', choices=['present', 'absent']),
                     timeout=dict(type='int', default=300))).run(ensure)


if __name__ == '__main__':
    main()
