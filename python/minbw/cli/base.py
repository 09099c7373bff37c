"""What every command shares, on cliff as OpenStack's own clients are built: a command turns its options into the
use case's request, calls the one entry point, and turns the result into a :class:`View`.

Output, through cliff's formatters: ``-f json`` / ``-f yaml`` print the command's whole document (the result's
``to_dict()``); ``-f table`` the head lines, the table (rows, or Field/Value for one object) and the sections and
tail lines under it; ``-f value`` / ``-f csv`` and ``-c COLUMN`` the table alone. ``--sort-column``,
``--fit-width``, ``--max-width``, ``--noindent`` are cliff's. ``--json`` is ``-f json``.

Exit codes: 0 done; 1 an error (bad input found once the cloud was read, a refusal, the cloud failed, a check that
had nothing to compare - drift without ini files, agents reporting bandwidth or OVN chassis: one line
``minbw: error: ...``, no traceback unless ``--debug``); 2 usage (argparse, before anything is read or written);
3 findings left (audit, drift, heal); 4 no valid host (claim, candidates, move, schedule; host drain: a server with
no destination); 5 a claim written and not verified (claim, schedule: Placement accepted it, then the verification's
read failed; the consumer holds it: ``written_unverified`` and ``written`` in ``-f json``/``yaml``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from itertools import compress
from typing import Any

from cliff import command, lister
from osc_lib.cli import format_columns
from stevedore import extension

from minbw.errors import MinbwError, NoValidHost, WrittenUnverified

DISTRIBUTION = "minbw"  # the distribution holding these commands (python/pyproject.toml's name)


def _top_package(obj: object) -> str:
    return type(obj).__module__.partition(".")[0]


EXIT_ERROR = 1  # an error: bad input, a refusal, an unreachable cloud, bad credentials, nothing to compare
EXIT_USAGE = 2  # argparse: an unknown option or a bad value, found before anything is read
EXIT_FINDINGS = 3  # audit / drift / heal found something that is left (a CI gate); a sync skipped some units
EXIT_NO_VALID_HOST = 4  # claim, candidates, move, schedule: Placement has no host for the request (not an error)
EXIT_WRITTEN_UNVERIFIED = 5  # claim, schedule: the claim is written, its verification's read failed (WrittenUnverified)


@dataclass(frozen=True)
class Section:
    """A further table under the main one (``-f table`` only), e.g. a provider's inventories."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]


@dataclass(frozen=True)
class View:
    """What a command shows. ``document``: the whole result (``-f json``/``yaml``), or a function that makes it
    (a large one, made only when shown). ``one``: the table is one object (a Field/Value table; ``-c`` picks fields)
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
    return View(
        document,
        columns,
        (tuple(document.get(c) for c in columns),),
        one=True,
        head=(said,),
        show_table=False,
        exit_code=exit_code,
    )


class DictColumn(format_columns.DictColumn):
    """``VCPU=1, MEMORY_MB=256`` in a table (resources, inventories), the dict itself in JSON."""

    def human_readable(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.machine_readable().items())


def cell(value: Any) -> Any:
    """A table cell: dicts and lists as osc-lib's formattable columns (``a=1, b=2`` and ``x, y`` in a table, the
    value itself in JSON); everything else as it is."""
    if isinstance(value, dict):
        return DictColumn(value)
    if isinstance(value, (list, tuple)):
        return format_columns.ListColumn(value)  # type: ignore[arg-type]  # a tuple too, shown as a list
    return value


def _jsonable(document: Any) -> Any:
    return json.loads(json.dumps(document, default=str))


class Command(lister.Lister):
    """One command. Subclasses set ``columns``, add their options in :meth:`add_arguments` and build the
    :class:`View` in :meth:`view`.

    Only cliff's public API: :meth:`run` is cliff's (its command hooks, the chosen formatter as ``self.formatter``,
    :meth:`take_action`, :meth:`produce_output`) with the view's exit code; the output options are built here (cliff's
    parser gives no public handle on its ``-f``/``-c`` options) with the formatters registered under
    ``formatter_namespace``, each adding its own options."""

    auth_required = False  # minbw connects on first use, after its options are checked (usage errors: exit 2)
    columns: tuple[str, ...] = ()
    default_format = "table"
    _progress = None
    # cliff's chosen formatter (set by its run): a list formatter; json and yaml are single formatters too (emit_one)
    formatter: Any
    _shown: View | None = None  # take_action's view, for produce_output (None: a failure, already said)
    _exit_code = 0

    # ------------------------------------------------------------ parsing
    def get_epilog(self) -> str:
        """cliff's epilog without its look-up of which distribution holds the command: cliff reads the metadata of
        every installed distribution for it (half a second of CPU, the most of a command's start after its imports,
        spent on every run, not only on --help). Every command here is minbw's, so the plugin line appears exactly
        when cliff would write it: in another application's shell (``openstack bandwidth ...``). The command hooks'
        epilogs come from the hooks cliff documents: entry points of the application's command namespace and the
        command's name."""
        parts = [""]
        if self.cmd_name:
            hooks: extension.ExtensionManager[Any] = extension.ExtensionManager(
                namespace=f"{self.app.command_manager.namespace}.{self.cmd_name.replace(' ', '_')}",
                invoke_on_load=True,
                invoke_kwds={"command": self},
            )
            parts += [e for h in hooks if h.obj is not None and (e := h.obj.get_epilog()) is not None]
        if _top_package(self.app) != _top_package(self):
            parts.append(f"This command is provided by the {DISTRIBUTION} plugin.")
        return "\n\n".join(parts)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        """cliff's command parser (description, epilog, the command hooks' options) with the output options of a
        cliff Lister, in its order and words, but ``-c`` checked against :attr:`columns`, ``-f`` defaulting to
        :attr:`default_format` and ``--json``."""
        parser = command.Command.get_parser(self, prog_name)
        formatters: extension.ExtensionManager[Any] = extension.ExtensionManager(
            self.formatter_namespace, invoke_on_load=True
        )
        names = sorted(formatters.names())
        group = parser.add_argument_group(title="output formatters", description="output formatter options")
        group.add_argument(
            "-f",
            "--format",
            dest="formatter",
            action="store",
            choices=names,
            default=self.default_format,
            help="the output format, defaults to table"
            if self.default_format == "table"
            else f"the output format (default {self.default_format})",
        )
        known = {column_key(c): c for c in self.columns}

        def column(text: str) -> str:
            if column_key(text) not in known:
                raise argparse.ArgumentTypeError(
                    f"no column {text!r}; this command's columns: {', '.join(self.columns) or '(none)'}"
                )
            return known[column_key(text)]

        group.add_argument(
            "-c",
            "--column",
            action="append",
            default=[],
            dest="columns",
            metavar="COLUMN",
            type=column,
            help=f"show this column (repeat for several): {', '.join(self.columns)}",
        )
        for formatter in formatters:
            formatter.obj.add_argument_group(parser)  # type: ignore[union-attr]  # invoke_on_load: loaded
        group.add_argument(
            "--sort-column",
            action="append",
            default=[],
            dest="sort_columns",
            metavar="SORT_COLUMN",
            help="specify the column(s) to sort the data (columns specified first have a priority, "
            "non-existing columns are ignored), column names are case-insensitive and accept "
            "underscores for spaces, can be repeated",
        )
        direction = group.add_mutually_exclusive_group()
        direction.add_argument(
            "--sort-ascending",
            action="store_const",
            dest="sort_direction",
            const="asc",
            help="sort the column(s) in ascending order",
        )
        direction.add_argument(
            "--sort-descending",
            action="store_const",
            dest="sort_direction",
            const="desc",
            help="sort the column(s) in descending order",
        )
        group.add_argument("--json", dest="formatter", action="store_const", const="json", help="the same as -f json")
        if sys.stdout.isatty():
            parser.set_defaults(fit_width=True)  # tables fit the terminal (--max-width/--fit-width still apply)
        self.add_arguments(parser)
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own options."""

    # ------------------------------------------------------------ running
    def view(self, parsed_args: argparse.Namespace) -> View:
        raise NotImplementedError

    def cloud(self, parsed_args: argparse.Namespace, *, service: bool = False, progress: bool = False):
        """The use cases' Cloud from the global ``--os-*`` options (connected on first use); ``service``: the
        ``--service-cloud`` user writes ports' bindings; ``progress``: a bar on stderr (a terminal)."""
        from minbw.cli import connection
        from minbw.cli.progress import Progress
        from minbw.usecases.cloud import Cloud

        if progress and self._progress is None:
            self._progress = Progress(sys.stderr, sys.stderr.isatty())
        service_cloud = getattr(parsed_args, "service_cloud", None) if service else None
        regions: dict[str | None, Any] = {}  # one cloud region per cloud: its connections share its session

        def region(cloud: str | None = None):
            if cloud not in regions:
                regions[cloud] = connection.region(self.app, cloud)
            return regions[cloud]

        return Cloud(
            lambda: connection.connect(self.app, of=region()),
            region=region,
            service_connect=(lambda: connection.connect(self.app, of=region(service_cloud))) if service_cloud else None,
            progress=self._progress,
            say=lambda line: print(f"minbw: {line}", file=sys.stderr),
            placement_version=connection.placement_version(self.app),
        )

    def run(self, parsed_args: argparse.Namespace) -> int:
        """cliff's run (hooks, formatter, :meth:`take_action`, :meth:`produce_output`); the exit code is the view's
        or the failure's."""
        self._shown, self._exit_code = None, 0
        load = getattr(self.app, "load_lazy_modules", None)  # the minbw shell's (minbw.cli.shell), before any thread
        if load is not None:
            load()
        http_log_as_shown()
        super().run(parsed_args)
        return self._exit_code

    def take_action(self, parsed_args: argparse.Namespace):
        """The view's table for cliff (columns, rows); a failure is said here and shows nothing more."""
        try:
            view = self.view(parsed_args)
        except Exception as e:  # noqa: BLE001 - ours and the cloud's failures are explained; others re-raise
            self._exit_code = self.fail(parsed_args, e)
            return (), ()
        except KeyboardInterrupt:
            self._close_progress()
            print("minbw: interrupted", file=sys.stderr)
            self._exit_code = 130
            return (), ()
        self._close_progress()
        self._shown, self._exit_code = view, view.exit_code
        return view.columns, view.rows

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
        return exit_code_of(error)

    # ------------------------------------------------------------ output
    def produce_output(self, parsed_args: argparse.Namespace, column_names, data) -> int:
        """The view through ``self.formatter``: the document (``-f json``/``yaml`` without ``-c``), or the head
        lines, the table (cliff's Lister output, or one object's fields) and, in a table, the sections and tail."""
        view = self._shown
        if view is None:
            return 0
        fmt, out = parsed_args.formatter, self.app.stdout
        if fmt in ("json", "yaml") and not parsed_args.columns:
            document = _jsonable(view.document() if callable(view.document) else view.document)
            if isinstance(document, dict):
                self.formatter.emit_one(*_pairs(document), out, parsed_args)
            else:
                keys = list(dict.fromkeys(k for item in document for k in item)) if document else []
                self.formatter.emit_list(keys, [[item.get(k) for k in keys] for item in document], out, parsed_args)
            return 0
        table = fmt == "table"
        if table:
            for line in view.head:
                out.write(line + "\n")
        if view.show_table or parsed_args.columns or not table:
            rows = [[cell(c) for c in row] for row in data]
            if view.one and fmt in ("table", "value", "json", "yaml", "shell"):
                columns, picked = _select(parsed_args.columns, column_names)
                values = list(compress(rows[0], picked)) if picked else (rows[0] if rows else [])
                self.formatter.emit_one(columns, values, out, parsed_args)
            elif column_names:
                super().produce_output(parsed_args, column_names, rows)
        if table and not parsed_args.columns:
            for section in view.sections:
                if section.title:
                    out.write("\n" + section.title + "\n")
                self.formatter.emit_list(
                    section.columns, [[cell(c) for c in r] for r in section.rows], out, parsed_args
                )
            for line in view.tail:
                out.write(line + "\n")
        return 0


def exit_code_of(error: MinbwError) -> int:
    """A failure's exit code: 4 no valid host, 5 a claim written and not verified, else 1."""
    if isinstance(error, NoValidHost):
        return EXIT_NO_VALID_HOST
    if isinstance(error, WrittenUnverified):
        return EXIT_WRITTEN_UNVERIFIED
    return EXIT_ERROR


def http_log_as_shown() -> None:
    """keystoneauth's log of each request and answer (the whole body: 30 MB for a listing of 70,000 providers) made
    only when a handler shows it. osc-lib sets the root logger to DEBUG and filters in its handlers (WARNING
    without ``-v``/``--debug``), so keystoneauth, which asks its logger, would format every body for nothing."""
    handlers = logging.getLogger("").handlers
    shown = min((h.level for h in handlers), default=logging.WARNING)
    logging.getLogger("keystoneauth").setLevel(max(shown, logging.DEBUG))


def column_key(name: str) -> str:
    """A column name as ``-c`` and ``--sort-column`` match it (cliff's rule: case, spaces as underscores)."""
    return name.lower().strip().replace(" ", "_")


def _select(wanted: list[str], columns) -> tuple[list[str], list[bool] | None]:
    """The ``-c`` columns of one object in the object's order, and which of its values they are (None: all), as
    cliff picks them."""
    if not wanted:
        return list(columns), None
    keys = {column_key(c) for c in wanted}
    picked = [column_key(c) in keys for c in columns]
    if not any(picked):
        raise ValueError(f"No recognized column names in {str(wanted)}. Recognized columns are {str(columns)}.")
    return list(compress(columns, picked)), picked


def _pairs(document: dict) -> tuple[list[str], list[Any]]:
    keys = list(document)
    return keys, [document[k] for k in keys]
