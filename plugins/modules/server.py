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
    M(minbw.openstack.bandwidth_server) role does.
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


def view(server):
    return dict(id=server.id, name=server.name, status=server.status, hypervisor_hostname=server.hypervisor_hostname,
                compute_host=server.compute_host, fault=server.fault)


def ensure(module):
    from minbw.ops import servers

    p, compute = module.params, module.conn.compute
    found = compute.find_server(p['name'], ignore_missing=True)
    existing = compute.get_server(found.id) if found is not None else None
    before = view(existing) if existing is not None else {}
    if p['state'] == 'absent':
        diff = dict(before=before, after={})
        if found is None or module.check_mode:
            return module.result(found is not None, diff=diff)
        if not p['wait']:
            module.conn.compute.delete_server(found)
            return module.result(True, diff=diff)
        return module.result(True, diff=diff, release=servers.delete(module.conn, found.id, timeout=p['timeout']))
    if found is not None:
        server, changed = existing, False
    elif module.check_mode:
        return module.result(True, diff=dict(before={}, after=dict(name=p['name'], status='ACTIVE')), server=None)
    else:
        missing = [o for o in ('flavor', 'image', 'ports') if not p[o]]
        if missing:
            module.ansible.fail_json(msg='booting %s needs %s' % (p['name'], ', '.join(missing)))
        server = servers.boot(module.conn, p['name'], p['flavor'], p['image'], p['ports'],
                              wait=p['wait'], timeout=p['timeout'])
        changed = True
    if server.status == 'ERROR':
        raise servers.explain_failure(module.conn, server, p['ports'])
    return module.result(changed, diff=dict(before=before, after=view(server)), server=view(server))


def main():
    MinbwModule(dict(name=dict(type='str', required=True), flavor=dict(type='str'), image=dict(type='str'),
                     ports=dict(type='list', elements='str', default=[]),
                     state=dict(type='str', default='present', choices=['present', 'absent']),
                     timeout=dict(type='int', default=300))).run(ensure)


if __name__ == '__main__':
    main()
