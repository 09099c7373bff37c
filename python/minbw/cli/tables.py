"""Tables in the style of python-openstackclient / osc-placement (pure)."""
from __future__ import annotations

from typing import Any, Iterable, Sequence


def _cell(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align_right: Sequence[str] = ()) -> str:
    rows = [[_cell(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells, header=False):
        out = []
        for i, c in enumerate(cells):
            right = not header and headers[i] in align_right
            out.append(" " + (c.rjust(widths[i]) if right else c.ljust(widths[i])) + " ")
        return "|" + "|".join(out) + "|"

    lines = [sep, line(headers, True), sep] + [line(r) for r in rows] + [sep]
    return "\n".join(lines)


def fields(pairs: Iterable[tuple[str, Any]]) -> str:
    return table(("Field", "Value"), pairs)


INVENTORY_HEADERS = ("resource_class", "allocation_ratio", "max_unit", "reserved", "step_size", "min_unit", "total")


def inventory_table(inventories: dict[str, dict]) -> str:
    return table(INVENTORY_HEADERS,
                 [[rc] + [inv[h] for h in INVENTORY_HEADERS[1:]] for rc, inv in sorted(inventories.items())],
                 align_right=INVENTORY_HEADERS[1:])


def usage_table(usages: dict[str, int]) -> str:
    return table(("resource_class", "usage"), sorted(usages.items()), align_right=("usage",))


def provider_table(providers: Iterable[dict]) -> str:
    heads = ("uuid", "name", "generation", "root_provider_uuid", "parent_provider_uuid")
    return table(heads, [[p.get(h) for h in heads] for p in providers], align_right=("generation",))
