# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Filters: Neutron bandwidth options as validated overrides for kolla-ansible and openstack-ansible."""

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


class FilterModule:
    def filters(self):
        return {'neutron_overrides': neutron_overrides, 'neutron_ini': neutron_ini, 'ovn_cms_options': ovn_cms_options}
