"""Whether Nova's ``owner_nova_filter`` adds ``root_required=OWNER_NOVA``, decided from what minbw can read.

Nova decides it from its own database (``request_filter._should_filter_by_owner``): the minimum version of the
``nova-compute`` services of all cells, over the rows not deleted and not forced down, versions 0 left out (nova
``objects.service.get_minimum_version_all_cells``, ``db.main.api.service_get_minimum_version``), at least
``MIN_COMPUTE_VERSION_OWNER_TRAIT`` (73, Nova 34); with no such service the minimum is 0 and Nova adds nothing.
No API shows a service's version. What shows it instead: from version 73 on, the resource tracker puts
``OWNER_NOVA`` on each of its compute nodes' root providers (``ResourceTracker._get_traits``), beside the
``COMPUTE_NODE`` every nova-compute since Train puts there.

Two readings, the closer first:

- :func:`from_nova` (Nova's API readable: ``GET /os-services?binary=nova-compute``, ``GET /os-hypervisors``,
  admin by default): the same services Nova counts (the API shows no deleted service; forced-down ones are left
  out as Nova leaves them out), each one's version read from its compute nodes' roots: a service is at 73 or later
  when every one of its compute nodes' roots carries ``OWNER_NOVA``. A deleted compute's provider left in
  Placement and a provider no nova-compute made (Cyborg's, a root made by hand) do not count, as in Nova. What it
  cannot see: a service with no compute node (its version is in Nova's minimum, and shows nowhere) and an upgraded
  service whose resource tracker has not yet run (its roots still lack the trait): minbw then asks for nothing.
  Asking for nothing when Nova asks for ``OWNER_NOVA`` adds only roots Nova leaves out (no nova-compute's, or one
  not yet updated); the other way round would drop computes Nova places servers on.
- :func:`from_placement` (Nova's API not readable: no compute endpoint, or a user without the admin role):
  every root provider with ``COMPUTE_NODE`` carries ``OWNER_NOVA``. It differs from Nova where a deleted or
  forced-down compute left an older root behind (minbw asks for nothing; Nova asks for the trait).

Pure: the use case reads the services, compute nodes and roots; tests/unit/nova/test_owner.py checks both
readings against Nova's own ``_should_filter_by_owner`` on generated clouds in the middle of an upgrade.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.nova import fields
from minbw.nova.request_filter import MIN_COMPUTE_VERSION_OWNER_TRAIT

SOURCE_NOVA = "nova"  # Nova's services and compute nodes, each node's root in Placement
SOURCE_PLACEMENT = "placement"  # Placement alone: every COMPUTE_NODE root
SOURCE_GIVEN = "given"  # the caller said so (--owner-nova yes|no)


@dataclass(frozen=True)
class ComputeService:
    """A ``nova-compute`` service as ``GET /os-services`` shows it: its host, whether it is forced down, its
    ``state`` (up or down) and whether it is disabled."""

    host: str
    forced_down: bool = False
    state: str = "up"
    disabled: bool = False


@dataclass(frozen=True)
class OwnerNova:
    """The decision: ``applies`` (Nova adds ``root_required=OWNER_NOVA``), from which ``source``, and ``why`` in
    words an operator can check (the hosts that decided it)."""

    applies: bool
    source: str
    why: str

    def to_dict(self) -> dict:
        """The decision as a JSON-ready dict: applies, source, why."""
        return {"applies": self.applies, "source": self.source, "why": self.why}


def given(applies: bool) -> OwnerNova:
    """The caller's own answer (``--owner-nova yes|no``; ``owner_nova`` of the modules and the exporter)."""
    return OwnerNova(applies, SOURCE_GIVEN, "as given (--owner-nova " + ("yes)" if applies else "no)"))


def _hosts(hosts: Iterable[str], most: int = 5) -> str:
    hosts = sorted(set(hosts))
    return ", ".join(hosts[:most]) + (f" and {len(hosts) - most} more" if len(hosts) > most else "")


def from_nova(
    services: Iterable[ComputeService], nodes: Iterable[tuple[str | None, str]], owned: Iterable[str]
) -> OwnerNova:
    """From Nova's ``nova-compute`` services, their compute nodes (``(service host, compute node uuid)``: the
    hypervisors' ``service.host`` and ``id``) and the root providers that carry ``OWNER_NOVA`` (``owned``: uuids)."""
    counted = sorted({s.host for s in services if not s.forced_down})
    if not counted:
        return OwnerNova(
            False,
            SOURCE_NOVA,
            "no nova-compute service that is not forced down (Nova's minimum service version is then 0)",
        )
    owned = set(owned)
    by_host: dict[str | None, list[str]] = {}
    for host, uuid in nodes:
        by_host.setdefault(host, []).append(uuid)
    nodeless = [h for h in counted if not by_host.get(h)]
    older = [h for h in counted if by_host.get(h) and not set(by_host[h]) <= owned]
    if older:
        return OwnerNova(
            False,
            SOURCE_NOVA,
            f"nova-compute on {_hosts(older)} is older than service version "
            f"{MIN_COMPUTE_VERSION_OWNER_TRAIT} (its compute node's root lacks OWNER_NOVA)",
        )
    if nodeless:
        return OwnerNova(
            False,
            SOURCE_NOVA,
            f"nova-compute on {_hosts(nodeless)} has no compute node, so its "
            f"service version cannot be read (Nova's API shows none)",
        )
    return OwnerNova(
        True, SOURCE_NOVA, f"the compute nodes of all {len(counted)} nova-compute services have OWNER_NOVA"
    )


def from_placement(roots: Mapping[str, Iterable[str]]) -> OwnerNova:
    """From Placement alone: ``roots`` (root provider name → its traits) of the providers with ``COMPUTE_NODE``
    (others are ignored)."""
    compute = {name: set(traits) for name, traits in roots.items() if fields.COMPUTE_NODE in set(traits)}
    if not compute:
        return OwnerNova(False, SOURCE_PLACEMENT, "no root provider in Placement has COMPUTE_NODE")
    older = [n for n, traits in compute.items() if fields.OWNER_NOVA not in traits]
    if older:
        return OwnerNova(
            False,
            SOURCE_PLACEMENT,
            f"the compute node root(s) {_hosts(older)} lack OWNER_NOVA (a "
            f"nova-compute older than service version {MIN_COMPUTE_VERSION_OWNER_TRAIT})",
        )
    return OwnerNova(True, SOURCE_PLACEMENT, f"all {len(compute)} compute node roots in Placement have OWNER_NOVA")
