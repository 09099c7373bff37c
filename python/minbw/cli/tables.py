"""Tables in the style of python-openstackclient / osc-placement (pure). Only ``cli.output`` draws them."""
from __future__ import annotations

from typing import Any, Iterable, Sequence


def cell(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align_right: Sequence[str] = ()) -> str:
    rows = [[cell(c) for c in r] for r in rows]
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


# osc-placement's column orders: `resource provider list`, `... inventory list` (with `used`), `... usage show`
PROVIDER_COLUMNS = ("uuid", "name", "generation", "root_provider_uuid", "parent_provider_uuid")
INVENTORY_COLUMNS = ("resource_class", "allocation_ratio", "min_unit", "max_unit", "reserved", "step_size", "total",
                     "used")
USAGE_COLUMNS = ("resource_class", "usage")


def provider_rows(providers: Iterable[dict]) -> tuple[tuple, ...]:
    return tuple(tuple(p.get(h) for h in PROVIDER_COLUMNS) for p in providers)


def inventory_rows(inventories: dict[str, dict], usages: dict[str, int]) -> tuple[tuple, ...]:
    return tuple((rc, *(inv[h] for h in INVENTORY_COLUMNS[1:-1]), usages.get(rc, 0))
                 for rc, inv in sorted(inventories.items()))


def usage_rows(usages: dict[str, int]) -> tuple[tuple, ...]:
    return tuple(sorted(usages.items()))
