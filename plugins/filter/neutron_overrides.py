# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Filters: Neutron bandwidth options as validated overrides for kolla-ansible, openstack-ansible and edpm-ansible."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
# The core's own code, shipped with the collection: the same parsers and checks as agent_config.
from ansible_collections.minbw.openstack.plugins.module_utils.core.errors import MinbwError
from ansible_collections.minbw.openstack.plugins.module_utils.core.neutron import overrides, ovn


def neutron_overrides(values, agent_type, host=''):
    """Agent option values (a dict) for V(openvswitch) / V(sriov), or the current list value (a string or
    list) for V(neutron_server) / V(ml2) → {section: {option: raw value}}."""
    try:
        if agent_type in ('neutron_server', 'ml2'):
            current = ','.join(values) if isinstance(values, (list, tuple)) else (values or '')
            return overrides.server_sections(agent_type, current)
        if not isinstance(values, dict):
            raise AnsibleFilterError('neutron_overrides: expected a dict of agent options for agent_type %s, got %r'
                                     % (agent_type, values))
        return overrides.agent_sections(agent_type, values, host)
    except MinbwError as e:
        raise AnsibleFilterError('neutron_overrides: %s' % e)


def neutron_ini(sections):
    """{section: {option: raw value}} → ini text (for /etc/kolla/config/neutron/*.ini)."""
    try:
        return overrides.render_ini(sections)
    except MinbwError as e:
        raise AnsibleFilterError('neutron_ini: %s' % e)


def ovn_cms_options(current, values, hostname=''):
    """The ovn-cms-options a deployment sets (a string or list) with the bandwidth options merged in."""
    try:
        return ovn.cms_options_override(current, values, hostname)
    except MinbwError as e:
        raise AnsibleFilterError('ovn_cms_options: %s' % e)


# edpm-ansible's role edpm_ovn (roles/edpm_ovn/tasks/configure.yml) renders these into ovn-cms-options itself
EDPM_BANDWIDTHS = 'edpm_ovn_resource_provider_bandwidths'
EDPM_INVENTORY = 'edpm_ovn_resource_provider_inventory_defaults'
EDPM_HYPERVISORS = 'edpm_ovn_resource_provider_hypervisors'
EDPM_BRIDGE_MAPPINGS = 'edpm_ovn_bridge_mappings'


def edpm_ovn_vars(values, hostname=''):
    """edpm-ansible's edpm_ovn variables for one compute, from the values ovn_cms_options takes: validated
    the same way, then read back with Neutron's parsing rules from the validated ovn-cms-options, so that what
    edpm renders from them is what was validated."""
    try:
        options = ovn.cms_options(ovn.cms_options_override('', values, hostname))
        bandwidths = ovn.parse_bandwidths(options)
        return {
            # a direction left out, not None: edpm renders a missing key as '' and None as 'None'
            EDPM_BANDWIDTHS: {bridge: {d: v for d, v in bw.items() if v is not None}
                              for bridge, bw in bandwidths.items()},
            EDPM_INVENTORY: ovn.parse_inventory_defaults(options),
            # every bridge spelled out: edpm's own default is the host's FQDN (ansible_facts.fqdn), which need
            # not be the compute node's name in Placement
            EDPM_HYPERVISORS: ovn.parse_hypervisors(options),
            EDPM_BRIDGE_MAPPINGS: ['%s:%s' % (physnet, bridge)
                                   for physnet, bridge in (values.get('bridge_mappings') or {}).items()],
        }
    except (MinbwError, ValueError) as e:
        raise AnsibleFilterError('edpm_ovn_vars: %s' % e)


class FilterModule:
    def filters(self):
        return {'neutron_overrides': neutron_overrides, 'neutron_ini': neutron_ini, 'ovn_cms_options': ovn_cms_options,
                'edpm_ovn_vars': edpm_ovn_vars}
