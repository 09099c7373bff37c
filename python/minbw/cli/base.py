"""What every command shares, on cliff as OpenStack's own clients are built: a command turns its options into the
use case's request, calls the one entry point, and turns the result into a :class:`View`.

Output, through cliff's formatters: ``-f json`` / ``-f yaml`` print the command's whole document (the result's
``to_dict()``); ``-f table`` the head lines, the table (rows, or Field/Value for one object) and the sections and
tail lines under it; ``-f value`` / ``-f csv`` and ``-c COLUMN`` the table alone. ``--sort-column``,
``--fit-width``, ``--max-width``, ``--noindent`` are cliff's. ``--json`` is ``-f json``.

Exit codes: 0 done; 1 an error (bad input found once the cloud was read, a refusal, the cloud failed: one line
``minbw: error: ...``, no traceback unless ``--debug``); 2 usage (argparse, before anything is read or written);
3 findings left (audit, drift, heal); 4 no valid host (claim, candidates, move, schedule).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from cliff import lister
from osc_lib.cli import format_columns

from minbw.errors import MinbwError, NoValidHost

DISTRIBUTION = "minbw"  # the distribution holding these commands (python/pyproject.toml's name)


def _top_package(obj: object) -> str:
    return type(obj).__module__.partition(".")[0]


EXIT_ERROR = 1        # an error: bad input, a refusal, an unreachable cloud, bad credentials
EXIT_USAGE = 2        # argparse: an unknown option or a bad value, found before anything is read
EXIT_FINDINGS = 3     # audit / drift / heal found something that is left (a CI gate); a sync skipped some units
EXIT_NO_VALID_HOST = 4  # claim, candidates, move, schedule: Placement has no host for the request (not an error)


@dataclass(frozen=True)
class Section:
    """A further table under the main one (``-f table`` only), e.g. a provider's inventories."""
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]


@dataclass(frozen=True)
class View:
    """What a command shows. ``one``: the table is one object (a Field/Value table; ``-c`` picks fields)
    rather than a list of rows. ``show_table`` False: ``-f table`` prints the head and tail lines only, unless
    ``-c`` asks for columns."""
    document: Any
    columns: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    one: bool = False
    head: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    show_table: bool = True
    exit_code: int = 0


def fields(document: dict, columns: tuple[str, ...], said: str, exit_code: int = 0) -> View:
    """A one-object result: the sentence in ``-f table``, its fields for ``-c`` / ``-f value``."""
    return View(document, columns, (tuple(document.get(c) for c in columns),), one=True, head=(said,),
                show_table=False, exit_code=exit_code)


class DictColumn(format_columns.DictColumn):
    """``VCPU=1, MEMORY_MB=256`` in a table (resources, inventories), the dict itself in JSON."""

    def human_readable(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._value.items())


def cell(value: Any) -> Any:
    """A table cell: dicts and lists as osc-lib's formattable columns (``a=1, b=2`` and ``x, y`` in a table, the
    value itself in JSON); everything else as it is."""
    if isinstance(value, dict):
        return DictColumn(value)
    if isinstance(value, (list, tuple)):
        return format_columns.ListColumn(value)
    return value


def _jsonable(document: Any) -> Any:
    return json.loads(json.dumps(document, default=str))


class Command(lister.Lister):
    """One command. Subclasses set ``columns``, add their options in :meth:`add_arguments` and build the
    :class:`View` in :meth:`view`."""

    auth_required = False   # minbw connects on first use, after its options are checked (usage errors: exit 2)
    columns: tuple[str, ...] = ()
    default_format = "table"
    _progress = None

    # ------------------------------------------------------------ parsing
    def get_epilog(self) -> str:
        """cliff's epilog without its look-up of which distribution holds the command: cliff reads the metadata of
        every installed distribution for it (half a second of CPU, the most of a command's start after its imports,
        spent on every run, not only on --help). Every command here is minbw's, so the plugin line appears exactly
        when cliff would write it: in another application's shell (``openstack bandwidth ...``)."""
        parts = [self._epilog or ""]
        parts += [e for h in self._hooks if h.obj is not None and (e := h.obj.get_epilog()) is not None]
        if _top_package(self.app) != _top_package(self):
            parts.append(f"This command is provided by the {DISTRIBUTION} plugin.")
        return "\n\n".join(parts)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        known = {lister.Lister._normalize_column_name(c): c for c in self.columns}

        def column(text: str) -> str:
            if lister.Lister._normalize_column_name(text) not in known:
                raise argparse.ArgumentTypeError(f"no column {text!r}; this command's columns: "
                                                 f"{', '.join(self.columns) or '(none)'}")
            return known[lister.Lister._normalize_column_name(text)]
        for action in parser._actions:
            if action.dest == "fit_width" and sys.stdout.isatty():
                action.default = True  # tables fit the terminal (cliff's --max-width/--fit-width still apply)
            if action.dest == "columns":
                action.type, action.metavar = column, "COLUMN"
                action.help = f"show this column (repeat for several): {', '.join(self.columns)}"
            elif action.dest == "formatter" and self.default_format != "table":
                action.default = self.default_format
                action.help = f"the output format (default {self.default_format})"
        self._formatter_group.add_argument("--json", dest="formatter", action="store_const", const="json",
                                           help="the same as -f json")
        self.add_arguments(parser)
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own options."""

    # ------------------------------------------------------------ running
    def view(self, parsed_args: argparse.Namespace) -> View:
        raise NotImplementedError

    def take_action(self, parsed_args: argparse.Namespace):
        view = self.view(parsed_args)
        return view.columns, view.rows

    def cloud(self, parsed_args: argparse.Namespace, *, service: bool = False, progress: bool = False):
        """The use cases' Cloud from the global ``--os-*`` options (connected on first use); ``service``: the
        ``--service-cloud`` user writes ports' bindings; ``progress``: a bar on stderr (a terminal)."""
        from minbw.cli import connection
        from minbw.cli.progress import Progress
        from minbw.usecases.cloud import Cloud
        if progress and self._progress is None:
            self._progress = Progress(sys.stderr, sys.stderr.isatty())
        service_cloud = getattr(parsed_args, "service_cloud", None) if service else None
        return Cloud(lambda: connection.connect(self.app),
                     service_connect=(lambda: connection.connect(self.app, service_cloud)) if service_cloud else None,
                     progress=self._progress, say=lambda line: print(f"minbw: {line}", file=sys.stderr),
                     placement_version=connection.placement_version(self.app))

    def run(self, parsed_args: argparse.Namespace) -> int:
        parsed_args = self._run_before_hooks(parsed_args)
        self.formatter = self._formatter_plugins[parsed_args.formatter].obj
        try:
            view = self.view(parsed_args)
        except Exception as e:  # noqa: BLE001 - ours and the cloud's failures are explained; others re-raise
            return self.fail(parsed_args, e)
        except KeyboardInterrupt:
            self._close_progress()
            print("minbw: interrupted", file=sys.stderr)
            return 130
        self._close_progress()
        self.emit(parsed_args, view)
        return view.exit_code

    def _close_progress(self) -> None:
        if self._progress is not None:
            self._progress.close()

    def failure_document(self, error: MinbwError) -> dict:
        """What ``-f json`` prints for a failure (a command may say more, e.g. ``claimed: false``)."""
        return {"error": error.to_dict()}

    def fail(self, parsed_args: argparse.Namespace, e: Exception) -> int:
        """An error as one line on stderr (and, with ``-f json``/``yaml``, a document on stdout)."""
        from minbw.cli import connection
        self._close_progress()
        error = connection.explain(self.app, e) or (e if isinstance(e, MinbwError) else None)
        if getattr(self.app.options, "debug", False):
            raise e  # --debug: cliff prints the traceback
        if error is None:  # not ours: one line with its type (--debug shows where)
            print(f"minbw: error: {type(e).__name__}: {e} (--debug shows the traceback)", file=sys.stderr)
            return EXIT_ERROR
        if parsed_args.formatter in ("json", "yaml"):
            self.formatter.emit_one(*_pairs(_jsonable(self.failure_document(error))), self.app.stdout, parsed_args)
        print(f"minbw: error: {error}", file=sys.stderr)
        return EXIT_NO_VALID_HOST if isinstance(error, NoValidHost) else EXIT_ERROR

    # ------------------------------------------------------------ output
    def emit(self, parsed_args: argparse.Namespace, view: View) -> None:
        fmt, out = parsed_args.formatter, self.app.stdout
        if fmt in ("json", "yaml") and not parsed_args.columns:
            document = _jsonable(view.document)
            if isinstance(document, dict):
                self.formatter.emit_one(*_pairs(document), out, parsed_args)
            else:
                keys = list(dict.fromkeys(k for item in document for k in item)) if document else []
                self.formatter.emit_list(keys, [[item.get(k) for k in keys] for item in document], out, parsed_args)
            return
        table = fmt == "table"
        if table:
            for line in view.head:
                out.write(line + "\n")
        if view.show_table or parsed_args.columns or not table:
            rows = [[cell(c) for c in row] for row in view.rows]
            if view.one and fmt in ("table", "value", "json", "yaml", "shell"):
                columns, selector = self._generate_columns_and_selector(parsed_args, view.columns)
                values = list(self._compress_iterable(rows[0], selector)) if selector else (rows[0] if rows else [])
                self.formatter.emit_one(columns, values, out, parsed_args)
            elif view.columns:
                super().produce_output(parsed_args, view.columns, rows)
        if table and not parsed_args.columns:
            for section in view.sections:
                if section.title:
                    out.write("\n" + section.title + "\n")
                self.formatter.emit_list(section.columns, [[cell(c) for c in r] for r in section.rows], out,
                                         parsed_args)
            for line in view.tail:
                out.write(line + "\n")


def _pairs(document: dict) -> tuple[list[str], list[Any]]:
    keys = list(document)
    return keys, [document[k] for k in keys]
