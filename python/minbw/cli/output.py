"""The one output layer of the ``minbw`` command, as the OpenStack clients (cliff) do it:
``-f table|json|yaml|value`` and ``-c COLUMN`` on every command; ``--json`` is ``-f json``.

A command returns an :class:`Output` and never prints a table itself: its JSON/YAML document (what
``--json`` always printed), its main table (columns and rows: ``-f table``, ``-f value``, ``-c``),
and, for ``-f table`` only, lines above and below and further tables."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from minbw.cli import tables

FORMATS = ("table", "json", "yaml", "value")


@dataclass(frozen=True)
class Section:
    """A further table under the main one (``-f table`` only), e.g. a provider's inventories."""
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    align_right: tuple[str, ...] = ()


@dataclass(frozen=True)
class Output:
    """What a command shows. ``fields``: the table is one object (cliff's ShowOne: a Field/Value
    table, ``-c`` picks fields) rather than a list of rows (cliff's Lister)."""
    document: Any
    columns: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    fields: bool = False
    align_right: tuple[str, ...] = ()
    head: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    tail: tuple[str, ...] = ()
    show_table: bool = True  # False: -f table prints the head/tail sentences only, unless -c asks for columns


def add_output_arguments(parser: argparse.ArgumentParser, columns: tuple[str, ...], default: str = "table") -> None:
    """``-f``, ``-c`` (checked against the command's ``columns`` while parsing: a wrong one exits 2 before
    anything is read or written) and ``--json``."""
    group = parser.add_argument_group("output formatters")
    group.add_argument("-f", "--format", dest="format", choices=FORMATS, default=None,
                       help=f"the output format (default {default})")
    group.add_argument("-c", "--column", dest="columns", action="append", choices=columns, metavar="COLUMN",
                       help=f"show this column (repeat for several): {', '.join(columns)}")
    group.add_argument("--json", dest="format", action="store_const", const="json", help="the same as -f json")
    parser.set_defaults(format_default=default)


def output_format(args: argparse.Namespace) -> str:
    return getattr(args, "format", None) or getattr(args, "format_default", "table")


def wants_json(args: argparse.Namespace) -> bool:
    """Machine-readable output on stdout (errors then go there as a document too)."""
    return output_format(args) in ("json", "yaml")


def _selected(out: Output, columns: list[str] | None) -> tuple[tuple[str, ...], list[tuple]]:
    if not columns:
        return out.columns, list(out.rows)
    index = [out.columns.index(c) for c in columns]
    return tuple(columns), [tuple(r[i] for i in index) for r in out.rows]


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str) if isinstance(v, (dict, list)) \
        else tables.cell(v)


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)


def dump_yaml(obj: Any) -> str:
    import yaml  # openstacksdk's own dependency
    # through JSON: the same data as -f json (tuples, UUIDs, dates as there)
    return yaml.safe_dump(json.loads(dump_json(obj)), default_flow_style=False, sort_keys=True).rstrip("\n")


def render(out: Output, fmt: str, columns: list[str] | None = None) -> str:
    """The text of ``out`` in ``fmt`` (pure)."""
    heads, rows = _selected(out, columns)
    if fmt in ("json", "yaml"):
        if columns:  # the chosen columns of the table, as cliff prints them
            data = dict(zip(heads, rows[0])) if out.fields and rows else [dict(zip(heads, r)) for r in rows]
        else:
            data = out.document
        return dump_json(data) if fmt == "json" else dump_yaml(data)
    if fmt == "value":
        if out.fields:
            return "\n".join(_value(v) for v in (rows[0] if rows else ()))
        return "\n".join(" ".join(_value(v) for v in r) for r in rows)
    parts = list(out.head)
    if out.show_table or columns:
        if out.fields:
            parts.append(tables.table(("Field", "Value"), list(zip(heads, rows[0] if rows else [None] * len(heads)))))
        elif heads:
            parts.append(tables.table(heads, rows, align_right=out.align_right))
    if not columns:
        for s in out.sections:
            if s.title:
                parts.append(f"\n{s.title}")
            parts.append(tables.table(s.columns, s.rows, align_right=s.align_right))
        parts += out.tail
    return "\n".join(parts)


def emit(args: argparse.Namespace, out: Output, stream=None) -> None:
    text = render(out, output_format(args), getattr(args, "columns", None))
    if text:
        print(text, file=stream or sys.stdout)
