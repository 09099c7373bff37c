#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_providers_info
short_description: Show Placement's resource providers with traits, inventories and usages
version_added: 0.1.0
author:
  - minbw developers (@minbw)
description:
  - Lists every resource provider, or the tree of one compute node, with its parent, traits,
    inventories and usages; the data behind C(minbw provider list).
  - Read-only.
options:
  hypervisor:
    description:
      - Only the provider tree whose root provider has this name (the compute node's hypervisor name).
      - Fails when no provider has that name.
    type: str
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: The bandwidth providers of one compute node
  minbw.openstack.bandwidth_providers_info:
    cloud: mycloud
    hypervisor: devstack0
  register: tree

- name: Free egress bandwidth of each device provider
  ansible.builtin.debug:
    msg: >-
      {{ item.name }}: {{ item.inventories.NET_BW_EGR_KILOBIT_PER_SEC.total
      - item.usages.NET_BW_EGR_KILOBIT_PER_SEC | default(0) }} kbps
  loop: "{{ tree.providers | selectattr('inventories.NET_BW_EGR_KILOBIT_PER_SEC', 'defined') }}"
  loop_control:
    label: "{{ item.name }}"
'''

RETURN = r'''
providers:
  description: The providers in tree order (each root, then its children by name, depth first).
  returned: always
  type: list
  elements: dict
  contains:
    uuid:
      description: The provider's UUID.
      type: str
      sample: f9c9ce07-679d-5d72-ac5f-31720811629a
    name:
      description: The provider's name.
      type: str
      sample: "devstack0:Open vSwitch agent:br-test"
    generation:
      description: The provider's generation.
      type: int
      sample: 2
    root_provider_uuid:
      description: The root of its tree.
      type: str
      sample: 3b36d91e-bf60-460f-b1f8-3322dee5cdfd
    parent_provider_uuid:
      description: Its parent; null for a root.
      type: str
      sample: 89ca1421-5117-5348-acab-6d0e2054239c
    traits:
      description: Its traits, sorted.
      type: list
      elements: str
      sample: [CUSTOM_PHYSNET_PHYSNET0, CUSTOM_VNIC_TYPE_DIRECT, CUSTOM_VNIC_TYPE_NORMAL]
    inventories:
      description: Its inventories by resource class, as Placement returns them.
      type: dict
      sample: {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 1500, "reserved": 0, "min_unit": 1, "max_unit": 2147483647,
                                             "step_size": 1, "allocation_ratio": 1.0}}
    usages:
      description: Its usage by resource class; empty for a provider without inventories.
      type: dict
      sample: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def report(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.providers import ShowRequest, show

    return module.result(False, providers=show(module.cloud(), ShowRequest(module.params['hypervisor'])).to_dict())


def main():
    MinbwModule(dict(hypervisor=dict(type='str'))).run(report)


if __name__ == '__main__':
    main()
