#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_providers
short_description: Make Placement's bandwidth resource providers match Neutron agents' configuration
version_added: 0.1.0
author:
  - minbw developers (@minbw)
description:
  - Reads the Open vSwitch and SR-IOV agent ini files on the target and builds the resource provider
    tree Neutron builds for them, with the same UUIDs, names, parents, traits and inventories
    (an agent provider under the hypervisor's root provider, a provider per device under it).
  - Compares it with what Placement holds and makes only the writes that differ; none when Placement
    already matches. Device providers the configuration no longer has are deleted when nothing is
    allocated on them, and kept and reported with their consumers when something is.
  - Check mode returns the plan (RV(ops)) without writing; diff mode shows each provider that changes
    before and after (name, parent, traits, inventories; generations left out), one diff per provider.
  - The root provider of each hypervisor (the compute node, created by nova-compute) must exist,
    unless O(create_root=true).
options:
  agent_configs:
    description:
      - Agent ini files on the target, for example C(/etc/neutron/plugins/ml2/openvswitch_agent.ini)
        (section C([ovs])) and C(/etc/neutron/plugins/ml2/sriov_agent.ini) (section C([sriov_nic])).
      - The agent type of each file is told by its C(bridge_mappings) or C(physical_device_mappings).
    type: list
    elements: path
  agents:
    description:
      - The same values as options instead of files, one dict per agent, with C(agent_type)
        (C(openvswitch) or C(sriov)), an optional C(host), and the option names of
        M(minbw.openstack.agent_config) (C(bridge_mappings), C(physical_device_mappings),
        C(resource_provider_bandwidths), ...) with the same value shapes.
      - At least one of O(agent_configs) and O(agents) is required; both may be given.
    type: list
    elements: dict
  cache_file:
    description:
      - A file (on the target) where the sync remembers what it read and wrote. The next sync re-reads
        only the providers whose generation moved since, so a sync that finds nothing changed is one
        listing instead of two reads per provider.
      - Placement bumps a provider's generation on every trait, inventory or allocation change; a
        provider deleted and re-created by someone else at the very same generation with other content
        would go unnoticed until the file is removed.
    type: path
  state:
    description:
      - C(present) makes Placement match the configuration.
      - C(absent) removes these agents' providers (devices, then the agent provider); a provider with
        allocations is kept (and so is its agent provider) and reported in RV(kept) with its consumers.
    type: str
    choices: [present, absent]
    default: present
  host:
    description:
      - The agents' host, which is also the default hypervisor name (the name of the root provider).
      - Defaults to C([DEFAULT] host) of each file.
    type: str
  create_root:
    description:
      - Create a missing root provider named after the hypervisor, as nova-compute would, for
        standalone use and demos. Its UUID is derived from the name.
      - Without it a missing root fails the task, naming the hypervisor looked up.
    type: bool
    default: false
  root_inventories:
    description:
      - "Inventories of a root provider created by O(create_root), by resource class, for example
        C({VCPU: 8, MEMORY_MB: 16384}). Each value is a total or a dict of inventory fields
        (C(total), C(reserved), C(min_unit), C(max_unit), C(step_size), C(allocation_ratio))."
      - Not used for a root that exists.
    type: dict
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Report the bandwidth of this host's agents to Placement
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    agent_configs:
      - /etc/neutron/plugins/ml2/openvswitch_agent.ini
      - /etc/neutron/plugins/ml2/sriov_agent.ini
  register: sync

- name: Show what changed
  ansible.builtin.debug:
    msg: "{{ sync.writes }} writes; kept: {{ sync.kept | map(attribute='name') | list }}"

- name: Standalone demo against the embedded Placement, creating the compute node root
  minbw.openstack.bandwidth_providers:
    cloud: minbw-local
    agent_configs: [/tmp/ml2_conf.ini]
    host: devstack0
    create_root: true
    root_inventories:
      VCPU: 8
      MEMORY_MB: {total: 16384, reserved: 512}

- name: The same values as options, without ini files
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    host: compute-1
    agents:
      - agent_type: openvswitch
        bridge_mappings: {physnet0: br-test, public: br-ex}
        resource_provider_bandwidths: {br-test: {egress: 1500, ingress: 1500}, br-ex: {ingress: 1}}

- name: Decommission this host's OVS agent providers (kept where something is still allocated)
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    agent_configs: [/etc/neutron/plugins/ml2/openvswitch_agent.ini]
    state: absent
'''

RETURN = r'''
writes:
  description: The number of writes (made, or planned in check mode). 0 when Placement already matched.
  returned: always
  type: int
  sample: 14
retries:
  description: Writes retried after a C(placement.concurrent_update) conflict.
  returned: always
  type: int
  sample: 0
found_applied:
  description:
    - Of RV(writes), those found already made when re-read after their answer was lost (a connection reset or
      timeout after Placement applied them) or made by a concurrent sync (docs/reliability.md).
  returned: always
  type: int
  sample: 0
ops:
  description: The writes in the order they run (made, or planned in check mode).
  returned: always
  type: list
  elements: dict
  sample:
    - {"action": "create_provider", "name": "devstack0:Open vSwitch agent", "uuid": "89ca1421-5117-5348-acab-6d0e2054239c",
       "parent_provider_uuid": "3b36d91e-bf60-460f-b1f8-3322dee5cdfd"}
    - {"action": "set_inventories", "name": "devstack0:Open vSwitch agent:br-ex", "uuid": "193134fd-464c-5545-9d20-df7d58c0166f",
       "inventories": {"NET_BW_IGR_KILOBIT_PER_SEC": {"total": 1, "reserved": 0, "min_unit": 1, "max_unit": 2147483647,
                                                      "step_size": 1, "allocation_ratio": 1.0}}}
providers:
  description: The providers the configuration describes, as they are (or, in check mode, will be) in Placement.
  returned: always
  type: list
  elements: dict
  contains:
    uuid:
      description: Neutron's uuid5 UUID of the provider.
      type: str
    name:
      description: C(HYPERVISOR:AGENT TYPE) or C(HYPERVISOR:AGENT TYPE:DEVICE).
      type: str
    hypervisor:
      description: The hypervisor (root provider name) it hangs under.
      type: str
    kind:
      description: C(openvswitch) or C(sriov).
      type: str
    role:
      description: C(agent) or C(device).
      type: str
    device:
      description: The bridge or PF of a device provider; null for an agent provider.
      type: str
    parent_provider_uuid:
      description: The parent provider.
      type: str
    traits:
      description: The provider's traits.
      type: list
      elements: str
    inventories:
      description: Inventories by resource class.
      type: dict
kept:
  description: Providers no longer configured but kept, because something is allocated on them.
  returned: always
  type: list
  elements: dict
  sample:
    - {"uuid": "193134fd-464c-5545-9d20-df7d58c0166f", "name": "devstack0:Open vSwitch agent:br-ex",
       "consumers": {"4b1c6c2a-0f3e-4a55-8f0b-8f2d1c0e5a11": {"NET_BW_IGR_KILOBIT_PER_SEC": 1}}}
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule

try:
    from minbw.model.providers import root_inventories
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops.agent_files import read_agent_configs
    from minbw.ops.sync import ProviderCache, sync
    from minbw.placement.client import Placement
except ImportError:
    pass  # MinbwModule reports the missing library


def provider_diffs(plan):
    """One diff per changing provider, headed by its name and UUID (Ansible shows a list of diffs one by one)."""
    whole = plan.diff()
    diffs = []
    for uuid in set(whole['before']) | set(whole['after']):
        before, after = whole['before'].get(uuid), whole['after'].get(uuid)
        header = '%s (%s)' % ((after or before)['name'], uuid)
        diffs.append(dict(before=before, after=after, before_header=header, after_header=header))
    return sorted(diffs, key=lambda d: d['before_header'])


def ensure(module):
    params = module.params
    desired = desired_state(read_agent_configs(params['agent_configs'], params['agents'], params['host']))
    api = Placement(module.conn)
    cache = ProviderCache(params['cache_file'], api.endpoint()) if params['cache_file'] else None
    plan, applied = sync(api, desired, check=module.check_mode, absent=params['state'] == 'absent', cache=cache,
                         create_root=params['create_root'], root_inventories=root_inventories(params['root_inventories']))
    planned = plan.to_dict()
    return module.result(plan.changed, diff=provider_diffs(plan), writes=plan.writes(),
                         retries=applied.retries if applied else 0, found_applied=applied.found_applied if applied else 0,
                         ops=planned['ops'], providers=planned['providers'], kept=planned['kept'])


def main():
    MinbwModule(dict(
        agent_configs=dict(type='list', elements='path'),
        agents=dict(type='list', elements='dict'),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        cache_file=dict(type='path'),
        host=dict(type='str'),
        create_root=dict(type='bool', default=False),
        root_inventories=dict(type='dict'),
    ), required_one_of=[('agent_configs', 'agents')]).run(ensure)


if __name__ == '__main__':
    main()
