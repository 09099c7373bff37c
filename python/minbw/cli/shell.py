"""The standalone ``minbw`` shell: a cliff application over the same command classes that ``openstack bandwidth
...`` runs (as python-ironicclient ships ``baremetal`` beside ``openstack baremetal``), with osc-lib's global
``--os-*`` options, ``--debug``, ``help`` and ``complete``."""

from __future__ import annotations

import argparse
import atexit
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import os
import sys
import threading
import types

# registered before the imports below (logging's and others' handlers run before it: exit handlers run last first)
atexit.register(lambda: _end_without_finalization())

import autopage.argparse  # noqa: E402
from cliff import commandmanager, help  # noqa: E402


class _LazyFinder:
    """Finds the named modules with the finders after it on ``sys.meta_path`` and has importlib's LazyLoader load
    them: the import binds the module as usual, its code runs on first use of one of its attributes."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.names:
            return None
        spec = _spec_after(self, fullname, path, target)
        if spec is not None and hasattr(spec.loader, "exec_module"):  # else: loaded now, as without this finder
            spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


class _PackageFirst:
    """Finds one package with the finders after it on ``sys.meta_path`` and loads it without running its
    ``__init__``: its submodules import as usual (``from openstack import resource``), and the first attribute that
    is not a submodule (``openstack.connect``) runs the ``__init__`` (:func:`_run_init_on_first_use`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = _spec_after(self, fullname, path, target)
        if spec is None or spec.submodule_search_locations is None or not hasattr(spec.loader, "exec_module"):
            return spec  # not a package of source or bytecode: loaded now, as without this finder
        spec.loader = _InitOnFirstUse(spec.loader)
        return spec


class _StandInFirst:
    """Finds one module with the finders after it on ``sys.meta_path`` and loads it as a stand-in (a subclass of
    :class:`_RunsOnFirstUse`) without running its code."""

    def __init__(self, name: str, stand_in: type[_RunsOnFirstUse]) -> None:
        self.name, self.stand_in = name, stand_in

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = _spec_after(self, fullname, path, target)
        if spec is not None and hasattr(spec.loader, "exec_module"):  # else: loaded now, as without this finder
            spec.loader = _StandInLoader(spec.loader, self.stand_in)
        return spec


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, loader, stand_in: type[_RunsOnFirstUse]) -> None:
        self.loader, self.stand_in = loader, stand_in

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__class__ = self.stand_in
        module.__dict__["_minbw_loader"] = self.loader


class _RunsOnFirstUse(types.ModuleType):
    """A module before its code ran: a subclass answers one use without it; any other attribute runs the module's code
    (:meth:`run`) and answers from it. Its type is the module type once its code ran, as importlib's LazyLoader does."""

    _lock = threading.RLock()

    def __getattr__(self, name: str):
        return getattr(self.run(), name)

    def run(self) -> types.ModuleType:
        """The module, its code run (once)."""
        with self._lock:
            if isinstance(self, _RunsOnFirstUse):
                loader = self.__dict__.pop("_minbw_loader")
                self.__class__ = types.ModuleType  # type: ignore[assignment]
                self.__spec__.loader = self.__loader__ = loader  # type: ignore[union-attr]
                loader.exec_module(self)
        return self


class _TraceHeadersOnceProfiled(_RunsOnFirstUse):
    """osprofiler's web module before its code ran (with it osprofiler's notifier and its drivers, oslo.config and
    webob): its ``get_trace_id_headers`` (keystoneauth's one use of it, for each request) is ``{}`` while osprofiler's
    profiler module never ran, as no profiler can be started without it (osc-lib starts one for ``--os-profile``, and
    osprofiler's own answer is ``{}`` without one); then, and for any other attribute, the module's code runs."""

    def get_trace_id_headers(self) -> dict:
        profiler = sys.modules.get("osprofiler.profiler")
        if profiler is None or type(profiler) is not types.ModuleType:  # absent, or lazy and never ran
            return {}
        return self.run().get_trace_id_headers()


class _MaskedWhenFormatted(_RunsOnFirstUse):
    """oslo.utils' strutils before its code ran (425 regular expressions compiled): its ``mask_password`` answers a
    :class:`_Masked`, the text masked by strutils' own function when it is formatted. osc-lib's shell and cloud config
    pass ``mask_password(...)`` to their log lines (``%s``) whether or not they are logged: a line that is logged (e.g.
    ``--debug``) runs the module and masks, one that is not costs nothing. Any other attribute runs the module."""

    def mask_password(self, message, secret: str = "***") -> _Masked:  # noqa: S107 - strutils' default mask
        return _Masked(self, message, secret)


class _Masked:
    """``strutils.mask_password(message, secret)`` once formatted (``str``, ``%s``, ``format``), computed then."""

    def __init__(self, strutils: types.ModuleType, message, secret: str) -> None:
        self._args = (strutils, message, secret)

    def __str__(self) -> str:
        strutils, message, secret = self._args
        if isinstance(strutils, _RunsOnFirstUse):  # its code never ran: runs now (its first use)
            strutils = strutils.run()
        return strutils.mask_password(message, secret)

    def __repr__(self) -> str:
        return repr(str(self))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class _WidthsFromTheExtension(_RunsOnFirstUse):
    """wcwidth's package before its ``__init__`` ran (it imports every Python table of wcwidth, its line breaking and
    text wrapping, though its C extension answers): the four functions cliff's table formatter asks of it for each
    cell, ``width``, ``ljust``, ``rjust`` and ``center``, are its C extension's, as wcwidth's ``__init__`` binds them
    (:data:`WCWIDTH_C_NAMES`: the extension loads, has them all, and ``WCWIDTH_PYTHON`` is unset); else, and for any
    other attribute (e.g. ``wrap``, a cell wider than the terminal), the package's code runs and answers."""

    def width(self, *args, **kwargs):
        return self._answer("width")(*args, **kwargs)

    def ljust(self, *args, **kwargs):
        return self._answer("ljust")(*args, **kwargs)

    def rjust(self, *args, **kwargs):
        return self._answer("rjust")(*args, **kwargs)

    def center(self, *args, **kwargs):
        return self._answer("center")(*args, **kwargs)

    def _answer(self, name: str):
        extension = _wcwidth_extension(self.__name__)
        return getattr(extension if extension is not None else self.run(), name)


# what wcwidth's __init__ (0.9) requires of its C extension to bind its functions to it (HAS_C_EXTENSION)
WCWIDTH_C_NAMES = (
    "ljust",
    "rjust",
    "width",
    "center",
    "wcwidth",
    "wcswidth",
    "wcstwidth",
    "propagate_sgr",
    "iter_graphemes",
    "strip_sequences",
    "iter_graphemes_reverse",
    "grapheme_boundary_before",
)


def _wcwidth_extension(package: str) -> types.ModuleType | None:
    """wcwidth's C extension when wcwidth's ``__init__`` would use it (None: its Python functions)."""
    if os.environ.get("WCWIDTH_PYTHON", ""):
        return None
    try:
        extension = importlib.import_module(f"{package}._wcwidth_c")
    except ImportError:
        return None
    return extension if all(hasattr(extension, name) for name in WCWIDTH_C_NAMES) else None


def _spec_after(finder, fullname, path, target):
    """The spec the finders after ``finder`` on ``sys.meta_path`` find (None: none)."""
    for other in sys.meta_path:
        spec = None if other is finder else other.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


class _InitOnFirstUse(importlib.abc.Loader):
    """:class:`_PackageFirst`'s loader: the package module with its ``__path__`` and a module ``__getattr__``
    (PEP 562) that imports a submodule of the name asked, or else runs the package's ``__init__`` with its own loader
    and answers from it."""

    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        _run_init_on_first_use(module, self.loader)


def _run_init_on_first_use(module, loader) -> None:
    lock = threading.RLock()  # a submodule imported here may import another

    def __getattr__(name: str):
        with lock:
            if module.__dict__.get("__getattr__") is not __getattr__:  # another thread ran the __init__
                return getattr(module, name)
            if not name.startswith("__") and importlib.util.find_spec(f"{module.__name__}.{name}") is not None:
                return importlib.import_module(f"{module.__name__}.{name}")
            del module.__getattr__
            module.__spec__.loader = module.__loader__ = loader
            loader.exec_module(module)
        return getattr(module, name)

    module.__getattr__ = __getattr__


# What `--help` and a command's start need of osc-lib's shell is its classes: osc-lib imports at its top what only a
# command's run uses. Only these imports change, and only while osc-lib's shell is imported:
# - openstacksdk: osc-lib's modules import its submodules (openstack.resource, openstack.config, openstack.connection),
#   and the package's __init__ imports openstack.connection, which imports every service's proxy and resources (two
#   fifths of `--help`'s start). The package loads without running its __init__ until an attribute that is not a
#   submodule is asked, and openstack.connection is lazy: the first command that makes a Connection loads it all (one
#   that talks to Placement only makes none: minbw.placement.connection).
# - cliff's interactive mode (and with it cmd2, rich, pygments) imported for a type annotation: it runs only for
#   `minbw` without a command, which then imports it.
# - oslo.utils' strutils (425 regular expressions compiled at import) for the log lines of osc-lib's
#   initialize_app and cloud config, which mask passwords in their arguments whether or not the line is logged: its
#   mask_password masks when the line is formatted (_MaskedWhenFormatted), its other functions run its code.
# - what osc-lib's shell, keystoneauth's session and openstacksdk's cloud region import when installed, for
#   `--os-profile` and a request's trace headers (osprofiler: with it webob and oslo.config) and for metrics of API
#   calls (prometheus_client): `--os-profile` or the first request loads them; `--help` sends none. A request asks
#   osprofiler's web module for trace headers, which there are none of without --os-profile: _TraceHeadersOnceProfiled.
# - wcwidth (cliff's table formatter imports it to render a table: its __init__ imports all its Python tables, 0.02
#   CPU s), bound here: a table's widths come from its C extension, as its __init__ binds them
#   (_WidthsFromTheExtension).
# - what keystoneauth's session and openstacksdk's cloud region import when installed and use only for an object that
#   is not JSON (netaddr's addresses, in the session's JSON encoder: minbw's bodies are JSON's own types) or when a
#   statsd host is configured (statsd, when a Connection is made): loaded by that first use.
# - what openstacksdk's resource and proxy modules import for a resource committed as a JSON patch (jsonpatch: Ironic's
#   and Glance's, not Neutron's nor Nova's) and for a listing filtered by a JMESPath expression (jmespath, deprecated):
#   minbw does neither.
_deferred = (
    _PackageFirst("openstack"),
    _StandInFirst("osprofiler.web", _TraceHeadersOnceProfiled),
    _StandInFirst("oslo_utils.strutils", _MaskedWhenFormatted),
    _StandInFirst("wcwidth", _WidthsFromTheExtension),
    _LazyFinder(
        "openstack.connection",
        "cliff.interactive",
        "osprofiler.profiler",
        "prometheus_client",
        "netaddr",
        "statsd",
        "jmespath",
        "jsonpatch",
    ),
)
# What a command's threads may use first (a request's trace headers, when it is profiled): loaded in the main thread
# before a command runs (MinbwShell.load_lazy_modules), as importlib's LazyLoader is not thread-safe before Python
# 3.12.3. openstack.connection is loaded by the one thread that makes the use case's Connection (Cloud.conn holds a
# lock, minbw.usecases.cloud).
LOADED_BEFORE_A_COMMAND = ("osprofiler.web",)
sys.meta_path[:0] = _deferred
try:
    from osc_lib import shell as osc_shell

    import wcwidth  # noqa: F401 - bound now (cliff's table formatter imports it where it renders): its code not run
finally:
    for _finder in _deferred:
        sys.meta_path.remove(_finder)

from openstack import exceptions as sdk_exceptions  # noqa: E402
from osc_lib.api import auth  # noqa: E402

from minbw import __version__  # noqa: E402

# The commands: `openstack bandwidth X` (this entry-point group, python/pyproject.toml) is `minbw X`.
COMMANDS = "openstack.bandwidth.v1"
PREFIX = "bandwidth "
# Services whose endpoint the cloud's catalog may lack or a user may point elsewhere (openstacksdk's
# <service>_endpoint_override, as in clouds.yaml).
ENDPOINT_OVERRIDES = ("placement", "compute", "network")


def _microversion(text: str) -> str:
    # imported here: the use cases' input parsers (with them the QoS port grammar's classes) are not needed to start
    from minbw.usecases.inputs import microversion

    try:
        return microversion(text)
    except ValueError:
        if text.isdigit():
            return text  # a major version alone: negotiate (osc-placement's "1")
        raise argparse.ArgumentTypeError(f"expected a microversion MAJOR.MINOR, e.g. 1.39, got {text!r}") from None


class CommandManager(commandmanager.CommandManager):
    """The group's commands without their ``bandwidth`` prefix, as python-ironicclient's ``baremetal`` shell
    drops ``baremetal`` from ``openstack baremetal``'s."""

    def load_commands(self, namespace):
        super().load_commands(namespace)
        self.commands = {name.removeprefix(PREFIX): ep for name, ep in self.commands.items()}


def _holds(distribution: str, top_package: str) -> bool:
    """Whether the installed distribution's files hold the top-level package (False: no such distribution)."""
    try:
        return any(f.parts[0] == top_package for f in importlib.metadata.distribution(distribution).files or ())
    except importlib.metadata.PackageNotFoundError:
        return False


def _distribution(top_package: str) -> str | None:
    """The distribution that holds a top-level package: the distribution of its name when it holds it (one file list
    read: cliff's commands ``help`` and ``complete``), else the one importlib's search of every installed
    distribution's files finds (cliff's way)."""
    if _holds(top_package, top_package):
        return top_package
    return next(iter(importlib.metadata.packages_distributions().get(top_package, ())), None)


class MinbwHelpAction(help.HelpAction):
    """cliff's ``--help`` (the global options, then each command with its one line and, for a command of another
    distribution than the shell's, that distribution), less cliff's search of every installed distribution's files
    (``importlib.metadata.packages_distributions()``, most of ``minbw --help``'s time in a virtualenv of OpenStack's
    size) for the commands of the shell's own package, which are all but cliff's ``help`` and ``complete``."""

    def __call__(self, parser, namespace, values, option_string=None):
        app = self.default
        app_package = type(app).__module__.partition(".")[0]
        pager = autopage.argparse.help_pager(app.stdout)
        color = pager.to_terminal()
        autopage.argparse.use_color_for_parser(parser, color)
        with pager as out:
            parser.print_help(out)
            title_hl = ("\033[4m", "\033[0m") if color else ("", "")
            out.write("\n{}Commands{}:\n".format(*title_hl))
            for name, ep in sorted(app.command_manager):
                try:
                    factory = ep.load()
                    cmd = factory(app, None, cmd_name=name)
                except Exception as err:  # as cliff's: one line for a command that cannot load, the others listed
                    out.write(f"Could not load {ep!r}: {err}\n")
                    continue
                if cmd.deprecated:
                    continue
                one_liner = cmd.get_description().split("\n")[0].rstrip(".")
                package = factory.__module__.partition(".")[0]
                dist = _distribution(package) if package != app_package else None  # None: the shell's
                dist_info = ""
                if dist and not _holds(dist, app_package):
                    dist_info = f"\033[90m ({dist})\033[39m" if color else f" ({dist})"
                padded_name = f"\033[36m{name:<13}\033[39m" if color else f"{name:<13}"
                out.write(f"  {padded_name}  {one_liner}{dist_info}\n")
        raise help.HelpExit()


class MinbwShell(osc_shell.OpenStackShell):
    NAME = "minbw"  # in usage lines and completion, however it was started (minbw, python -m minbw.cli)

    def __init__(self, stdout=None, stderr=None):
        super().__init__(
            description="Guaranteed minimum bandwidth for OpenStack, end to end.",
            version=__version__,
            command_manager=CommandManager(COMMANDS),
            deferred_help=True,
            stdout=stdout,
            stderr=stderr,
        )

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version, argparse_kwargs)
        parser = auth.build_auth_plugins_option_parser(parser)
        parser.add_argument(
            "--os-placement-api-version",
            metavar="MICROVERSION",
            type=_microversion,
            default=osc_shell.utils.env("OS_PLACEMENT_API_VERSION") or None,
            help="the highest Placement microversion to use (Env: OS_PLACEMENT_API_VERSION); a "
            "call that needs more is refused, naming it (default: each call's own)",
        )
        for service in ENDPOINT_OVERRIDES:
            parser.add_argument(
                f"--os-{service}-endpoint-override",
                metavar="URL",
                dest=f"{service}_endpoint_override",
                default=osc_shell.utils.env(f"OS_{service.upper()}_ENDPOINT_OVERRIDE") or None,
                help=f"the {service} endpoint to use instead of the catalog's "
                f"(Env: OS_{service.upper()}_ENDPOINT_OVERRIDE)",
            )
        return parser

    def print_help_if_requested(self):
        """cliff's, with :class:`MinbwHelpAction`."""
        if self.deferred_help and self.options.deferred_help:
            MinbwHelpAction([], argparse.SUPPRESS, default=self)(self.parser, self.options, None, None)

    def initialize_app(self, argv):
        """osc-lib's, but ``--help`` is printed before the cloud is looked up, and the cloud is looked up when a command
        first needs it (minbw's commands connect on first use): an unknown cloud must not hide a usage error, nor stop
        the commands that need no cloud."""
        if argv == ["help"]:  # cliff's help command without a command: --help's text, printed as --help is
            self.options.deferred_help = True
        self.print_help_if_requested()  # `minbw --help`: the commands and the global options, no cloud read
        try:
            super().initialize_app(argv)
        except sdk_exceptions.ConfigException:
            self.client_manager = None  # the command that needs the cloud says what is wrong with it
            self.print_help_if_requested()  # (osc-lib's plugin and command loading steps do nothing in a shell)

    def load_lazy_modules(self) -> None:
        """Runs the code of :data:`LOADED_BEFORE_A_COMMAND` (Command.run calls it before a command's work) when the
        command is profiled (``--os-profile``); without it osprofiler's web module answers keystoneauth that there is
        no trace to send (:class:`_TraceHeadersOnceProfiled`) without running its code."""
        if not getattr(self.options, "profile", None):
            return
        for name in LOADED_BEFORE_A_COMMAND:
            module = sys.modules.get(name)
            if isinstance(module, _RunsOnFirstUse):
                module.run()
            elif module is not None:
                vars(module)  # any attribute of a lazy module runs its code

    def prepare_to_run_command(self, cmd):
        """Nothing to prepare: every minbw command connects when it first needs the cloud."""

    def clean_up(self, cmd, result, err):
        if self.client_manager is not None:
            super().clean_up(cmd, result, err)


def main(argv: list[str] | None = None) -> int:
    """The shell on ``argv``, its exit code; without ``argv``, on the process's command line (``minbw``, ``python -m
    minbw.cli``), after which the process ends without Python's finalization (:func:`_end_without_finalization`)."""
    try:
        code = MinbwShell().run(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:  # --help (cliff's help exit) and argparse's usage errors
        if argv is None:  # Python's exit status for it: None 0, a number itself, a message (printed) 1
            _ENDING.append(0 if e.code is None else e.code if isinstance(e.code, int) else 1)
        raise
    if argv is None:
        _ENDING.append(code)
    return code


_ENDING: list[int] = []  # the exit code of the process's command, once it is done


def _end_without_finalization() -> None:
    """The last exit handler of a process whose command is done (:func:`main` without ``argv``): Python's exit has
    waited for its other threads and run the exit handlers registered after this module's import (logging's flush,
    weakref finalizers, the files they close; those of modules imported before it run after it: none, from the
    console script); the output flushed, the process ends with the command's exit code, without Python's finalization
    that frees each of the half a million objects of the 500 modules a command imports (0.06-0.12 CPU s, a fifth of
    ``usage show``'s process). When the output cannot be flushed, Python's finalization says why, as without this."""
    if not _ENDING:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream
        return
    os._exit(_ENDING[-1])


if __name__ == "__main__":
    sys.exit(main())
