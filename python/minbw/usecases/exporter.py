"""``minbw exporter``: guaranteed bandwidth as Prometheus metrics (docs/exporter.md).

The thin entry the front ends call: the request (:class:`ExporterRequest`, the port sizes), the slow reports
(:class:`SlowReports`: the audit and the drift, which compose other use cases), and :func:`serve`, which runs the
exporter's machinery (:mod:`minbw.exporter`): a collection every ``interval`` seconds that reads every bandwidth
provider's usage and counts the headroom in ports of the configured sizes, the slow reports on their own
interval, and scrapes served from the last collection in memory.

A host's exporter (``enforcement``: ``--enforcement-host``, run on a compute) serves that host's enforcement checks
instead: each collection is one ``minbw enforcement show`` of the host (:mod:`minbw.usecases.enforcement`: one read
of its data plane, and its Neutron and Placement calls), every ``interval`` seconds (300 by default); no slow
reports, no provider listing.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from minbw.errors import InvalidInput, RequestError
from minbw.exporter.collector import Collector, EnforcementCollector, SlowResults
from minbw.exporter.http import Web, start_server
from minbw.exporter.loops import Loops, Served
from minbw.neutron.port_request import QOS_PORT_GRAMMAR, QosPort
from minbw.ops.enforcement import BACKENDS
from minbw.ops.nova_query import read_owner_nova, root_trait_reasons
from minbw.ops.audit import read_placement, run_audit
from minbw.placement.client import Placement
from minbw.plan.audit import OVER_CAPACITY, judge_audit
from minbw.reports import metrics
from minbw.reports.capacity.request import capacity_request
from minbw.cache.providers import ProviderCache
from minbw.readers.placement import Reader
from minbw.usecases.server_request import nova_root_filters
from minbw.usecases.cloud import DEFAULT_CACHE, Cache, Cloud
from minbw.usecases.enforcement import EnforcementRequest, show_enforcement

DEFAULT_PORT = 9817
DEFAULT_SLOW_INTERVAL = 300.0
# seconds between collections: 3x a warm collection at 1,000 hosts with 8 workers on the production-style
# Placement (27-28 s, docs/benchmarks.md, "The exporter's collection and scrapes at 1,000 hosts")
DEFAULT_INTERVAL = 90.0
DEFAULT_WORKERS = 8  # providers read at once: 8 took 27-28 s a cycle at 1,000 hosts, 4 35-53 s, 16 no better
# seconds between a host's enforcement checks: each is one read of the host's data plane and 4 Neutron listings
# (docs/enforcement.md, "The fleet"): 1,000 hosts' exporters make about 13 Neutron calls a second at 300 s
DEFAULT_ENFORCEMENT_INTERVAL = 300.0
# what a cloud's exporter takes and a host's exporter (enforcement) does not: it serves its host's checks only
CLOUD_KEYS = (
    "port_sizes",
    "slow_interval",
    "agent_configs",
    "config_dirs",
    "host",
    "neutron",
    "audit",
    "cache",
    "workers",
    "owner_nova",
    "ovn_chassis",
    "ovn_sb_db",
    "ovs_db",
    "ovn_sbctl",
    "ovs_vsctl",
)
# every key of the exporter's config file (docs/exporter.md), in the order its error lists them
CONFIG_KEYS = (
    "port_sizes",
    "listen_address",
    "listen_port",
    "interval",
    *(k for k in CLOUD_KEYS if k != "port_sizes"),
    "tls_server_config",
    "basic_auth_users",
    "enforcement",
)
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


@dataclass(frozen=True)
class PortSize:
    """A port size the operator wants headroom for: a name (the ``size`` label) and a port by its QoS rules."""

    name: str
    port: QosPort

    @classmethod
    def parse(cls, text: str, option: str = "--port-size") -> PortSize:
        """``NAME=RULES[,vnic=TYPE][,physnet=NAME]``, e.g. ``small=min_bw:egress:1000,min_bw:ingress:1000``."""
        name, eq, rules = str(text).partition("=")
        name = name.strip()
        if not eq or not name or not set(name) <= _NAME_CHARS or ":" in name:
            raise InvalidInput(
                f"{option}: expected NAME={QOS_PORT_GRAMMAR}, e.g. small=min_bw:egress:1000,"
                f"min_bw:ingress:1000 (NAME: letters, digits, _ - .), got {text!r}"
            )
        try:
            return cls(name, QosPort.parse(rules, f"{option} {name}"))
        except RequestError as e:
            raise InvalidInput(str(e)) from None

    @property
    def vnic_type(self) -> str:
        """The port size's vnic_type (its QoS port's)."""
        return self.port.vnic_type


@dataclass(frozen=True)
class ExporterRequest:
    """``port_sizes`` the headroom is counted for; the HTTP ``address``/``port``; ``interval`` seconds between
    collections; ``slow_interval`` seconds between runs of the slow reports (and of the provider cache's safety
    check); ``agent_configs``, ``config_dirs`` (and ``host``) the ini files the drift compares, read as the agents
    read them;
    ``neutron`` / ``audit``: None = when the cloud has the services; ``cache`` the provider cache (the sync's
    file by default); ``workers`` providers read at once; ``owner_nova`` whether every
    nova-compute reports OWNER_NOVA (None: decided at each safety check, :mod:`minbw.ops.nova_query`).

    ML2/OVN (the drift's chassis, as ``drift show`` takes them): ``ovn_chassis`` files of chassis options and
    ``ovs_db`` this host's Open vSwitch database (the ini side), ``ovn_sb_db`` every chassis of the southbound
    database (the agent side; None: not read, "": ovn-sbctl's default), ``ovn_sbctl``/``ovs_vsctl`` how to run
    the tools. ``web``: the endpoint's TLS and basic authentication (:class:`minbw.exporter.http.Web`).

    ``enforcement``: a host's exporter, which serves that host's enforcement checks (``minbw enforcement show``'s
    request) every ``interval`` seconds and nothing of the cloud's (the other options but the endpoint's are not
    taken with it)."""

    port_sizes: tuple[PortSize, ...] = ()
    address: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    slow_interval: float = DEFAULT_SLOW_INTERVAL
    interval: float = DEFAULT_INTERVAL
    agent_configs: tuple[str, ...] = ()
    config_dirs: tuple[str, ...] = ()
    host: str | None = None
    neutron: bool | None = None
    audit: bool | None = None
    cache: Cache = DEFAULT_CACHE
    workers: int = DEFAULT_WORKERS
    owner_nova: bool | None = None
    ovn_chassis: tuple[str, ...] = ()
    ovn_sb_db: str | None = None
    ovs_db: str | None = None
    ovn_sbctl: str | tuple[str, ...] | None = None
    ovs_vsctl: str | tuple[str, ...] | None = None
    web: Web = Web()
    enforcement: EnforcementRequest | None = None

    def __post_init__(self):
        names = [s.name for s in self.port_sizes]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidInput(f"port sizes: {', '.join(twice)} given twice; each size needs its own name")
        for name in ("slow_interval", "interval"):
            if not getattr(self, name) > 0:
                raise InvalidInput(f"{name}: expected seconds > 0, got {getattr(self, name)!r}")

    @classmethod
    def from_config(cls, config: Mapping, **overrides) -> ExporterRequest:
        """From the exporter's YAML config (docs/exporter.md), options given on the command line winning."""
        if not isinstance(config, Mapping):
            raise InvalidInput(f"the exporter's config: expected a mapping of options, got {type(config).__name__}")
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise InvalidInput(
                f"the exporter's config: unknown key(s) {', '.join(unknown)}; known: {', '.join(CONFIG_KEYS)}"
            )
        enforcement = _enforcement(config.get("enforcement"), overrides.pop("enforcement_host", None))
        if enforcement is not None:
            cloud = sorted(
                {k for k in CLOUD_KEYS if k in config} | {k for k in CLOUD_KEYS if overrides.get(k) is not None}
            )
            if cloud:
                raise InvalidInput(
                    f"the exporter's config: {', '.join(cloud)}: not with enforcement (a host's "
                    f"exporter serves its host's enforcement checks only); run the cloud's exporter "
                    f"apart for them"
                )
        sizes = config.get("port_sizes") or {}
        if not isinstance(sizes, Mapping):
            raise InvalidInput(
                "the exporter's config: port_sizes: expected NAME: RULES items, e.g. small: "
                "min_bw:egress:1000,min_bw:ingress:1000"
            )
        values = {
            "port_sizes": tuple(PortSize.parse(f"{n}={r}", f"port_sizes.{n}") for n, r in sizes.items()),
            "address": config.get("listen_address", "127.0.0.1"),
            "port": config.get("listen_port", DEFAULT_PORT),
            "slow_interval": float(config.get("slow_interval", DEFAULT_SLOW_INTERVAL)),
            "interval": float(
                config.get("interval", DEFAULT_INTERVAL if enforcement is None else DEFAULT_ENFORCEMENT_INTERVAL)
            ),
            "agent_configs": tuple(config.get("agent_configs") or ()),
            "config_dirs": tuple(_strings(config.get("config_dirs"), "config_dirs")),
            "host": config.get("host"),
            "neutron": config.get("neutron"),
            "audit": config.get("audit"),
            "cache": Cache.of(config.get("cache", True)),
            "workers": int(config.get("workers", DEFAULT_WORKERS)),
            "owner_nova": _owner_nova(config.get("owner_nova", "auto")),
            "ovn_chassis": tuple(_strings(config.get("ovn_chassis"), "ovn_chassis")),
            "ovn_sb_db": _db(config.get("ovn_sb_db"), "ovn_sb_db"),
            "ovs_db": _db(config.get("ovs_db"), "ovs_db"),
            "ovn_sbctl": _command(config.get("ovn_sbctl"), "ovn_sbctl"),
            "ovs_vsctl": _command(config.get("ovs_vsctl"), "ovs_vsctl"),
            "web": Web.of(config.get("tls_server_config"), config.get("basic_auth_users")),
            "enforcement": enforcement,
        }
        tls = overrides.pop("tls", None)
        if tls is not None:  # --tls-cert-file / --tls-key-file: over the config's tls_server_config
            values["web"] = dataclasses.replace(
                values["web"], cert_file=tls[0] or values["web"].cert_file, key_file=tls[1] or values["web"].key_file
            )
            Web.of({"cert_file": values["web"].cert_file, "key_file": values["web"].key_file}, None)
        overrides = {k: _owner_nova(v) if k == "owner_nova" else v for k, v in overrides.items()}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _enforcement(value, host: str | None) -> EnforcementRequest | None:
    """The config's ``enforcement`` (``minbw enforcement show``'s options, named as the module's), the host given on
    the command line winning; None: a cloud's exporter."""
    if value is None and host is None:
        return None
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"the exporter's config: enforcement: expected a mapping of enforcement show's options "
            f"(host, ovs_db, netns, ...), got {value!r}"
        )
    known = [f.name for f in dataclasses.fields(EnforcementRequest)]
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise InvalidInput(
            f"the exporter's config: enforcement: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    values = dict(value, **({"host": host} if host is not None else {}))
    for key, v in values.items():
        if key == "kernel" and not isinstance(v, bool):
            raise InvalidInput(f"the exporter's config: enforcement: kernel: expected true or false, got {v!r}")
        if key != "kernel" and v is not None and (not isinstance(v, str) or not v):
            raise InvalidInput(f"the exporter's config: enforcement: {key}: expected a non-empty string, got {v!r}")
    if not values.get("host"):
        raise InvalidInput(
            "the exporter's config: enforcement: host: the compute host to check, as Neutron names it "
            "(or --enforcement-host)"
        )
    if values.get("backend") is not None and values["backend"] not in BACKENDS:
        raise InvalidInput(
            f"the exporter's config: enforcement: backend: expected one of {', '.join(BACKENDS)}, got "
            f"{values['backend']!r}"
        )
    return EnforcementRequest(**values)


def _strings(value, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"the exporter's config: {key}: expected a list of file names, got {value!r}")
    return list(value)


def _db(value, key: str) -> str | None:
    """A database option: None (not read), "" or true (the tool's default database), or the database."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(
            f"the exporter's config: {key}: expected a database such as tcp:192.0.2.10:6642, \"\" or "
            f"true for the tool's default, got {value!r}"
        )
    return value


def _command(value, key: str) -> str | tuple[str, ...] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidInput(f"the exporter's config: {key}: expected a command, a string or a list of words, got {value!r}")


def _owner_nova(value) -> bool | None:
    """owner_nova as the config or the command line give it: auto (None), yes/true, no/false."""
    known = {"auto": None, "yes": True, "true": True, "no": False, "false": False}
    if isinstance(value, bool) or value is None:
        return value
    if str(value).lower() not in known:
        raise InvalidInput(
            f"owner_nova: expected auto, yes or no (whether every nova-compute reports OWNER_NOVA), got {value!r}"
        )
    return known[str(value).lower()]


def _own_client(
    cloud: Cloud, request: ExporterRequest, twin_of: ProviderCache | None = None
) -> tuple[Placement, ProviderCache | None]:
    """A Placement client of a thread's own (its call counts are that thread's), and its provider cache object
    (``request.cache``'s, or a twin of ``twin_of`` (another thread's, of the same file): its entries shared, not
    loaded again; objects of one file merge when saved)."""
    api = Placement(cloud.conn, max_microversion=cloud.placement_version)
    return api, (twin_of.twin() if twin_of is not None else request.cache.open(api))


class SlowReports:
    """The audit and the drift (all of it on a cloud with Nova and Neutron; on a cloud of Placement alone what
    Placement tells: providers over capacity), with a Placement client, reader and provider cache of their own:
    owned by the slow loop's thread (``cache``: the collector's, of which theirs is a twin,
    :meth:`~minbw.cache.providers.ProviderCache.twin`: its entries not loaded twice)."""

    def __init__(self, cloud: Cloud, request: ExporterRequest, cache: ProviderCache | None = None):
        self.cloud = cloud
        self.request = request
        self.reader = Reader(*_own_client(cloud, request, cache), workers=request.workers)
        self.status: dict[str, dict] = {}
        self.findings: tuple | None = None
        self.audit_kinds: tuple[str, ...] = metrics.AUDIT_KINDS
        self.drift_rows: tuple | None = None

    def run(self) -> SlowResults:
        """Each report once (a failed one keeps its results out of the metrics); the results and statuses."""
        self._run("audit", self._audit)
        r = self.request
        if (
            r.agent_configs
            or r.config_dirs
            or r.ovn_chassis
            or r.ovs_db is not None
            or r.ovn_sb_db is not None
            or self._neutron()
        ):
            self._run("drift", self._drift)
        self.reader.save()
        return SlowResults(self.findings, self.audit_kinds, self.drift_rows, dict(self.status))

    def _run(self, name: str, fn) -> None:
        started = time.perf_counter()
        before = self.status.get(name) or {}
        try:
            fn()
            self.status[name] = {"ok": True, "seconds": time.perf_counter() - started, "last_success": time.time()}
        except Exception as e:  # noqa: BLE001 - a report that fails is served as failed; the exporter goes on
            self.status[name] = {
                "ok": False,
                "seconds": time.perf_counter() - started,
                "error": str(e),
                "last_success": before.get("last_success"),
            }
            if self.cloud.say:
                self.cloud.say(f"the {name} report failed: {type(e).__name__}: {e}")

    def _neutron(self) -> bool:
        return self.request.neutron if self.request.neutron is not None else self.cloud.has("network")

    def _audit(self) -> None:
        self.findings = None
        full = self.request.audit
        if full is None:
            full = self.cloud.has("compute") and self.cloud.has("network")
        if full:
            self.findings = tuple(run_audit(self.cloud.conn, self.reader).findings)
            self.audit_kinds = metrics.AUDIT_KINDS
            return
        # Placement alone cannot tell live servers from leaks: what it tells is which providers are over capacity
        seen = read_placement(self.reader)
        plan = judge_audit(
            seen.allocations,
            servers=[],
            migrations=[],
            ports=[],
            names=seen.names,
            inventories=seen.inventories,
            hosts=seen.hosts,
        )
        self.findings = tuple(f for f in plan.findings if f.kind == OVER_CAPACITY)
        self.audit_kinds = (OVER_CAPACITY,)

    def _drift(self) -> None:
        from minbw.usecases.drift import DriftRequest, drift
        from minbw.usecases.providers import OvnSources

        self.drift_rows = None
        r = self.request
        chassis = OvnSources(
            files=r.ovn_chassis, open_vswitch=r.ovs_db is not None, ovs_db=r.ovs_db or None, vsctl=r.ovs_vsctl
        )
        southbound = OvnSources(southbound=r.ovn_sb_db is not None, sb_db=r.ovn_sb_db or None, sbctl=r.ovn_sbctl)
        result = drift(
            self.cloud,
            DriftRequest(
                r.agent_configs,
                r.host,
                self._neutron(),
                chassis=chassis,
                config_dirs=r.config_dirs,
                southbound=southbound,
                options=DRIFT_OPTIONS,
            ),
            reader=self.reader,
        )
        self.drift_rows = result.rows


# how a drift that compared nothing names the exporter's options (its config's keys)
DRIFT_OPTIONS = {
    "agent_configs": "agent_configs (--agent-config)",
    "config_dirs": "config_dirs (--config-dir)",
    "neutron": "neutron: false",
    "ovn_sb_db": "ovn_sb_db (--ovn-sb-db)",
    "ovn_chassis": "ovn_chassis (--ovn-chassis)",
    "ovs_db": "ovs_db (--ovs-db)",
}


def port_sizes(cloud: Cloud, sizes, owner_nova: bool) -> list:
    """Each port size as the server Nova's request filters shape (what they ask of every compute node:
    compute_status_filter, owner_nova_filter as ``owner_nova`` says): a disabled nova-compute's host has no
    headroom."""
    nova = nova_root_filters(cloud, owner_nova=owner_nova)
    roots: dict = {"root_required": nova.request.root_required, "root_forbidden": nova.request.root_forbidden}
    reasons = root_trait_reasons(nova.applied)
    out = []
    for s in sizes:
        req = capacity_request(qos_ports=(s.port,), port_labels=(f"port size {s.name}",))
        out.append((s, dataclasses.replace(req, server=dataclasses.replace(req.server, **roots), root_reasons=reasons)))
    return out


class Exporter:
    """One cloud's exporter: the collector (its own thread in :func:`serve`), the slow reports (theirs), and what
    the scrapes are served (:class:`minbw.exporter.loops.Served`). Called directly (``--once``, tests,
    benchmarks), each method runs in the caller's thread."""

    def __init__(self, cloud: Cloud, request: ExporterRequest, clock=time.time, stop: threading.Event | None = None):
        self.cloud = cloud
        self.request = request
        self.served = Served(clock)
        if request.enforcement is not None:  # a host's exporter: its enforcement checks only
            self.collector: Collector | EnforcementCollector = EnforcementCollector(
                lambda: show_enforcement(cloud, request.enforcement).report,  # type: ignore[arg-type]  # not None
                clock=clock,
                say=cloud.say,
            )
            self.slow_reports = None
            self.loops = Loops(
                self.collector,
                None,
                self.served,
                interval=request.interval,
                slow_interval=request.slow_interval,
                stop=stop or threading.Event(),
                say=cloud.say,
            )
            return
        api, cache = _own_client(cloud, request)
        given = request.owner_nova
        owner_nova = (
            (lambda: read_owner_nova(api, cloud.conn if cloud.has("compute") else None).applies)
            if given is None
            else lambda: given
        )
        self.collector = Collector(
            api,
            functools.partial(port_sizes, cloud, request.port_sizes),
            owner_nova,
            cache=cache,
            workers=request.workers,
            check_interval=request.slow_interval,
            clock=clock,
            say=cloud.say,
        )
        self.slow_reports = SlowReports(cloud, request, cache)  # its cache the collector's twin
        self.loops = Loops(
            self.collector,
            self.slow_reports.run,
            self.served,
            interval=request.interval,
            slow_interval=request.slow_interval,
            stop=stop or threading.Event(),
            say=cloud.say,
        )

    def run_slow(self) -> dict:
        """The slow reports now; every report's status (the cache check's is the collector's). A host's exporter
        has none."""
        if self.slow_reports is None:
            return dict(self.collector.status)
        self.loops.slow = self.slow_reports.run()
        return {**self.loops.slow.status, **self.collector.status}

    def collect(self) -> list[metrics.Family]:
        """One collection cycle now, published for the scrapes: its families."""
        return list(self.loops.collect_once().families)

    def exposition(self, *, openmetrics: bool = False) -> str:
        """What a scrape gets now (the last collection; none before the first)."""
        return self.served.body(openmetrics)


def exposition(exporter: Exporter, *, openmetrics: bool = False) -> str:
    """One collection, rendered as a scrape gets it (``minbw exporter --once``)."""
    exporter.collect()
    return exporter.exposition(openmetrics=openmetrics)


def serve(cloud: Cloud, request: ExporterRequest, *, stop: threading.Event | None = None, ready=None) -> int:
    """Serve the metrics on ``address:port`` until ``stop`` is set (SIGTERM/SIGINT in the command): one
    collection first (the first scrape has it), then the collection every ``interval`` seconds and the slow
    reports every ``slow_interval`` seconds, each in its own thread; scrapes are answered from memory by a process
    of their own (:mod:`minbw.exporter.http`), which ends with this one."""
    stop = stop or threading.Event()
    exporter = Exporter(cloud, request, stop=stop)
    loops = exporter.loops
    exporter.collect()
    server = start_server(exporter.served, request.address, request.port, request.web)
    loops.start()
    if ready:
        scheme = "https" if request.web.tls else "http"
        auth = f", basic authentication for {len(request.web.users)} user(s)" if request.web.users else ""
        ready(
            f"minbw exporter serving on {scheme}://{request.address}:{server.server_port}/metrics "
            f"(scrapes answered by process {server.pid}{auth})"
        )
    try:
        stop.wait()
    finally:
        server.shutdown()
        server.server_close()
        loops.join(timeout=5)
    return 0
