"""What Nova's scheduler is asked for when a server moves off its host (live migration, cold migration), read from
Nova 34's code, and what that leaves as the server's possible destinations. Pure: no I/O.

A move schedules the server again from its stored request spec (``RequestSpec.get_by_instance_uuid`` in
``nova/compute/api.py`` ``API.live_migrate`` and ``API.resize``), which keeps what the server was booted with:

- the flavor (the instance's; the API embeds it with its extra specs from compute API 2.47), the image's properties
  as stored at boot (``request_spec.image``: minbw reads the image from Glance now, which differs only when its
  properties changed since), whether it boots from a volume (``compute_utils.heal_reqspec_is_bfv``), the project
  (``ensure_project_and_user_id``);
- the availability zone the server was booted into, if one was asked for or defaulted
  (``request_spec.availability_zone``, shown as ``pinned_availability_zone`` from compute API 2.96): the
  ``map_az_to_placement_aggregate`` request filter applies it again;
- the ports' request groups, read again from Neutron (``LiveMigrationTask._get_request_spec_for_select_destinations``:
  ``network_api.get_requested_resource_for_instance``; ``MigrationTask`` likewise), with their
  ``group_policy`` and ``same_subtree`` (``request_level_params``);
- the server group (``scheduler_utils.setup_instance_group``): with ``anti-affinity``, Nova's
  ``ServerGroupAntiAffinityFilter`` (``nova/scheduler/filters/affinity_filter.py``) refuses a host that already holds
  ``max_server_per_host`` (default 1) of the group's members; with ``affinity``, ``ServerGroupAffinityFilter``
  accepts only the hosts of the group's members (the source's is ignored: none is left when every member is there);
  the ``soft-*`` policies only weigh hosts.

The source host is never a destination (``LiveMigrationTask._find_destination``: ``request_spec.ignore_hosts =
[self.source]``; a cold migration: ``API.resize`` ``ignore_hosts`` unless ``allow_resize_to_same_host``). A
target host given without ``force`` is only a hint that still goes through the scheduler (``API.live_migrate``:
``requested_destination``); a forced move of a server with allocations on more than one provider (a port's
bandwidth on a nested provider) is refused: ``scheduler_utils.claim_resources_on_destination`` raises NoValidHost
"The instance has complex allocations on the source host so move cannot be forced". So minbw never forces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minbw.errors import RequestError
from minbw.nova.inputs import Flavor, Image, Server, ports_of

ANTI_AFFINITY = "anti-affinity"
AFFINITY = "affinity"
# statuses a server moves from: live migration needs ACTIVE or PAUSED (API.live_migrate's check_instance_state),
# a cold migration ACTIVE or SHUTOFF (API.resize: vm_states ACTIVE, STOPPED)
LIVE_STATUSES = frozenset({"ACTIVE", "PAUSED"})
COLD_STATUSES = frozenset({"SHUTOFF"})


@dataclass(frozen=True)
class ServerGroup:
    """A Nova server group: its policy (compute API 2.64+), its members (server ids) and, for anti-affinity, how
    many members one host may hold (``rules.max_server_per_host``, default 1)."""

    id: str
    name: str
    policy: str
    members: tuple[str, ...] = ()
    max_server_per_host: int = 1

    @classmethod
    def from_api(cls, group: Mapping) -> ServerGroup:
        """From Nova's ``GET /os-server-groups`` entry (openstacksdk's ``member_ids`` for ``members``; the
        ``policies`` list of microversions before 2.64). Raises RequestError for a rule that is no whole number."""
        policy = group.get("policy") or next(iter(group.get("policies") or ()), "")
        rules = group.get("rules") or {}
        try:
            most = int(rules.get("max_server_per_host") or 1)
        except (TypeError, ValueError):
            raise RequestError(
                f"server group {group.get('id')}: max_server_per_host {rules.get('max_server_per_host')!r} is no "
                f"whole number."
            ) from None
        members = group.get("members") or group.get("member_ids") or ()
        return cls(str(group.get("id") or ""), str(group.get("name") or ""), str(policy), tuple(members), most)


def moving_server(server: Mapping, ports: Sequence[Mapping], image: Mapping | None = None) -> Server:
    """The :class:`~minbw.nova.inputs.Server` Nova's scheduler gets for a move of ``server`` (Nova's API view,
    compute API 2.47+ for the embedded flavor, 2.96+ for ``pinned_availability_zone``, 2.100+ for
    ``scheduler_hints``; openstacksdk's ``to_dict()`` too), with its Neutron ``ports`` and its boot ``image``
    (Glance's view; None for a server booted from a volume). Raises RequestError when the flavor is not embedded."""
    flavor = dict(server.get("flavor") or {})
    if "vcpus" not in flavor:
        raise RequestError(
            f"server {server.get('id')}: Nova's API did not embed its flavor (compute API 2.47 or later does), so "
            f"what it asks for is unknown. Fix: let the client use compute API 2.47 or later."
        )
    flavor.setdefault("name", flavor.get("original_name") or "")
    hints = server.get("scheduler_hints") or server.get("OS-SCH-HNT:scheduler_hints") or {}
    return Server(
        flavor=Flavor.from_api(flavor),
        image=Image.from_api(image) if image else Image(),
        ports=ports_of(ports),
        availability_zone=server.get("pinned_availability_zone") or None,
        project_id=server.get("project_id") or server.get("tenant_id"),
        boot_from_volume=not (server.get("image") or {}).get("id"),
        scheduler_hints=tuple(hints),
    )


def move_kind(status: str) -> str | None:
    """How a server in ``status`` moves: ``live`` (ACTIVE, PAUSED), ``cold`` (SHUTOFF), None (it cannot be moved
    as it is: building, resizing, in ERROR, shelved, ...)."""
    if status in LIVE_STATUSES:
        return "live"
    if status in COLD_STATUSES:
        return "cold"
    return None


def group_hosts(
    server_id: str, group: ServerGroup | None, host_of: Mapping[str, str | None], source: str
) -> tuple[frozenset[str] | None, frozenset[str], str]:
    """What the server group's filter leaves the server when it moves off ``source``: ``(only, never, why)``.
    ``host_of``: each member's host (its compute node's name, the root provider's), None when it has none;
    ``only`` the hosts an ``affinity`` group allows (None: no such bound), ``never`` the hosts an ``anti-affinity``
    group refuses (those already holding ``max_server_per_host`` of the other members; the members moving off
    ``source`` with it are the planner's to keep apart), ``why`` in words ("" when the group bounds nothing)."""
    if group is None or group.policy not in (AFFINITY, ANTI_AFFINITY):
        return None, frozenset(), ""
    others = [host_of.get(m) for m in group.members if m != server_id]
    elsewhere = [h for h in others if h and h != source]
    if group.policy == AFFINITY:
        only = frozenset(elsewhere)
        why = f"server group {group.name or group.id} (affinity): only the hosts of its other members " + (
            ", ".join(sorted(only)) if only else "(none but the source: no host is left)"
        )
        return only, frozenset(), why
    counts: dict[str, int] = {}
    for h in elsewhere:
        counts[h] = counts.get(h, 0) + 1
    never = frozenset(h for h, n in counts.items() if n >= group.max_server_per_host)
    why = f"server group {group.name or group.id} (anti-affinity, {group.max_server_per_host} per host): never " + (
        ", ".join(sorted(never)) if never else "a host holding its other members (none outside the source)"
    )
    return None, never, why


def allowed_roots(
    roots: Mapping[str, str],
    removed: Iterable[str],
    source_roots: Iterable[str],
    only: frozenset[str] | None = None,
    never: Iterable[str] = (),
) -> frozenset[str]:
    """The root providers (uuid → name, ``roots``) the server may move to: not ``removed`` by Nova's request
    filters (uuids), not the source's, not a host ``never`` names, and one ``only`` names when it is given (names)."""
    gone = set(removed) | set(source_roots)
    never = set(never)
    return frozenset(
        u for u, name in roots.items() if u not in gone and name not in never and (only is None or name in only)
    )


__all__ = [
    "ServerGroup",
    "moving_server",
    "move_kind",
    "group_hosts",
    "allowed_roots",
    "ANTI_AFFINITY",
    "AFFINITY",
]
