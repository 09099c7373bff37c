"""Which root provider ``provider sync --create-root`` may make for a hypervisor whose root is not in Placement,
and whether ``--root-inventory`` may be set on a root, decided from what Nova knows of the host.

nova-compute makes its compute node's root itself (``SchedulerReportClient._ensure_resource_provider``): it looks
the tree up by the compute node's UUID and, finding none, creates a provider with that UUID named after the node's
``hypervisor_hostname``. A root of that name with another UUID makes Placement refuse the create (409
"Conflicting resource provider name"), and nova-compute cannot report the node at all
(``ResourceProviderCreationFailed``, at every periodic update). A root with the node's UUID is adopted as it is,
and nova-compute replaces its inventory with its driver's (``update_from_provider_tree``) at its first update,
and again each time it refreshes its view of Placement (``[compute] resource_provider_association_refresh``, 300 s
by default: ``_refresh_associations`` re-reads the inventory, which then differs from its driver's) or restarts.
tests/e2e/test_create_root_cloud.py shows on Nova 34 the 409, and the root of the
node's UUID adopted with its inventory replaced at nova-compute's start.

So, where the cloud has Nova:

- Nova knows a compute node named after the hypervisor: the root gets that node's UUID and name (what nova-compute
  would create), and nova-compute adopts it;
- otherwise the root would take the name nova-compute's provider needs: refused, unless told
  (``ignore_nova_compute``), with why - a nova-compute service on the host without that node yet (it makes its
  node, then its root, at its first update), Nova not readable (nothing can be told), or Nova knowing nothing of
  the host (nova-compute not started there yet, or a host without it, such as a network node, which needs no
  root: Nova never places a server there);
- ``--root-inventory`` on a root that is a compute node Nova knows is refused unless told: nova-compute undoes it.

Without Nova (no compute service in the cloud) the root is minbw's own, named after the hypervisor (None here).
Pure: :func:`minbw.ops.nova_query.read_compute_hosts` reads what Nova knows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minbw.errors import RootRefused

IGNORE = "--ignore-nova-compute / ignore_nova_compute"
HYPERVISORS = "'openstack hypervisor list'"


@dataclass(frozen=True)
class NovaComputes:
    """What Nova knows of its computes: ``nodes`` its compute nodes (``hypervisor_hostname`` → their UUIDs, the id
    ``GET /os-hypervisors`` shows from compute API 2.53), ``service_hosts`` the hosts of its nova-compute services
    (``GET /os-services?binary=nova-compute``); ``unread``: why they could not be read ("" when they were)."""

    nodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    service_hosts: frozenset[str] = frozenset()
    unread: str = ""

    def owns(self, uuid: str) -> bool:
        """Whether ``uuid`` is a compute node's (its root is nova-compute's)."""
        return any(uuid in uuids for uuids in self.nodes.values())


def root_of(hypervisor: str, hosts: Iterable[str], nova: NovaComputes | None, *, ignore: bool = False) -> str | None:
    """The UUID of the root to create for ``hypervisor`` (named ``hypervisor``): its compute node's where Nova knows
    one, None for minbw's own (no Nova, or ``ignore``). ``hosts``: the agent hosts that name ``hypervisor`` (Neutron's
    ports are bound to nova-compute's host by that name). Raises :class:`RootRefused` otherwise."""
    if nova is None:
        return None
    uuids = nova.nodes.get(hypervisor, ())
    if len(uuids) > 1:
        raise RootRefused(
            hypervisor,
            f"Nova has {len(uuids)} compute nodes named {hypervisor!r} "
            f"({', '.join(sorted(uuids))}), so which one's root to create cannot be told",
            f"delete the stale one's nova-compute service ('openstack compute service delete'), see {HYPERVISORS}",
        )
    if uuids:
        return uuids[0]
    if ignore:
        return None
    missing = f"no root provider named {hypervisor!r} in Placement and no compute node of that name in Nova"
    if nova.unread:
        raise RootRefused(
            hypervisor,
            f"no root provider named {hypervisor!r} in Placement, and {nova.unread}, so "
            f"whether nova-compute makes this root cannot be told; a root minbw made would take the "
            f"name nova-compute's provider needs (Placement then refuses it: 409, and nova-compute "
            f"cannot report)",
            f"use credentials that may list Nova's hypervisors and services (admin), or give {IGNORE} "
            f"where nova-compute never runs",
        )
    on = sorted(({hypervisor} | set(hosts)) & nova.service_hosts)
    if on:
        raise RootRefused(
            hypervisor,
            f"{missing}, but nova-compute runs on {', '.join(on)}: it creates its compute "
            f"node, then that node's root provider named after it, at its first resource update (or "
            f"its node has another name); a root minbw made now would take that name, and Placement "
            f"would refuse nova-compute's (409 Conflicting resource provider name), so it could not "
            f"report",
            f"wait until {HYPERVISORS} shows {hypervisor} and sync again without create_root / "
            f"--create-root (the root is then nova-compute's), or, if the node has another name, name "
            f"it in resource_provider_hypervisors / the agent host; {IGNORE} creates minbw's own root "
            f"anyway",
        )
    where = ", ".join(sorted({hypervisor} | set(hosts)))
    raise RootRefused(
        hypervisor,
        f"{missing}, and no nova-compute service on {where}: "
        f"if nova-compute starts there later, a root minbw made now holds the name its provider needs "
        f"(Placement refuses it: 409), and a host without nova-compute (a network node) needs no "
        f"bandwidth providers, as Nova places no server there",
        f"start nova-compute on the host first (it creates the root) and sync without create_root / "
        f"--create-root, leave this host's agents out, or give {IGNORE} for a host nova-compute never "
        f"runs on (a demo)",
    )


def check_root_inventory(hypervisor: str, uuid: str, nova: NovaComputes | None, *, ignore: bool = False) -> None:
    """Refuse (:class:`RootRefused`) inventories given for the root ``uuid`` of ``hypervisor`` when it is a compute
    node Nova knows (nova-compute replaces them with its driver's)."""
    if nova is None or ignore or not nova.owns(uuid):
        return
    raise RootRefused(
        hypervisor,
        f"root_inventories / --root-inventory given for the root of {hypervisor!r} "
        f"({uuid}), which is the compute node's in Nova: nova-compute replaces that root's inventory "
        f"with its driver's at its next update (at its start, and after each refresh of its view of "
        f"Placement, [compute] resource_provider_association_refresh, 300 s by default)",
        f"leave root_inventories / --root-inventory out (nova-compute reports the root's inventory; "
        f"reserved amounts and allocation ratios are nova.conf options such as reserved_host_memory_mb "
        f"and cpu_allocation_ratio), or give {IGNORE} to set it for a while anyway",
    )
