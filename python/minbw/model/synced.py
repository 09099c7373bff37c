"""What the last complete sync left, kept beside the provider cache (:mod:`minbw.cache.synced`), and the answer of a
warm sync that found nothing changed (:class:`Unchanged`): the warm sync as the listing (issue 46)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minbw.model.providers import DesiredState


def state_fingerprint(state: DesiredState) -> str:
    """A digest of everything in ``state`` a plan reads (providers, traits, sweeps, warnings, units), the same in
    every process (sets sorted): ``state:`` and 64 hex digits."""
    doc = [
        sorted((p.to_dict() for p in state.providers), key=lambda d: d["uuid"]),
        sorted(state.traits),
        sorted(state.sweep),
        sorted(state.sweep_kinds),
        list(state.warnings),
        [u.to_dict() for u in state.units],
        sorted(state.unswept),
        state.isolated,
    ]
    return "state:" + hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def state_scope(state: DesiredState) -> str:
    """A digest of what ``state`` is a sync of, not of its content: each unit's kind, name, host and hypervisors
    (sorted). Two syncs of the same agent files or chassis have the same scope whatever the files say; syncs of
    other hosts sharing a cache have others. 16 hex digits."""
    units = sorted([u.kind, u.name, u.host or "", list(u.hypervisors)] for u in state.units)
    return hashlib.sha256(json.dumps(units).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Synced:
    """The last complete sync (every write made, none pending, nothing kept for its allocations): ``fingerprint``
    of its desired state and options, ``at`` when it ended, ``roots`` hypervisor → its root's UUID (None: no root,
    the hypervisor skipped), ``generations`` desired provider → its generation after the sync, ``agents`` the agent
    providers whose other children would be deleted, ``verified`` / ``checked`` the oldest confirmation / full read
    of their cache entries (the safety check's and the maximum age's clocks), and the plan's ``warnings`` and
    ``skipped`` hypervisors (hypervisor, why)."""

    fingerprint: str
    at: float
    roots: Mapping[str, str | None]
    generations: Mapping[str, int]
    agents: frozenset[str]
    verified: float
    checked: float
    warnings: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``agents`` sorted)."""
        return {
            "fingerprint": self.fingerprint,
            "at": self.at,
            "roots": dict(self.roots),
            "generations": dict(self.generations),
            "agents": sorted(self.agents),
            "verified": self.verified,
            "checked": self.checked,
            "warnings": list(self.warnings),
            "skipped": [list(s) for s in self.skipped],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Synced:
        """The record :meth:`to_dict` made. Raises KeyError, TypeError or ValueError on another shape."""
        return cls(
            fingerprint=str(d["fingerprint"]),
            at=float(d["at"]),
            roots={str(h): (None if u is None else str(u)) for h, u in d["roots"].items()},
            generations={str(u): int(g) for u, g in d["generations"].items()},
            agents=frozenset(str(a) for a in d["agents"]),
            verified=float(d["verified"]),
            checked=float(d["checked"]),
            warnings=tuple(str(w) for w in d["warnings"]),
            skipped=tuple((str(h), str(why)) for h, why in d["skipped"]),
        )


@dataclass(frozen=True)
class Unchanged:
    """A warm sync's answer without reading or planning: ``providers`` desired providers at the generations the last
    sync (``synced_at``) left, their names and parents as desired, no stranger under their agents, the desired state
    equal to that sync's (``fingerprint``), its cache entries confirmed less than ``check_interval`` seconds ago."""

    providers: int
    fingerprint: str
    synced_at: float
    check_interval: float

    def __str__(self) -> str:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.synced_at))
        return (
            f"unchanged: {self.providers} providers at the generations of the last sync ({when}), names and parents "
            f"as desired, none added under their agents; desired state equal (fingerprint {self.fingerprint[:22]}); "
            f"confirmed less than {self.check_interval:g} s ago: no safety check due"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the counts, the fingerprint, when the last sync ended, the check interval and why."""
        return {
            "providers": self.providers,
            "fingerprint": self.fingerprint,
            "synced_at": self.synced_at,
            "check_interval": self.check_interval,
            "why": str(self),
        }
