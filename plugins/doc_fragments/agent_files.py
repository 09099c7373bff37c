# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:

    # The agents' files beside O(agent_configs): read as the agents read them (minbw.neutron.agentconf.agents_of).
    DOCUMENTATION = r'''
options:
  config_dirs:
    description:
      - Directories of the agents' configuration, each as an agent's C(--config-dir) - its C(*.conf) files, sorted
        by name, are read by every agent after O(agent_configs), a later file's option winning over an earlier
        one's (oslo.config's order and rules; section names in any case).
      - Each file of O(agent_configs) that sets C([ovs] bridge_mappings) or C([sriov_nic] physical_device_mappings)
        is one agent, which reads the files of O(agent_configs) that set neither (C(neutron.conf), overrides) in
        the order given, its own among them, then these directories. When no file of O(agent_configs) is an
        agent's own, the whole set is one agent's - edpm-ansible writes all of an agent's files in its config dir,
        C(/var/lib/openstack/neutron-sriov-agent) on the node.
    type: list
    elements: path
'''
