"""Placement microversions, named by the feature that needs them, and the one parser for them."""

from __future__ import annotations

import re

Microversion = tuple[int, int]

ROOT = (1, 0)  # GET / (the version document)
TRAITS = (1, 6)
PROVIDERS = (1, 14)  # parent/root in provider bodies, in_tree
PROVIDERS_REQUIRED = (1, 18)  # the required= trait filter on provider listings
PROVIDERS_FORBIDDEN = (1, 22)  # !TRAIT (forbidden traits) in that filter
AGGREGATES = (1, 19)  # provider aggregates with the provider generation
CREATE_RETURNS_BODY = (1, 20)  # POST /resource_providers returns the provider (its generation)
ERROR_CODES = (1, 23)  # errors[0].code in error bodies (placement.concurrent_update, ...)
INVENTORIES = (1, 26)  # reserved may equal total (Neutron uses 1.37)
CONSUMER_GENERATIONS = (1, 28)  # consumer_generation in allocation bodies
NESTED_CANDIDATES = (1, 29)  # candidates with nested providers; summaries with parent/root
IN_TREE = (1, 31)
FORBIDDEN_AGGREGATES = (1, 32)  # member_of=!in:A,B
STRING_SUFFIXES = (1, 33)
MAPPINGS = (1, 34)
ROOT_REQUIRED = (1, 35)
SAME_SUBTREE = (1, 36)  # also: request groups without resources
NOVA_CANDIDATES = SAME_SUBTREE  # what Nova 34 sends GET /allocation_candidates at (report.SAME_SUBTREE_VERSION)
REPARENT = (1, 37)
CONSUMER_TYPES = (1, 38)
ANY_TRAITS = (1, 39)  # also: repeating required{S}


def parse(value: str | Microversion) -> Microversion:
    """``"1.36"`` (or ``"placement 1.36"``, or ``(1, 36)``) -> ``(1, 36)``."""
    if isinstance(value, tuple):
        return value
    text = str(value).strip()
    if text.lower().startswith("placement "):
        text = text.split(" ", 1)[1].strip()
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"not a microversion: {value!r} (expected MAJOR.MINOR, e.g. 1.36)")
    return int(m.group(1)), int(m.group(2))


def format(value: str | Microversion) -> str:  # noqa: A001 - the module is used qualified
    """``value`` spelled ``"MAJOR.MINOR"``. Raises ValueError when it is not a microversion."""
    major, minor = parse(value)
    return f"{major}.{minor}"


def at_least(have: str | Microversion, want: str | Microversion) -> bool:
    """Whether ``have`` is ``want`` or later. Raises ValueError when either is not a microversion."""
    return parse(have) >= parse(want)
