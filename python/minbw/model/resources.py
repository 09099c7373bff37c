"""Resource amounts as users give them, checked in one place. Pure.

Two spellings, one rule: a module's ``{CLASS: AMOUNT}`` dict and the command line's ``CLASS=AMOUNT`` (repeatable,
as osc-placement's ``--resource``). A class is a standard one (os-resource-classes) or ``CUSTOM_*``; an amount
is a whole number >= 0. Anything else is refused naming the option, the value and an example.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from minbw.errors import InvalidInput

_CUSTOM_CLASS = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
RESOURCE_EXAMPLE = "VCPU=1 (repeat for more: --resource VCPU=1 --resource MEMORY_MB=256)"


def check_class(rc, option: str) -> str:
    """``rc`` when it is a standard resource class (os-resource-classes) or ``CUSTOM_*``. Raises InvalidInput naming
    ``option`` (and the closest standard class) otherwise."""
    import os_resource_classes as orc

    if not isinstance(rc, str) or not (rc in orc.STANDARDS or _CUSTOM_CLASS.match(rc)):
        close = difflib.get_close_matches(str(rc).upper(), orc.STANDARDS, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise InvalidInput(
            f"{option}: unknown resource class {rc!r}.{hint} Fix: use a standard class "
            f"(VCPU, MEMORY_MB, DISK_GB, PCPU, ...) or a custom one, CUSTOM_ followed by "
            f"upper-case letters, digits and _."
        )
    return rc


def check_amount(rc: str, amount, option: str) -> int:
    """``amount`` as an int. Raises InvalidInput naming ``option`` and ``rc`` when it is not a whole number >= 0 (bools,
    floats and signed strings are refused)."""
    try:
        value = int(amount) if not isinstance(amount, (bool, float)) else None
    except (TypeError, ValueError):
        value = None
    if value is None or value < 0 or (isinstance(amount, str) and not amount.strip().isdigit()):
        raise InvalidInput(f"{option}: {rc}: the amount must be a whole number >= 0, got {amount!r}.")
    return value


def check_resources(resources: Mapping | None, option: str = "resources") -> dict[str, int]:
    """``{class: amount}`` checked: known class names (standard, or CUSTOM_*), whole amounts >= 0."""
    if resources is not None and not isinstance(resources, Mapping):
        raise InvalidInput(
            f"{option}: expected resource class to amount, e.g. {{VCPU: 1, MEMORY_MB: 256}}, got {resources!r}"
        )
    return {check_class(rc, option): check_amount(rc, amount, option) for rc, amount in (resources or {}).items()}


def parse_resource(text: str, option: str = "--resource") -> tuple[str, int]:
    """``CLASS=AMOUNT`` (one command-line value) → ``(class, amount)``."""
    rc, sep, amount = str(text).partition("=")
    if not sep or not rc.strip() or not amount.strip():
        raise InvalidInput(f"{option}: expected CLASS=AMOUNT, e.g. {RESOURCE_EXAMPLE}; got {text!r}")
    rc = check_class(rc.strip(), option)
    return rc, check_amount(rc, amount.strip(), option)


def resources_of(items: Iterable[tuple[str, int]], option: str = "--resource") -> dict[str, int]:
    """Parsed ``--resource`` values → ``{class: amount}``; a class given twice is refused."""
    out: dict[str, int] = {}
    for rc, amount in items:
        if rc in out:
            raise InvalidInput(f"{option}: {rc} is given twice ({out[rc]} and {amount}). Fix: give each class once")
        out[rc] = amount
    return out
