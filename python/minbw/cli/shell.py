"""The standalone ``minbw`` shell: a cliff application over the same command classes that ``openstack bandwidth
...`` runs (as python-ironicclient ships ``baremetal`` beside ``openstack baremetal``), with osc-lib's global
``--os-*`` options, ``--debug``, ``help`` and ``complete``."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from cliff import commandmanager


class _LazyFinder:
    """Finds one module with the finders after it on ``sys.meta_path`` and has importlib's LazyLoader load it: the
    import binds it as usual, its code runs on first use."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else finder.find_spec(fullname, path, target)
            if spec is not None:
                if hasattr(spec.loader, "exec_module"):  # else: loaded now, as without this finder
                    spec.loader = importlib.util.LazyLoader(spec.loader)
                return spec
        return None


# osc-lib imports cliff's interactive mode (and with it cmd2, rich, pygments: a fifth of a command's start) for a
# type annotation; it runs only for `minbw` without a command, which then imports it. Only this import is lazy.
_lazy = _LazyFinder("cliff.interactive")
sys.meta_path.insert(0, _lazy)
try:
    from osc_lib import shell as osc_shell
finally:
    sys.meta_path.remove(_lazy)

from openstack import exceptions as sdk_exceptions  # noqa: E402
from osc_lib.api import auth  # noqa: E402

from minbw import __version__  # noqa: E402
from minbw.usecases.inputs import microversion  # noqa: E402

# The commands: `openstack bandwidth X` (this entry-point group, python/pyproject.toml) is `minbw X`.
COMMANDS = "openstack.bandwidth.v1"
PREFIX = "bandwidth "
# Services whose endpoint the cloud's catalog may lack or a user may point elsewhere (openstacksdk's
# <service>_endpoint_override, as in clouds.yaml).
ENDPOINT_OVERRIDES = ("placement", "compute", "network")


def _microversion(text: str) -> str:
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

    def initialize_app(self, argv):
        """osc-lib's, but the cloud is looked up when a command first needs it (minbw's commands connect on first
        use): an unknown cloud must not hide a usage error, nor stop the commands that need no cloud."""
        try:
            super().initialize_app(argv)
        except sdk_exceptions.ConfigException:
            self.client_manager = None  # the command that needs the cloud says what is wrong with it
            self.print_help_if_requested()  # (osc-lib's plugin and command loading steps do nothing in a shell)

    def prepare_to_run_command(self, cmd):
        """Nothing to prepare: every minbw command connects when it first needs the cloud."""

    def clean_up(self, cmd, result, err):
        if self.client_manager is not None:
            super().clean_up(cmd, result, err)


def main(argv: list[str] | None = None) -> int:
    return MinbwShell().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
