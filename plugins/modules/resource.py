#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: resource
short_description: Make sure a named OpenStack resource exists (networks, subnets, flavors, images for demos and tests)
description:
  - A small generic module over openstacksdk's proxies, for the fixtures a bandwidth demo needs, written when
    the collection did not depend on C(openstack.cloud). It adds nothing that C(openstack.cloud.resource) lacks
    (that one also updates an existing resource), so it is deprecated; the collection's playbooks use
    C(openstack.cloud.network), C(subnet), C(compute_flavor) and C(image).
  - The resource is found by O(service), O(type) and C(name) in O(attributes) (C(find_<type>) of the proxy) and
    created with O(attributes) (C(create_<type>)) when missing. An existing resource is not updated; attributes
    that differ from O(attributes) are returned in C(differences).
  - O(state=absent) deletes it.
version_added: 0.1.0
deprecated:
  removed_in: 1.0.0
  why: C(openstack.cloud.resource), in the collection minbw.openstack depends on, does the same and also updates.
  alternative: Use C(openstack.cloud.resource) (or C(openstack.cloud.network), C(subnet), C(compute_flavor), C(image)).
author: minbw developers (@minbw)
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
options:
  service:
    description: The openstacksdk proxy, for example C(network), C(compute) or C(image).
    type: str
    required: true
  type:
    description: The resource type of that proxy, for example C(network), C(subnet), C(flavor) or C(image).
    type: str
    required: true
  attributes:
    description:
      - The resource's attributes with openstacksdk's names (for example C(provider_network_type)); C(name) is required.
      - For an image, C(data) is the image's content and C(wait) waits until it is active.
    type: dict
    required: true
  state:
    description: C(present) or C(absent).
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Seed 003's provider network
  minbw.openstack.resource:
    cloud: mycloud
    service: network
    type: network
    attributes:
      name: net0
      provider_network_type: vlan
      provider_physical_network: physnet0
      provider_segmentation_id: 100
  register: net0

- name: Its subnet
  minbw.openstack.resource:
    cloud: mycloud
    service: network
    type: subnet
    attributes: {name: subnet0, network_id: "{{ net0.resource.id }}", ip_version: 4, cidr: 10.0.4.0/24}
'''

RETURN = r'''
resource:
  description: The resource (C(to_dict(computed=False)) of openstacksdk); null when absent or still to be created in check mode.
  returned: always
  type: dict
differences:
  description: Attributes of an existing resource that differ from O(attributes) (not changed by this module).
  returned: always
  type: dict
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule

# Options of create_<type> that are not attributes of the resource.
CREATE_ONLY = ('data', 'wait', 'timeout', 'filename')


def ensure(module):
    p = module.params
    proxy = getattr(module.conn, p['service'])
    attrs = p['attributes']
    if not attrs.get('name'):
        module.ansible.fail_json(msg='attributes.name is required: resources are found by name')
    found = getattr(proxy, 'find_' + p['type'])(attrs['name'], ignore_missing=True)
    if p['state'] == 'absent':
        if found is not None and not module.check_mode:
            getattr(proxy, 'delete_' + p['type'])(found)
        return module.result(found is not None, resource=None, differences={})
    if found is not None:
        current = found.to_dict(computed=False)
        differences = {k: {'current': current.get(k), 'given': v} for k, v in attrs.items()
                       if k not in CREATE_ONLY and current.get(k) != v}
        return module.result(False, resource=current, differences=differences)
    if module.check_mode:
        return module.result(True, resource=None, differences={})
    created = getattr(proxy, 'create_' + p['type'])(**attrs)
    return module.result(True, resource=created.to_dict(computed=False), differences={})


def main():
    MinbwModule(dict(service=dict(type='str', required=True), type=dict(type='str', required=True),
                     attributes=dict(type='dict', required=True),
                     state=dict(type='str', default='present', choices=['present', 'absent']))).run(ensure)


if __name__ == '__main__':
    main()
