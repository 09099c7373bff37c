"""Drift between the three places the bandwidth configuration lives: the agents' ini files, what the
agents report to Neutron (their heartbeat ``configurations``), and the providers in Placement. Pure.

Each side is turned into provider snapshots (name, parent, traits, inventories) keyed by Neutron's
uuid5 UUIDs, so one table compares them provider by provider.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from minbw.model.providers import DesiredState, snapshot

SIDES = ("ini", "agent", "placement")


def snapshots(desired: DesiredState | None) -> dict[str, dict]:
    """uuid → snapshot of the providers a desired state describes (agents' parent: the root, by name)."""
    if desired is None:
        return {}
    return {
        p.uuid: snapshot(p.name, p.parent_uuid or f"root:{p.hypervisor}", p.traits, p.inventories)
        for p in desired.providers
    }


@dataclass(frozen=True)
class DriftRow:
    uuid: str
    name: str
    sides: Mapping[str, dict | None]  # side → snapshot (None: absent there; side left out: not read)
    differences: tuple[str, ...]

    @property
    def agree(self) -> bool:
        """Whether the sides agree (no differences)."""
        return not self.differences

    def to_dict(self) -> dict:
        """The row as a JSON-ready dict: uuid, name, agree, differences and each side read (side → snapshot, None:
        absent)."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "agree": self.agree,
            "differences": list(self.differences),
            **self.sides,
        }


LABELS = {"ini": "ini", "agent": "agent", "placement": "Placement"}


def _values(values: Mapping[str, object]) -> str:
    """``ini 2000, Placement 1500``: each side's value, in the sides' order."""
    return ", ".join(f"{LABELS[s]} {'none' if v is None else v}" for s, v in values.items())


def _differences(sides: Mapping[str, dict | None]) -> list[str]:
    """What differs between the sides, a sentence per name, trait, inventory class and field:
    ``NET_BW_EGR_KILOBIT_PER_SEC total: ini 2000, Placement 1500``."""
    out = []
    present = {s: snap for s, snap in sides.items() if snap is not None}
    missing = [s for s, snap in sides.items() if snap is None]
    if missing and present:
        out.append(f"missing from {', '.join(missing)}")
    names = {s: snap["name"] for s, snap in present.items()}
    if len(set(names.values())) > 1:
        out.append(f"name: {_values(names)}")
    for trait in sorted({t for snap in present.values() for t in snap["traits"]}):
        has = [s for s, snap in present.items() if trait in snap["traits"]]
        if len(has) != len(present):
            lacks = [LABELS[s] for s in present if s not in has]
            out.append(f"trait {trait}: on {', '.join(LABELS[s] for s in has)}, not on {', '.join(lacks)}")
    for rc in sorted({rc for snap in present.values() for rc in snap["inventories"]}):
        invs = {s: snap["inventories"].get(rc) for s, snap in present.items()}
        if any(inv is None for inv in invs.values()):
            totals = {s: (inv or {}).get("total") for s, inv in invs.items()}
            out.append(f"{rc}: {_values(totals)}")
            continue
        for field in sorted({f for inv in invs.values() for f in inv}, key=lambda f: (f != "total", f)):
            values = {s: inv.get(field) for s, inv in invs.items()}
            if len(set(map(repr, values.values()))) > 1:
                out.append(f"{rc} {field}: {_values(values)}")
    return out


def drift_rows(
    ini: DesiredState | None, agent: DesiredState | None, placement: Mapping[str, dict] | None
) -> list[DriftRow]:
    """One row per provider any side knows. ``placement``: uuid → snapshot of what Placement holds under
    the agents (None: not read). Parents are not compared: the root's UUID is known only to Placement."""
    sides = {
        "ini": snapshots(ini) if ini is not None else None,
        "agent": snapshots(agent) if agent is not None else None,
        "placement": dict(placement) if placement is not None else None,
    }
    read = {s: snaps for s, snaps in sides.items() if snaps is not None}
    uuids = sorted({u for snaps in read.values() for u in snaps})
    rows = []
    for uuid in uuids:
        per = {s: snaps.get(uuid) for s, snaps in read.items()}
        name = next(snap["name"] for snap in per.values() if snap)
        rows.append(DriftRow(uuid, name, per, tuple(_differences(per))))
    return sorted(rows, key=lambda r: r.name)


def without_compute_node(
    rows: Iterable[DriftRow], sides: Iterable[DesiredState | None], roots: Collection[str]
) -> list[DriftRow]:
    """The rows, those of a hypervisor with no root provider in Placement (``roots``: their names) aside: a host
    where no nova-compute runs, such as Neutron's network nodes, whose Open vSwitch agents report a hypervisor for
    every mapped bridge and ``rp_tunnelled`` whatever their bandwidth. Neutron's placement plugin cannot write their
    providers (it fails the agent's sync, ``resources_synced`` false) and nothing can be reserved there: left out
    when nothing of that hypervisor carries an inventory, and otherwise each of its rows says why it is missing."""
    hypervisor = {p.uuid: p.hypervisor for d in sides if d is not None for p in d.providers}
    configured = {p.hypervisor for d in sides if d is not None for p in d.providers if p.inventories}
    out = []
    for row in rows:
        hyp = hypervisor.get(row.uuid)
        if hyp is None or hyp in roots or row.sides.get("placement"):
            out.append(row)
        elif hyp in configured:
            out.append(
                replace(
                    row,
                    differences=(
                        *row.differences,
                        (
                            f"no compute node provider {hyp!r} in Placement: neither Neutron nor minbw can write it "
                            "and nothing can be reserved there (a network node: give bandwidth to the computes' "
                            "agents only; a compute: name its provider as 'openstack hypervisor list' does, "
                            "resource_provider_hypervisors)"
                        ),
                    ),
                )
            )
    return out
