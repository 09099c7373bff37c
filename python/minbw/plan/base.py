"""The one plan shape: ops (the writes, in order), before, after (the prediction), diff, to_dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar


@dataclass(frozen=True)
class Op:
    """One write; each kind of object has its own subclass with the fields its API call needs."""

    action: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the write: its ``action``."""
        return {"action": self.action}


# the kind of write a plan holds (covariant: a plan of provider writes is a plan of writes)
OpT_co = TypeVar("OpT_co", bound=Op, covariant=True)


@dataclass(frozen=True)
class Plan(Generic[OpT_co]):
    """``ops`` turn ``before`` (what is there; None: absent) into ``after`` (None: absent)."""

    ops: tuple[OpT_co, ...]
    before: Any = None
    after: Any = None

    @property
    def changed(self) -> bool:
        """Whether the plan has writes."""
        return bool(self.ops)

    def writes(self) -> int:
        """How many writes the plan makes."""
        return len(self.ops)

    def diff(self) -> dict[str, Any]:
        """Ansible's diff shape: the object before and after ({} for absent)."""
        return {"before": self.before or {}, "after": self.after or {}}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``changed``, ``writes`` and the ops' dicts, in order."""
        return {"changed": self.changed, "writes": self.writes(), "ops": [op.to_dict() for op in self.ops]}
