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
    unless O(create_root=true) (clouds without Nova, demos).
  - Each agent configuration and chassis is checked, planned and written on its own. One that cannot be
    (options that do not parse, an inventory Placement would refuse, two of them describing the same provider)
    gets no writes and is named in RV(skipped) with its fix; every other one is synced, and the task succeeds
    unless O(fail_on_skipped=true). When none can be synced the task fails.
options:
  agent_configs:
    description:
      - Agent ini files on the target, for example C(/etc/neutron/plugins/ml2/openvswitch_agent.ini)
        (section C([ovs])) and C(/etc/neutron/plugins/ml2/sriov_agent.ini) (section C([sriov_nic])), and the files
        their agents read beside them (C(/etc/neutron/neutron.conf)), in the order of the agents' C(--config-file)
        options (how they are layered - O(config_dirs)).
      - The agent type of each file is told by its C(bridge_mappings) or C(physical_device_mappings).
    type: list
    elements: path
  agents:
    description:
      - The same values as options instead of files, one dict per agent, with C(agent_type)
        (C(openvswitch) or C(sriov)), an optional C(host), and the option names of
        M(minbw.openstack.agent_config) (C(bridge_mappings), C(physical_device_mappings),
        C(resource_provider_bandwidths), ...) with the same value shapes.
      - At least one of O(agent_configs), O(config_dirs), O(agents), O(ovn_chassis) and O(ovn_sb_db) is required;
        several may be given.
    type: list
    elements: dict
  ovn_chassis:
    description:
      - ML2/OVN chassis, one dict each, with C(name), C(hostname), C(ovn-bridge-mappings) and
        C(ovn-cms-options) as the chassis holds them (RV(minbw.openstack.ovn_chassis_config#module:chassis)).
      - The providers are those Neutron's OVN placement extension builds (C(HOST:OVN Controller agent:BRIDGE));
        what Neutron would silently skip (a bridge without a C(resource_provider_hypervisors) entry or not
        in the bridge mappings, a hypervisor that is no provider) is skipped too and named in the warnings.
      - Device providers of bridges that left a chassis's options are deleted (where nothing is allocated).
    type: list
    elements: dict
  ovn_sb_db:
    description:
      - Read every chassis from the OVN southbound database with C(ovn-sbctl) on the host that runs the module
        (its C(--db), e.g. C(tcp:192.0.2.10:6642); an empty string for ovn-sbctl's default).
      - Every chassis of the cloud is then known, so an OVN device provider that no chassis describes is stale
        and deleted (where nothing is allocated).
    type: str
  ovn_sbctl:
    description:
      - How to run ovn-sbctl, as a list of words (for example with C(-p), C(-c), C(-C) for TLS, or
        C([docker, exec, ovn_sb_db, ovn-sbctl])).
    type: list
    elements: str
    default: [ovn-sbctl]
  fail_on_skipped:
    description:
      - Fail the task when some agent configuration or chassis was skipped (RV(skipped)), after the others were
        synced; by default such a partial run succeeds with warnings.
    type: bool
    default: false
  cache:
    description:
      - Remember what the sync read and wrote in O(cache_file), so that the next sync re-reads only
        the providers whose generation moved since (or that the safety check doubts). A sync that finds
        nothing changed is then one listing of the providers instead of two reads per provider, plus, for
        the providers confirmed longer than O(cache_check_interval) ago, the safety check (a few filtered
        listings whose number does not grow with the number of providers).
      - "The safety check catches a provider deleted and re-created (same UUID) at the same generation
        with other traits, other resource classes or a larger capacity: one
        C(GET /resource_providers?required=TRAIT) per trait and C(?resources=CLASS:AMOUNT) per class and
        capacity, compared with what the cache expects; only providers that disagree are read again.
        A lower total of the same class at the same generation, or an extra trait that none of these
        providers is meant to have, is caught by the periodic full check (O(cache_max_age))."
      - C(false) reads every provider's traits and inventories and neither uses nor writes the file.
    type: bool
    default: true
  cache_file:
    description:
      - The cache file on the host that runs the sync.
      - Defaults to one file per Placement endpoint under C($XDG_CACHE_HOME/minbw) (C(~/.cache/minbw)
        without it). Syncs of several hosts may share it (it is merged under a lock on save).
    type: path
  cache_max_age:
    description:
      - Seconds after which a cached provider is read again whatever its generation (the periodic
        full check). C(0) reads every provider, as O(cache=false), and refreshes the file.
    type: int
    default: 86400
  cache_check_interval:
    description:
      - Seconds during which a cached provider that was read, written or confirmed by the safety check is
        trusted by its generation, name and parent alone; older ones pass the safety check first (and are
        confirmed again). So a sync that runs within this time of the last one is one listing of the providers.
      - A provider deleted and re-created by someone else (same UUID) at the same generation with other
        content is seen within this time. C(0) runs the safety check at every sync.
    type: int
    default: 3600
    version_added: 0.3.0
  workers:
    description:
      - How many host trees are written in parallel (parents before children inside each tree) and how
        many providers are read at once. From 1 to 32.
    type: int
    default: 4
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
      - Defaults to C([DEFAULT] host) as each agent reads it (from the last of its files that sets it); needed
        only when no file of an agent sets it.
    type: str
  create_root:
    description:
      - Create a missing compute node root provider named after the hypervisor, with the traits nova-compute gives
        it. It is for clouds without Nova (a standalone Placement) and demos; where nova-compute runs, it creates
        the root itself.
      - Without Nova (no compute service in the catalog) the root's UUID is derived from the name.
      - Where the cloud has Nova, the root gets the UUID of the compute node Nova knows by the hypervisor's name
        (the hypervisor's id in C(openstack hypervisor list)), and nova-compute adopts it. Where Nova has no such
        node (a nova-compute service on the host that has not reported yet, Nova not readable with these
        credentials, or a host Nova does not know) the task fails and writes nothing, unless
        O(ignore_nova_compute=true) - a root of another UUID would take the name nova-compute's provider needs,
        and Placement would refuse nova-compute's (409 Conflicting resource provider name).
      - Without it a missing root fails the task, naming the hypervisor looked up.
    type: bool
    default: false
  root_inventories:
    description:
      - "Inventories of the root provider, by resource class, for example C({VCPU: 8, MEMORY_MB: 16384}): set on a
        root created by O(create_root), and corrected on an existing one. Each value is a total or a dict of
        inventory fields (C(total), C(reserved), C(min_unit), C(max_unit), C(step_size), C(allocation_ratio))."
      - Refused (the task fails, nothing written) on a root that is a compute node Nova knows, unless
        O(ignore_nova_compute=true) - nova-compute replaces that root's inventory with its driver's at its start and
        at each refresh of its view of Placement.
    type: dict
  ignore_nova_compute:
    description:
      - With O(create_root), create the root where Nova has no compute node for the hypervisor (the UUID then is
        derived from the name), and let O(root_inventories) set a compute node's root. Only for hosts nova-compute
        never reports, and demos.
    type: bool
    default: false
extends_documentation_fragment:
  - minbw.openstack.auth
  - minbw.openstack.agent_files
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

- name: A kolla-ansible compute - neutron.conf under the agent's own file, as the agent reads them
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    agent_configs:
      - /etc/kolla/neutron-openvswitch-agent/neutron.conf
      - /etc/kolla/neutron-openvswitch-agent/openvswitch_agent.ini

- name: An edpm-ansible node's SR-IOV agent - all its files in its config dir ([SRIOV_NIC] is [sriov_nic])
  minbw.openstack.bandwidth_providers:
    cloud: mycloud
    config_dirs: [/var/lib/openstack/neutron-sriov-agent]

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
      description: C(openvswitch), C(sriov) or C(ovn).
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
summary:
  description: One line on the sync, its calls and the cache.
  returned: always
  type: str
  sample: "1000 hosts, 6000 providers: 0 created, 0 updated, 0 deleted (0 writes) in 2.1 s, 20 calls (0.02/host);
    cache: 6000 of 6000 cached providers trusted after 17 checks, 0 re-read"
unchanged:
  description:
    - The warm sync as the listing - when the listing showed every provider at the generation the last complete
      sync left (names and parents as desired, no other provider under their agents), the desired state equal to
      that sync's (C(fingerprint)) and no safety check due, nothing was read or planned beyond that listing and
      this says so and why (C(why)); null when the state was observed and planned (the first sync, a change, a
      check due, O(state=absent), O(create_root), O(root_inventories), O(cache=false)).
  returned: always
  type: dict
  sample: {"providers": 6000, "fingerprint": "files:3f2a...", "synced_at": 1764990000.0, "check_interval": 3600,
    "why": "unchanged: 6000 providers at the generations of the last sync (2026-12-06T04:00:00Z), ..."}
quirks:
  description:
    - What Neutron would silently skip in the ML2/OVN chassis options, one sentence each (also shown as
      warnings); empty without O(ovn_chassis) / O(ovn_sb_db).
  returned: always
  type: list
  elements: str
  sample: ["chassis c1 (compute1): Neutron silently reports no bandwidth for bridge br-x of
    resource_provider_bandwidths: no entry in ovn-cms-options resource_provider_hypervisors (add br-x:HYPERVISOR)"]
skipped:
  description:
    - >-
      The agent configurations and chassis that got no writes, one line each in one format - the unit's kind
      and name, its host in parentheses, what is wrong, then C(Fix:) and the fix, as in the sample - sorted by
      kind and name (also shown as warnings); every other one was synced. The kinds - C(ini file), C(agent) (an
      entry of O(agents)), C(chassis), C(hypervisor) (a compute node without its root provider) and C(host tree)
      (a tree whose writes Placement refused). See O(fail_on_skipped).
  returned: always
  type: list
  elements: str
  sample: ["chassis c1 (host compute1): it and chassis c0 (host compute0) describe the same device provider
    compute0:OVN Controller agent:br-ex (...), so which one Placement would get depends on which reports last.
    Fix: give each bridge of hypervisor compute0 in one chassis only (...)"]
units:
  description: Each agent configuration and chassis - its C(unit), C(kind), C(host), C(hypervisors), whether a
    write touched its hypervisors (C(changed)) and why it was skipped (C(skipped), null when synced).
  returned: always
  type: list
  elements: dict
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


def ensure(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.cloud import NO_CACHE, Cache
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.providers import OvnSources, ProvidersRequest, sync

    p = module.params
    ovn = OvnSources(values=tuple(p['ovn_chassis'] or ()), southbound=p['ovn_sb_db'] is not None,
                     sb_db=p['ovn_sb_db'] or None, sbctl=tuple(p['ovn_sbctl']))
    result = sync(module.cloud(), ProvidersRequest(
        agent_configs=tuple(p['agent_configs'] or ()), config_dirs=tuple(p['config_dirs'] or ()),
        agents=tuple(p['agents'] or ()), ovn=ovn, host=p['host'],
        check=module.check_mode, absent=p['state'] == 'absent', create_root=p['create_root'],
        root_inventories=p['root_inventories'], ignore_nova_compute=p['ignore_nova_compute'],
        cache=Cache.at(p['cache_file']) if p['cache'] else NO_CACHE,
        cache_max_age=p['cache_max_age'], cache_check_interval=p['cache_check_interval'], workers=p['workers']))
    planned, applied = result.plan.to_dict(), result.applied
    for warning in result.warnings + ['skipped: %s' % line for line in result.skipped]:
        module.ansible.warn(warning)
    values = module.result(result.changed, diff=result.diffs(), writes=result.plan.writes(), summary=result.summary,
                           retries=applied.retries if applied else 0,
                           found_applied=applied.found_applied if applied else 0,
                           ops=planned['ops'], providers=planned['providers'], kept=planned['kept'],
                           quirks=result.warnings, skipped=result.skipped, units=result.units(),
                           unchanged=result.unchanged.to_dict() if result.unchanged is not None else None)
    if result.skipped and p['fail_on_skipped']:
        module.ansible.fail_json(msg='%d of %d configurations skipped (the others synced): %s' % (
            len(result.skipped), len(values['units']), ' | '.join(result.skipped)), **values)
    return values


def main():
    MinbwModule(dict(
        agent_configs=dict(type='list', elements='path'),
        config_dirs=dict(type='list', elements='path'),
        agents=dict(type='list', elements='dict'),
        ovn_chassis=dict(type='list', elements='dict'),
        ovn_sb_db=dict(type='str'),
        ovn_sbctl=dict(type='list', elements='str', default=['ovn-sbctl']),
        fail_on_skipped=dict(type='bool', default=False),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        cache=dict(type='bool', default=True),
        cache_file=dict(type='path'),
        cache_max_age=dict(type='int', default=86400),
        cache_check_interval=dict(type='int', default=3600),
        workers=dict(type='int', default=4),
        host=dict(type='str'),
        create_root=dict(type='bool', default=False),
        root_inventories=dict(type='dict'),
        ignore_nova_compute=dict(type='bool', default=False),
    ), required_one_of=[('agent_configs', 'config_dirs', 'agents', 'ovn_chassis', 'ovn_sb_db')]).run(ensure)


if __name__ == '__main__':
    main()
