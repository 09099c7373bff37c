"""``exporter``: guaranteed bandwidth as Prometheus metrics."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from minbw.cli.base import Command
from minbw.cli.options import (
    add_agent_config_argument,
    add_agent_host_argument,
    add_ovn_arguments,
    add_owner_nova_argument,
    count,
    seconds,
    tcp_port,
)
from minbw.errors import InvalidInput


def _port_size(text: str):
    from minbw.usecases.exporter import PortSize

    try:
        return PortSize.parse(text)
    except InvalidInput as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--port-size: ")) from None


class Exporter(Command):
    """Serve Prometheus metrics of the bandwidth providers (total, reserved, used, ratio), the headroom in ports
    of the sizes given, the audit's and the drift's findings (ML2/OVN: with the chassis options, as drift show takes
    them), the last sync, and each scrape's cost (docs/exporter.md); over HTTPS (--tls-cert-file) and with basic
    authentication (the config's basic_auth_users) when configured. A collection every --interval seconds reads
    every bandwidth provider's usage (the traits and inventories of those whose generation moved); the slow
    reports run every --slow-interval seconds; a scrape is served from the last collection and never waits. --once
    prints one collection and exits.
    With --enforcement-host, a host's exporter: that compute's enforcement checks instead (docs/enforcement.md)."""

    def add_arguments(self, parser):
        parser.add_argument(
            "--port-size",
            action="append",
            type=_port_size,
            metavar="NAME=RULES",
            help="a port size to count headroom for, NAME=RULES[,vnic=TYPE][,physnet=NAME], e.g. "
            "small=min_bw:egress:1000,min_bw:ingress:1000; repeat",
        )
        parser.add_argument(
            "--config",
            metavar="FILE",
            help="the exporter's YAML config (docs/exporter.md); options given here win over it",
        )
        parser.add_argument("--listen-address", metavar="ADDRESS", help="default 127.0.0.1")
        parser.add_argument("--listen-port", type=tcp_port, metavar="PORT", help="default 9817")
        parser.add_argument(
            "--interval",
            type=seconds,
            metavar="SECONDS",
            help="seconds between collections: every bandwidth provider's usage read, the headroom "
            "counted (default 90); scrapes are served from the last one",
        )
        parser.add_argument(
            "--slow-interval",
            type=seconds,
            metavar="SECONDS",
            help="seconds between runs of the audit, the drift and the provider cache's safety check (default 300)",
        )
        add_agent_config_argument(
            parser, "an OVS or SR-IOV agent ini file the drift compares with Placement", default=None
        )
        add_agent_host_argument(parser)
        parser.add_argument(
            "--no-neutron",
            dest="neutron",
            action="store_const",
            const=False,
            help="the drift does not read the agents from Neutron",
        )
        add_ovn_arguments(
            parser,
            southbound_help="the drift's agent side for ML2/OVN: every chassis of the OVN "
            "southbound database (what Neutron's OVN placement extension reads), read with ovn-sbctl "
            "(DB: its --db; leave out for ovn-sbctl's default or OVN_SB_DB). --ovn-chassis/--ovs-db give "
            "the chassis options as the computes hold them (the ini side)",
        )
        tls = parser.add_argument_group("the endpoint's TLS (basic authentication: basic_auth_users in --config)")
        tls.add_argument("--tls-cert-file", metavar="FILE", help="serve HTTPS with this PEM certificate (chain)")
        tls.add_argument("--tls-key-file", metavar="FILE", help="its PEM private key")
        cache = parser.add_mutually_exclusive_group()
        cache.add_argument("--cache", metavar="FILE", help="the provider cache (default: the sync's, per endpoint)")
        cache.add_argument(
            "--no-cache",
            action="store_true",
            help="read every bandwidth provider's traits and inventories on every collection",
        )
        parser.add_argument("--workers", type=count, metavar="N", help="providers read at once (default 8)")
        add_owner_nova_argument(parser)
        parser.add_argument(
            "--enforcement-host",
            metavar="HOST",
            help="a host's exporter, run on that compute: serve its enforcement checks (minbw "
            "enforcement show --host HOST; the other options of the check from --config's "
            "enforcement) every --interval seconds (default 300), and nothing of the cloud's",
        )
        parser.add_argument(
            "--once",
            action="store_true",
            help="run the slow reports, print one collection in Prometheus' text format, exit",
        )

    def request(self, parsed_args):
        import yaml
        from minbw.usecases.cloud import NO_CACHE, Cache
        from minbw.usecases.exporter import ExporterRequest

        config = {}
        if parsed_args.config:
            try:
                with open(parsed_args.config) as f:
                    config = yaml.safe_load(f) or {}
            except OSError as e:
                raise InvalidInput(f"--config {parsed_args.config}: {e.strerror}") from None
            except yaml.YAMLError as e:
                raise InvalidInput(f"--config {parsed_args.config}: not YAML: {e}") from None
        overrides = dict(
            address=parsed_args.listen_address,
            port=parsed_args.listen_port,
            slow_interval=parsed_args.slow_interval,
            interval=parsed_args.interval,
            host=parsed_args.host,
            neutron=parsed_args.neutron,
            workers=parsed_args.workers,
            owner_nova=parsed_args.owner_nova,
            agent_configs=tuple(parsed_args.agent_config) if parsed_args.agent_config else None,
            config_dirs=tuple(parsed_args.config_dir) if parsed_args.config_dir else None,
            port_sizes=tuple(parsed_args.port_size) if parsed_args.port_size else None,
            ovn_chassis=tuple(parsed_args.ovn_chassis) if parsed_args.ovn_chassis else None,
            ovn_sb_db=parsed_args.ovn_sb_db,
            ovs_db=parsed_args.ovs_db,
            ovn_sbctl=parsed_args.ovn_sbctl,
            ovs_vsctl=parsed_args.ovs_vsctl,
            enforcement_host=parsed_args.enforcement_host,
            tls=(parsed_args.tls_cert_file, parsed_args.tls_key_file)
            if parsed_args.tls_cert_file or parsed_args.tls_key_file
            else None,
            cache=NO_CACHE
            if parsed_args.no_cache
            else None
            if parsed_args.cache is None
            else Cache.at(parsed_args.cache),
        )
        return ExporterRequest.from_config(config, **overrides)

    def take_action(self, parsed_args):
        """Serve until stopped, or print one collection (``--once``): no table; the exit code is the run's."""
        from minbw.usecases import exporter

        try:
            request = self.request(parsed_args)
            cloud = self.cloud(parsed_args)
            if parsed_args.once:
                collection = exporter.Exporter(cloud, request)
                collection.run_slow()
                self.app.stdout.write(exporter.exposition(collection))
                self._exit_code = 0
                return (), ()
            stop = threading.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            self._exit_code = exporter.serve(
                cloud, request, stop=stop, ready=lambda line: print(line, file=sys.stderr, flush=True)
            )
        except Exception as e:  # noqa: BLE001 - said in one line, as every command
            self._exit_code = self.fail(parsed_args, e)
        return (), ()
