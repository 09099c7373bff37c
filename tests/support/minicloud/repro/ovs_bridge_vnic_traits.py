"""Neutron 29 reports CUSTOM_VNIC_TYPE_DIRECT on an Open vSwitch bridge provider (the openvswitch mechanism driver
lists vnic type direct, for hardware offload): Placement may then put a direct port's bandwidth on the bridge, and
Neutron's binding, restricted to openvswitch by that allocation, fails (ovs_direct_port_binding_failed.txt: the
log lines of the run that met it, seven boots side by side on the three-host mini-cloud, an SR-IOV port of 1000
kbps). Run against a running mini-cloud (cloud.sh up): python tests/support/minicloud/repro/ovs_bridge_vnic_traits.py
"""
import openstack, warnings
warnings.filterwarnings("ignore")
c = openstack.connect(cloud="minicloud")
for name in ("devstack0:Open vSwitch agent:br-test", "devstack0:NIC Switch agent:devstack0-ens1"):
    [rp] = list(c.placement.resource_providers(name=name))
    r = c.placement.get(f"/resource_providers/{rp.id}/traits", microversion="1.6").json()
    print(name, sorted(t for t in r["traits"] if "VNIC" in t or "PHYSNET" in t))
