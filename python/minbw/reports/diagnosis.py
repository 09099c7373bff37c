"""Why there is no valid host, per request group: what readers.diagnose found (and what the use cases add: the
ports' segments, Nova's request filters), one typed entry each, and the diagnosis told in one line.

Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

GROUP = "group"  # one request group, checked alone
TOGETHER = "together"  # every group fits alone: the groups together (group "*")
SEGMENTS = "segments"  # the hosts outside the ports' segments that have room (group "member_of")
NOVA = "nova"  # the hosts Nova's request filters remove (group "nova")

# each kind's keys, in the order its dict has always shown them
_KEYS = {
    GROUP: ("group", "label", "resources", "required", "required_any", "fits_alone", "hosts", "problems"),
    TOGETHER: ("group", "label", "fits_alone", "problems", "hosts"),
    SEGMENTS: ("group", "label", "problems"),
    NOVA: ("group", "label", "fits_alone", "hosts", "problems"),
}


@dataclass(frozen=True)
class Diagnosis:
    """One entry of a "no valid host" diagnosis: ``group`` (a request group's id, "" the flavor's; ``*`` the groups
    together; ``member_of`` the ports' segments; ``nova`` Nova's request filters), its ``label`` in sentences, its
    ``problems`` (empty: none found), whether it fits alone (None: not checked) and on which hosts (names, sorted);
    a request group's entry also names what it asks (resources, required traits, any-of traits)."""

    group: str
    label: str
    problems: tuple[str, ...]
    fits_alone: bool | None = None
    hosts: tuple[str, ...] = ()
    kind: str = GROUP
    resources: Mapping[str, int] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    required_any: tuple[tuple[str, ...], ...] = ()

    @property
    def line(self) -> str:
        """``label: problem; problem``."""
        return f"{self.label}: {'; '.join(self.problems)}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, its kind's keys in their order: a request group's group, label, resources, required,
        required_any, fits_alone, hosts, problems; the groups together's group, label, fits_alone, problems, hosts;
        the segments' group, label, problems; Nova's filters' group, label, fits_alone, hosts, problems."""
        values: dict[str, Any] = {
            "group": self.group,
            "label": self.label,
            "resources": dict(self.resources),
            "required": list(self.required),
            "required_any": [list(a) for a in self.required_any],
            "fits_alone": self.fits_alone,
            "hosts": list(self.hosts),
            "problems": list(self.problems),
        }
        return {k: values[k] for k in _KEYS[self.kind]}


def summary(diagnosis: Sequence[Diagnosis]) -> str:
    """One line of the diagnosis: each entry with problems as ``label: problem; problem``, joined by `` | ``
    (empty when none has any)."""
    return " | ".join(e.line for e in diagnosis if e.problems)
