"""The mini-cloud's fake hypervisor plugging its VIFs as nova-compute does, on the computes that run the real
neutron-openvswitch-agent (MINICLOUD_REAL_OVS_AGENT, tests/support/minicloud/ovs_agent.sh). Imported by
nova-compute's start wrapper in cloud.sh (it runs in .venv-cloud: nova 34.0.0, os-vif 5.3.0).

nova's FakeDriver plugs nothing, so no L2 agent would ever see a port. ``with_os_vif(base, netns)`` is a subclass of
the fake driver ``base`` whose spawn and destroy plug and unplug each VIF as nova's libvirt driver does
(``LibvirtGenericVIFDriver.plug`` / ``unplug``): nova's own ``nova.network.os_vif_util`` turns the VIF of the
network info into an os-vif object (VIF types without an os-vif plugin, such as an SR-IOV port's ``hw_veb``, are
left alone, as libvirt's driver leaves them to its legacy path), and ``os_vif.plug`` / ``os_vif.unplug`` (the
``ovs`` plugin, on ``[os_vif_ovs] ovsdb_connection``) write the port into the host's Open vSwitch.

On the userspace datapath Neutron's vif details ask os-vif neither to make the guest's TAP device (Neutron sets
``ovs_create_tap`` for the kernel datapath only) nor to add the OVS port: libvirt makes both, for a guest it
starts. Here there is no libvirt, so both are left to os-vif, through the two switches os-vif has for them: the
port profile's ``create_port`` (what nova sets from the VIF's ``delegate_create`` when it delegates the port to
os-vif, as for a live migration) and ``create_tap`` (what nova sets from Neutron's ``ovs_create_tap``). os-vif then
makes the TAP device (named as nova names it: ``tap`` + the port id's first 11 characters) with its privileged
helper, which runs in the host's network namespace (``[vif_plug_ovs_privileged] helper_command``, where the host's
ovs-vswitchd runs), adds the port to br-int with its external ids (``iface-id``, ``iface-status``,
``attached-mac``, ``vm-uuid``), and on unplug removes both. The agent then binds the port and programs its QoS.
"""
from __future__ import annotations

import copy

import os_vif
from nova.network import os_vif_util
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def with_os_vif(base: type) -> type:
    """``base`` (a nova fake driver class) whose guests' VIFs are plugged through os-vif."""

    class OsVifDriver(base):
        def __init__(self, virtapi, read_only=False):
            super().__init__(virtapi, read_only)
            os_vif.initialize()

        def spawn(self, context, instance, image_meta, injected_files, admin_password, allocations,
                  network_info=None, block_device_info=None, power_on=True, accel_info=None):
            super().spawn(context, instance, image_meta, injected_files, admin_password, allocations,
                          network_info=network_info, block_device_info=block_device_info, power_on=power_on,
                          accel_info=accel_info)
            self.plug_vifs(instance, network_info or [])

        def destroy(self, context, instance, network_info, block_device_info=None, destroy_disks=True,
                    destroy_secrets=True):
            super().destroy(context, instance, network_info, block_device_info=block_device_info,
                            destroy_disks=destroy_disks, destroy_secrets=destroy_secrets)
            self.unplug_vifs(instance, network_info or [])

        def plug_vifs(self, instance, network_info):
            _each_vif(os_vif.plug, instance, network_info)

        def unplug_vifs(self, instance, network_info):
            _each_vif(os_vif.unplug, instance, network_info)

    OsVifDriver.__name__ = OsVifDriver.__qualname__ = base.__name__ + "OsVif"
    return OsVifDriver


def _each_vif(action, instance, network_info) -> None:
    """``action`` (os_vif.plug or os_vif.unplug) on each VIF of the network info that os-vif plugs."""
    info = os_vif_util.nova_to_osvif_instance(instance)
    for vif in _os_vifs(network_info):
        LOG.info("os-vif %s %s (port %s) on %s", action.__name__, vif.vif_name, vif.id, vif.network.bridge,
                 instance=instance)
        action(vif, info)


def _os_vifs(network_info) -> list:
    """The os-vif objects of the network info's VIFs that os-vif plugs, the port and the TAP device left to it."""
    out = []
    for vif in network_info:
        vif = copy.copy(vif)  # nova's VIF model is a dict: the instance's network info is left as it was
        vif["delegate_create"] = True
        obj = os_vif_util.nova_to_osvif_vif(vif)
        if obj is not None:
            obj.port_profile.create_tap = True
            out.append(obj)
    return out
