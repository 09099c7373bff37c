"""``minbw exporter``: guaranteed bandwidth as Prometheus metrics (docs/exporter.md).

Each scrape lists the providers once and re-reads only the bandwidth providers whose generation moved (the
provider cache, :class:`minbw.reports.reader.ProviderCache`, shared with the sync), then computes the usage and
the headroom in ports of the configured sizes (the arithmetic of ``minbw capacity``). The slow reports run on
their own interval in the background: the cache's safety check and the ``?resources=CLASS:1`` listings that find
bandwidth providers not made by Neutron, the sharing providers, the audit (all of it on a cloud with Nova and
Neutron; on a cloud of Placement alone what Placement tells: providers over capacity) and the drift (the agents'
ini files and/or what the agents report to Neutron, against Placement). Their last results are served with every
scrape, with when and whether each last succeeded.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.errors import InvalidInput, RequestError
from minbw.model.providers import ProviderDetail
from minbw.neutron.port_request import QOS_PORT_GRAMMAR, QosPort
from minbw.ops.audit import read_placement, run_audit
from minbw.plan.audit import OVER_CAPACITY, audit as judge
from minbw.reports import metrics
from minbw.reports.capacity.report import capacity
from minbw.reports.capacity.request import capacity_request
from minbw.reports.providers import sharing_providers
from minbw.reports.reader import (ProviderCache, Reader, default_cache_path, read_bandwidth, read_sync_record)
from minbw.usecases.cloud import Cloud

DEFAULT_PORT = 9817
DEFAULT_SLOW_INTERVAL = 300.0
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
            raise InvalidInput(f"{option}: expected NAME={QOS_PORT_GRAMMAR}, e.g. small=min_bw:egress:1000,"
                               f"min_bw:ingress:1000 (NAME: letters, digits, _ - .), got {text!r}")
        try:
            return cls(name, QosPort.parse(rules, f"{option} {name}"))
        except RequestError as e:
            raise InvalidInput(str(e)) from None

    @property
    def vnic_type(self) -> str:
        return self.port.vnic_type


@dataclass(frozen=True)
class ExporterRequest:
    """``port_sizes`` the headroom is counted for; the HTTP ``address``/``port``; ``slow_interval`` seconds
    between runs of the slow reports; ``agent_configs`` (and ``host``) the ini files the drift compares;
    ``neutron`` / ``audit``: None = when the cloud has the services; ``cache`` the provider cache file
    ("" the sync's default file, None none); ``workers`` providers read at once."""

    port_sizes: tuple[PortSize, ...] = ()
    address: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    slow_interval: float = DEFAULT_SLOW_INTERVAL
    agent_configs: tuple[str, ...] = ()
    host: str | None = None
    neutron: bool | None = None
    audit: bool | None = None
    cache: str | None = ""
    workers: int = 4

    def __post_init__(self):
        names = [s.name for s in self.port_sizes]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidInput(f"port sizes: {', '.join(twice)} given twice; each size needs its own name")
        if not self.slow_interval > 0:
            raise InvalidInput(f"slow_interval: expected seconds > 0, got {self.slow_interval!r}")

    @classmethod
    def from_config(cls, config: Mapping, **overrides) -> ExporterRequest:
        """From the exporter's YAML config (docs/exporter.md), options given on the command line winning."""
        if not isinstance(config, Mapping):
            raise InvalidInput(f"the exporter's config: expected a mapping of options, got {type(config).__name__}")
        keys = ("port_sizes", "listen_address", "listen_port", "slow_interval", "agent_configs", "host", "neutron",
                "audit", "cache", "workers")
        unknown = sorted(set(config) - set(keys))
        if unknown:
            raise InvalidInput(f"the exporter's config: unknown key(s) {', '.join(unknown)}; known: {', '.join(keys)}")
        sizes = config.get("port_sizes") or {}
        if not isinstance(sizes, Mapping):
            raise InvalidInput("the exporter's config: port_sizes: expected NAME: RULES items, e.g. small: "
                               "min_bw:egress:1000,min_bw:ingress:1000")
        values = {"port_sizes": tuple(PortSize.parse(f"{n}={r}", f"port_sizes.{n}") for n, r in sizes.items()),
                  "address": config.get("listen_address", "127.0.0.1"),
                  "port": config.get("listen_port", DEFAULT_PORT),
                  "slow_interval": float(config.get("slow_interval", DEFAULT_SLOW_INTERVAL)),
                  "agent_configs": tuple(config.get("agent_configs") or ()), "host": config.get("host"),
                  "neutron": config.get("neutron"), "audit": config.get("audit"),
                  "cache": config.get("cache", ""), "workers": int(config.get("workers", 4))}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class _Slow:
    """The slow reports' last results and status."""

    findings: tuple | None = None
    audit_kinds: tuple[str, ...] = metrics.AUDIT_KINDS
    drift_rows: tuple | None = None
    shared: Mapping[str, frozenset[str]] = field(default_factory=dict)
    status: dict = field(default_factory=dict)


class Exporter:
    """The scrapes and the slow reports of one cloud (thread-safe: Prometheus' scrapes and the slow loop)."""

    def __init__(self, cloud: Cloud, request: ExporterRequest, clock=time.time):
        self.cloud = cloud
        self.request = request
        self.clock = clock
        self.api = cloud.placement
        self.cache = None
        if request.cache is not None:
            self.cache = ProviderCache(request.cache or default_cache_path(self.api.endpoint()), self.api.endpoint())
        # scrapes trust the generations; the cache's safety check runs with the slow reports
        self.reader = Reader(self.api, self.cache, workers=request.workers, verify=False)
        self.sizes = [(s, capacity_request(qos_ports=(s.port,), port_labels=(f"port size {s.name}",)))
                      for s in request.port_sizes]
        self.slow = _Slow()
        self._lock = threading.Lock()
        self.last_stats: dict = {}
        self._headroom: tuple[tuple, list] | None = None  # (what it was counted from, the headroom per size)
        self._counted: dict[str, dict] = {}  # size → the hosts counted (capacity's memo: only trees that moved)
        self.provider_families = metrics.ProviderFamilies()  # the provider families of providers that did not move
        self._exposition = Exposition()

    # ------------------------------------------------------------ the scrape
    def scrape(self) -> list[metrics.Family]:
        """List the providers, re-read the bandwidth providers that moved, count the headroom: every family."""
        with self._lock:
            return self._scrape()[0]

    def _scrape(self) -> tuple[list[metrics.Family], Mapping[str, tuple]]:
        """The families, and each provider's own samples (:attr:`metrics.ProviderFamilies.parts`; none when the
        scrape failed)."""
        started, calls, read = time.perf_counter(), self.api.calls, self.reader.read
        status = dict(self.slow.status)
        try:
            reading = read_bandwidth(self.reader, listings=False)
            sizes = self._headroom_of(reading)
            status["providers"] = {"ok": True, "seconds": time.perf_counter() - started,
                                   "last_success": self.clock()}
        except Exception as e:  # noqa: BLE001 - served as a failed scrape (minbw_report_success 0)
            self._say(f"reading the providers failed: {type(e).__name__}: {e}")
            status["providers"] = {"ok": False, "seconds": time.perf_counter() - started, "error": str(e),
                                   "last_success": (self.slow.status.get("providers") or {}).get("last_success")}
            self.slow.status["providers"] = status["providers"]
            return metrics.families(status=status, stats={"seconds": time.perf_counter() - started,
                                                          "calls": self.api.calls - calls},
                                    calls_total=self.api.calls), {}
        self.slow.status["providers"] = status["providers"]
        stats = {"seconds": time.perf_counter() - started, "calls": self.api.calls - calls,
                 "read": self.reader.read - read,
                 "listed": reading.stats["listed"], "bandwidth": reading.stats["bandwidth"]}
        self.last_stats = stats
        sync_record = read_sync_record(self.cache.path) if self.cache is not None else None
        families = metrics.families(details=reading.bandwidth(), hosts=reading.hosts(), sizes=sizes,
                                    drift_rows=self.slow.drift_rows, findings=self.slow.findings,
                                    audit_kinds=self.slow.audit_kinds, status=status,
                                    sync_record=sync_record, stats=stats, calls_total=self.api.calls,
                                    provider_families=self.provider_families)
        return families, self.provider_families.parts

    def exposition(self, *, openmetrics: bool = False) -> str:
        """One scrape rendered (Prometheus' text format, or OpenMetrics), the renderings of what did not change
        kept (:class:`Exposition`)."""
        with self._lock:
            families, parts = self._scrape()
            return self._exposition.render(families, parts, openmetrics=openmetrics)

    def _headroom_of(self, reading) -> list:
        """(size, vnic type, capacity) per port size: counted again only when a provider moved (Placement bumps a
        provider's generation on every inventory, trait and allocation change), the providers read changed (the
        slow reports found one) or the sharing providers changed; otherwise the last scrape's."""
        key = (frozenset(reading.providers.values()), frozenset(reading.details), frozenset(self.slow.shared.items()))
        if self._headroom is None or self._headroom[0] != key:
            details = self._capacity_details(reading)
            self._headroom = (key, [(s.name, s.vnic_type, capacity(details, req, self.slow.shared,
                                                                   memo=self._counted.setdefault(s.name, {})))
                                    for s, req in self.sizes])
        return self._headroom[1]

    def _capacity_details(self, reading) -> list[ProviderDetail]:
        """The bandwidth providers, the sharing providers, and every other provider of their trees standing in
        with nothing to offer (the trees need their roots)."""
        shared = [reading.providers[u] for u in self.slow.shared if u in reading.providers]
        details = dict(reading.details)
        details.update(self.reader.details([p for p in shared if p.uuid not in details]))
        trees = {d.provider.root_uuid for d in details.values()}
        return list(details.values()) + [ProviderDetail(p, frozenset(), {}, {}, True)
                                         for u, p in reading.providers.items()
                                         if u not in details and p.root_uuid in trees]

    def _say(self, line: str) -> None:
        if self.cloud.say:
            self.cloud.say(line)

    # ------------------------------------------------------------ the slow reports
    def _run(self, name: str, fn) -> None:
        started = time.perf_counter()
        before = self.slow.status.get(name) or {}
        try:
            fn()
            self.slow.status[name] = {"ok": True, "seconds": time.perf_counter() - started,
                                      "last_success": self.clock()}
        except Exception as e:  # noqa: BLE001 - a report that fails is served as failed; the exporter goes on
            self.slow.status[name] = {"ok": False, "seconds": time.perf_counter() - started, "error": str(e),
                                      "last_success": before.get("last_success")}
            self._say(f"the {name} report failed: {type(e).__name__}: {e}")

    def run_slow(self) -> dict:
        """The cache's safety check and the bandwidth providers not made by Neutron, the sharing providers, the
        audit and the drift; each report's status (a failed one keeps its last results out of the metrics)."""
        with self._lock:
            self._run("cache_check", self._cache_check)
            self._run("audit", self._audit)
            if self.request.agent_configs or self._neutron():
                self._run("drift", self._drift)
            return dict(self.slow.status)

    def _cache_check(self) -> None:
        checker = Reader(self.api, self.cache, workers=self.request.workers, verify=True)
        providers = checker.listing()
        scope = checker.bandwidth_scope(providers, listings=True)
        checker.details([p for p in providers if p.uuid in scope])
        self.slow.shared = sharing_providers(self.api)
        if self.cache is not None:
            self.cache.save()

    def _neutron(self) -> bool:
        return self.request.neutron if self.request.neutron is not None else self.cloud.has("network")

    def _audit(self) -> None:
        self.slow.findings = None
        full = self.request.audit
        if full is None:
            full = self.cloud.has("compute") and self.cloud.has("network")
        if full:
            self.slow.findings = tuple(run_audit(self.cloud.conn, self.reader).findings)
            self.slow.audit_kinds = metrics.AUDIT_KINDS
            return
        # Placement alone cannot tell live servers from leaks: what it tells is which providers are over capacity
        seen = read_placement(self.reader)
        plan = judge(seen.allocations, servers=[], migrations=[], ports=[], names=seen.names,
                     inventories=seen.inventories, hosts=seen.hosts)
        self.slow.findings = tuple(f for f in plan.findings if f.kind == OVER_CAPACITY)
        self.slow.audit_kinds = (OVER_CAPACITY,)

    def _drift(self) -> None:
        from minbw.usecases.drift import DriftRequest, drift
        self.slow.drift_rows = None
        result = drift(self.cloud, DriftRequest(self.request.agent_configs, self.request.host, self._neutron()),
                       reader=self.reader)
        self.slow.drift_rows = result.rows


# ---------------------------------------------------------------- serving

class _Families:
    """A collector (for prometheus_client's renderers) of :class:`metrics.Family` objects."""

    def __init__(self, families):
        self.families = families

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        for f in self.families:
            names = [k for k, _ in f.samples[0][0]] if f.samples else []
            cls = CounterMetricFamily if f.type == "counter" else GaugeMetricFamily
            fam = cls(f.name, f.help, labels=names)
            for labels, value in f.samples:
                fam.add_metric([v for _, v in labels], value)
            yield fam


def _render(families, openmetrics: bool) -> str:
    """``families`` in Prometheus' text format (0.0.4) or OpenMetrics (without its ``# EOF``), by
    prometheus_client."""
    if openmetrics:
        from prometheus_client.openmetrics.exposition import generate_latest
        return generate_latest(_Families(families)).decode()[:-len("# EOF\n")]
    from prometheus_client import generate_latest
    return generate_latest(_Families(families)).decode()


def _sample_lines(text: str, keep_lines: bool = False) -> dict:
    """family name → its sample lines (``keep_lines``: as a list, one line per sample), of a rendering of gauges
    (their names are not changed by the format)."""
    out: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in text.split("\n")[:-1]:  # prometheus_client escapes a newline in a label value, no other separator
        line += "\n"
        if line.startswith("# TYPE "):
            lines = out.setdefault(line.split(" ", 3)[2], [])
        elif not line.startswith("#"):
            lines.append(line)
    return out if keep_lines else {name: "".join(ls) for name, ls in out.items()}


class Exposition:
    """The exporter's families rendered by prometheus_client and kept: a family whose samples did not change is
    not rendered again, and the families of the providers are rendered per provider (each provider's lines kept
    while its samples are the same), so a scrape after a few providers moved renders only theirs."""

    def __init__(self):
        self._families: dict[tuple[bool, str], tuple[metrics.Family, str]] = {}
        self._headers: dict[tuple[bool, metrics.Family], str] = {}
        self._providers: dict[tuple[bool, str], tuple[tuple, dict[str, str]]] = {}
        self.rendered = {"families": 0, "providers": 0}  # rendered, all told (tests, benchmarks)

    def render(self, families, parts: Mapping[str, tuple] | None = None, *, openmetrics: bool = False) -> str:
        """``families`` (:meth:`Exporter.scrape`); ``parts``: provider → its own samples
        (:attr:`metrics.ProviderFamilies.parts`), whose families are rendered provider by provider."""
        parts = parts or {}
        per_provider = {name for own in parts.values() for name, _, _ in own}
        self._render_providers(openmetrics, parts)
        lines = {u: self._providers[(openmetrics, u)][1] for u in parts}
        out = []
        for f in families:
            if f.name in per_provider:
                out.append(self._header(openmetrics, f))
                out.extend(lines[u].get(f.name, "") for u in parts)
            else:
                out.append(self._family(openmetrics, f))
        if openmetrics:
            out.append("# EOF\n")
        self._forget(parts)
        return "".join(out)

    def _family(self, openmetrics: bool, f) -> str:
        kept = self._families.get((openmetrics, f.name))
        if kept is None or (kept[0] is not f and kept[0] != f):
            kept = self._families[(openmetrics, f.name)] = (f, _render([f], openmetrics))
            self.rendered["families"] += 1
        return kept[1]

    def _header(self, openmetrics: bool, f) -> str:
        key = (openmetrics, metrics.Family(f.name, f.type, f.help))
        if key not in self._headers:
            self._headers[key] = _render([key[1]], openmetrics)
        return self._headers[key]

    def _render_providers(self, openmetrics: bool, parts: Mapping[str, tuple]) -> None:
        """Render the providers whose samples are new or changed, all in one rendering (a family's samples in
        the providers' order, one line each), and keep each one's lines."""
        todo = [(u, own) for u, own in parts.items()
                if (kept := self._providers.get((openmetrics, u))) is None or (kept[0] is not own and kept[0] != own)]
        if not todo:
            return
        by_name: dict[str, list] = {}
        for _, own in todo:
            for name, labels, value in own:
                by_name.setdefault(name, []).append((labels, value))
        text = _sample_lines(_render([metrics.Family(n, "gauge", "-", tuple(samples))
                                      for n, samples in by_name.items()], openmetrics), keep_lines=True)
        taken = {name: 0 for name in by_name}
        for u, own in todo:
            counts: dict[str, int] = {}
            for name, _, _ in own:
                counts[name] = counts.get(name, 0) + 1
            mine = {}
            for name, k in counts.items():
                mine[name] = "".join(text[name][taken[name]:taken[name] + k])
                taken[name] += k
            self._providers[(openmetrics, u)] = (own, mine)
        self.rendered["providers"] += len(todo)

    def _forget(self, parts: Mapping[str, tuple]) -> None:
        """Drop the lines of providers gone (the exporter runs for months)."""
        if len(self._providers) > 2 * len(parts) + 100:
            self._providers = {k: v for k, v in self._providers.items() if k[1] in parts}


def exposition(exporter: Exporter, *, openmetrics: bool = False) -> str:
    """One scrape in Prometheus' text format (``minbw exporter --once``), or OpenMetrics."""
    return exporter.exposition(openmetrics=openmetrics)


def _app(exporter: Exporter):
    """The WSGI application serving ``/metrics``: the format Prometheus asks for (its Accept header, as
    prometheus_client chooses), gzip when accepted."""
    import gzip
    from prometheus_client.exposition import choose_encoder

    def app(environ, start_response):
        if environ.get("PATH_INFO", "/") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        _, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        body = exporter.exposition(openmetrics=content_type.startswith("application/openmetrics-text")).encode()
        headers = [("Content-Type", content_type)]
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            body = gzip.compress(body, compresslevel=1)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]
    return app


def start_server(exporter: Exporter, address: str, port: int):
    """Serve ``exporter`` on ``address:port`` in a daemon thread (as prometheus_client's start_http_server does,
    with the renderings kept): the server (``server_port``, ``shutdown()``, ``server_close()``)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server
    from prometheus_client.exposition import ThreadingWSGIServer

    class Quiet(WSGIRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    server = make_server(address, port, _app(exporter), ThreadingWSGIServer, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve(cloud: Cloud, request: ExporterRequest, *, stop: threading.Event | None = None,
          ready=None) -> int:
    """Serve the metrics on ``address:port`` until ``stop`` is set (SIGTERM/SIGINT in the command); the slow
    reports first, then every ``slow_interval`` seconds, in a background thread."""
    stop = stop or threading.Event()
    exporter = Exporter(cloud, request)
    exporter.run_slow()
    server = start_server(exporter, request.address, request.port)
    if ready:
        ready(f"minbw exporter serving on http://{request.address}:{server.server_port}/metrics")
    try:
        while not stop.wait(request.slow_interval):
            exporter.run_slow()
    finally:
        server.shutdown()
        server.server_close()
    return 0
