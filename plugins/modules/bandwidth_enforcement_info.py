#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r'''
module: bandwidth_enforcement_info
short_description: Check that a host's data plane enforces the minimum bandwidth Placement reserved
version_added: 0.2.0
author:
  - minbw developers (@minbw)
description:
  - For each minimum rule of the ports bound to O(host) (Neutron's C(binding:host_id)), side by side, what the
    rule of the port's QoS policy (the port's, else its network's) asks, what Placement reserved for the port's
    server on the provider named by the port's C(binding:profile.allocation), what the host's backend programmed
    and a verdict, C(enforced), C(missing), C(wrong rate) (with the factor), C(placement-only) (no backend enforces it
    upstream, with why, such as ingress, a tunnelled network, a minimum packet rate, C(direct-physical)) or
    C(orphan) (programmed for no bound port's rule).
  - The backend is the host's agent in Neutron's agent list, or O(backend) where it has several.
  - Open vSwitch agent, the Queue whose C(external_ids:port) is the port, in the QoS row of each NIC of the port's
    physical bridge, and what the kernel applies (the NIC's HTB class of the queue, C(1:6) for queue 5); orphans are
    Queue rows for no bound port's egress minimum and minimum bandwidth QoS rows on no port (each restart of the
    agent leaves one).
  - ML2/OVN, the C(options:qos_min_rate) of the port's C(Logical_Switch_Port) in the northbound database O(ovn_nb)
    (bit/s; the kbps number, 1,000 times too little, is Neutron < 26.0.0's bug and named so), and whether
    ovn-controller has a NIC to shape it on (an interface of the port's bridge marked
    C(external_ids:ovn-egress-iface=true) in the host's Open vSwitch database), and what the kernel applies (on
    each such NIC the HTB class C(1:(N+1)) of the port's C(qdisc_queue_id) N in the southbound database the host's
    C(external_ids:ovn-remote) names; a class gone is named as ovn-controller's recompute bug of OVN 22.06 to 23.03).
    Orphans are C(qos_min_rate) options of ports bound there with no egress minimum.
  - SR-IOV agent, the C(min_tx_rate) of the VF at the port's C(binding:profile.pci_slot) (whole Mbps, as the agent
    rounds kbps), read through netlink; orphans are VFs with a C(min_tx_rate) no bound port's rule accounts for.
  - Per NIC (the NICs of the OVS agent's physical bridges, the NICs ovn-controller shapes, the SR-IOV agent's PFs),
    its speed, what Placement admits on its provider and the sum of the minimums enforced on it; an inventory above
    the link's speed is an error.
  - Reads only, never writes to OVSDB, netlink, Neutron or Placement. Run it on the host (C(delegate_to) the
    compute), as a user that may read the Open vSwitch database socket and netlink, with the C(dataplane) extra's
    libraries (ovsdbapp, pyroute2) and openstacksdk installed there. The calls are one Neutron agent listing, one
    port listing, one QoS policy and one network listing, one Placement read of the allocations of each provider
    the ports' allocations name and one inventory read per physical bridge or PF, and one read of the host's data
    plane (on ML2/OVN also one read of the northbound rows of the host's ports and, with O(kernel), one of their
    southbound C(Port_Binding) rows). See docs/enforcement.md.
  - "For a fleet, read Neutron and Placement once: O(hosts) (on the controller, C(run_once)) makes those reads for
    all the hosts together (the agent and port listings filter by up to 100 hosts a call) and returns each host's
    as RV(neutron_reads); each host's check then gets its own as O(neutron_reads) and reads only its data plane, with
    no Neutron or Placement call (the role
    R(minbw.openstack.bandwidth_enforcement,ansible_collections.minbw.openstack.bandwidth_enforcement_role) does so)."
requirements:
  - ovsdbapp>=3.0
  - pyroute2>=0.9
options:
  host:
    description:
      - The compute host, as Neutron names it (the ports' C(binding:host_id), its agent's host), whose data plane is
        checked. One of O(host) and O(hosts) is required.
    type: str
  hosts:
    description:
      - Read Neutron and Placement for these hosts (as Neutron names them) at once and return each host's reads as
        RV(neutron_reads), reading no data plane; for the controller, C(run_once). The other options but the
        connection's are ignored.
    type: list
    elements: str
  neutron_reads:
    description:
      - The Neutron and Placement reads of O(host), as O(hosts) returns them (RV(neutron_reads)[host]); the check then
        makes no Neutron or Placement call. Leave out to read them here.
    type: dict
  ovs_db:
    description: The host's Open vSwitch database, an OVSDB remote (C(unix:PATH), C(tcp:HOST:PORT)).
    type: str
    default: unix:/run/openvswitch/db.sock
  netns:
    description: The network namespace (C(ip netns)) of the host's NICs; leave out for the module's own.
    type: str
  kernel:
    description: Read the NICs' tc classes and speed, and on ML2/OVN the ports' southbound C(qdisc_queue_id) (false
      when the module does not run on the host).
    type: bool
    default: true
  backend:
    description:
      - The data plane to check, where the host has several agents the module reads; leave out for the host's one
        (the Open vSwitch agent, the NIC Switch agent or an OVN Controller agent in Neutron's agent list).
    type: str
    choices: [openvswitch, sriov, ovn]
  ovn_nb:
    description:
      - ML2/OVN's northbound database, an OVSDB remote (C(tcp:HOST:6641), C(ssl:HOST:6641), C(unix:PATH)); needed
        on an ML2/OVN host.
    type: str
  ovn_nb_private_key:
    description: For an C(ssl:) O(ovn_nb), the client's private key (with O(ovn_nb_certificate), O(ovn_nb_ca_cert)).
    type: path
  ovn_nb_certificate:
    description: For an C(ssl:) O(ovn_nb), the client's certificate.
    type: path
  ovn_nb_ca_cert:
    description: For an C(ssl:) O(ovn_nb), the CA certificate.
    type: path
extends_documentation_fragment:
  - minbw.openstack.auth
  - ansible.builtin.action_common_attributes
  - minbw.openstack.info_module
'''

EXAMPLES = r'''
- name: Is the guaranteed bandwidth enforced on this compute? (a CI gate)
  minbw.openstack.bandwidth_enforcement_info:
    cloud: mycloud
    host: "{{ inventory_hostname }}"
  register: enforcement
  failed_when: not enforcement.ok

- name: Read Neutron and Placement once for the whole play, on the controller
  minbw.openstack.bandwidth_enforcement_info:
    cloud: mycloud
    hosts: "{{ ansible_play_hosts }}"
  register: fleet_reads
  run_once: true
  delegate_to: localhost

- name: Then each compute reads only its data plane
  minbw.openstack.bandwidth_enforcement_info:
    host: "{{ inventory_hostname }}"
    neutron_reads: "{{ fleet_reads.neutron_reads[inventory_hostname] }}"

- name: The same on an ML2/OVN compute
  minbw.openstack.bandwidth_enforcement_info:
    cloud: mycloud
    host: "{{ inventory_hostname }}"
    ovn_nb: tcp:192.0.2.10:6641
'''

RETURN = r'''
neutron_reads:
  description:
    - With O(hosts), per host its Neutron and Placement reads, C(host), C(agents), C(ports), C(policies),
      C(networks), C(allocations), C(inventories), to give as O(neutron_reads) to that host's check.
  returned: with O(hosts)
  type: dict
ok:
  description: Nothing to act on (no rule missing or at a wrong rate, no orphan, no NIC promised above its link).
  returned: with O(host)
  type: bool
host:
  description: The host checked.
  returned: with O(host)
  type: str
backend:
  description: The data plane checked, C(openvswitch), C(sriov) or C(ovn).
  returned: with O(host)
  type: str
counts:
  description: How many checks of each verdict.
  returned: with O(host)
  type: dict
  sample: {"enforced": 1, "missing": 0, "wrong rate": 0, "placement-only": 1, "orphan": 0}
checks:
  description:
    - One per minimum rule of a bound port (C(kind) C(rule)), then one per orphan (C(kind) C(queue) or C(qos) on the
      Open vSwitch agent, C(lsp) on ML2/OVN, C(vf) on the SR-IOV agent).
    - C(subject) (the port, or the QoS row's uuid), C(server), C(backend), C(verdict), C(why), C(factor) (programmed
      or applied over expected, for a wrong rate), C(rule) (C(type), C(direction), C(value), C(unit), C(expected) in
      C(expected_unit), what upstream programs, C(policy) and C(policy_of), whose policy it is, the port's or its
      network's), C(reserved) (C(provider), C(name), C(class), C(amount),
      C(shared_by) the other ports of the server on that provider; null when Placement holds nothing for it),
      C(programmed) (Open vSwitch agent, per NIC, C(nic), C(qos), C(queue), C(queue_uuid), C(min_rate) in bit/s;
      ML2/OVN, C(lsp), C(qos_min_rate), C(qos_max_rate), C(qos_burst) in bit/s; SR-IOV agent, C(nic) the PF, C(vf),
      C(pci_slot), C(mac), C(min_tx_rate), C(max_tx_rate) in Mbps), C(kernel) (Open vSwitch agent, per NIC, C(nic),
      C(class), C(rate) in bit/s, null when there is no such class) and C(notes).
  returned: with O(host)
  type: list
  elements: dict
nics:
  description:
    - Per NIC, C(nic), C(bridge) (C(physical_network) for a PF), C(speed_kbps), C(provider), C(inventory_kbps) and
      C(ingress_inventory_kbps) (what Placement admits), C(enforced_kbps) and C(errors). On ML2/OVN a bridge
      Placement admits egress bandwidth on with no NIC ovn-controller shapes has a row with C(nic) null and an
      error.
  returned: with O(host)
  type: list
  elements: dict
not_checked:
  description: The bound ports with a minimum rule of a backend this check does not read, one line each.
  returned: with O(host)
  type: list
  elements: str
'''

from ansible_collections.minbw.openstack.plugins.module_utils.base import MinbwModule


def enforcement(module):
    from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.enforcement import (
        EnforcementRequest, read_enforcement_fleet, show_enforcement)

    p = module.params
    if p['hosts'] is not None:
        return module.result(False, **read_enforcement_fleet(module.cloud(), p['hosts']).to_dict())
    result = show_enforcement(module.cloud(), EnforcementRequest(
        p['host'], p['ovs_db'], p['netns'], p['kernel'], p['backend'], p['ovn_nb'], p['ovn_nb_private_key'],
        p['ovn_nb_certificate'], p['ovn_nb_ca_cert'], p['neutron_reads']))
    return module.result(False, **result.to_dict())


def main():
    MinbwModule(dict(host=dict(type='str'), hosts=dict(type='list', elements='str'), neutron_reads=dict(type='dict'),
                     ovs_db=dict(type='str', default='unix:/run/openvswitch/db.sock'),
                     netns=dict(type='str'), kernel=dict(type='bool', default=True),
                     backend=dict(type='str', choices=['openvswitch', 'sriov', 'ovn']), ovn_nb=dict(type='str'),
                     ovn_nb_private_key=dict(type='path', no_log=True), ovn_nb_certificate=dict(type='path'),
                     ovn_nb_ca_cert=dict(type='path')),
                required_together=[['ovn_nb_private_key', 'ovn_nb_certificate', 'ovn_nb_ca_cert']],
                required_one_of=[['host', 'hosts']],
                mutually_exclusive=[['host', 'hosts'], ['hosts', 'neutron_reads']]).run(enforcement)


if __name__ == '__main__':
    main()
