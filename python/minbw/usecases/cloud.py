"""The cloud a use case works on: its openstacksdk connection (made on first use, so that bad input is refused
before anything is contacted), Placement's client over it, the service user that writes ports' bindings, and
where progress goes."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minbw.errors import MissingService
from minbw.usecases.connection import one_line

Progress = Callable[[str, int, int], None]  # (step, done, total)
Say = Callable[[str], None]  # a line about a long run's course (e.g. each host schedule tries)

# What each service is called in errors, and which project serves it.
SERVICES = {"network": "Neutron", "compute": "Nova", "image": "Glance", "placement": "Placement"}
# A request each service answers, to tell it from what else sits at an endpoint of a cloud without a service
# catalog (one small GET; a 404 there: not this service). Nova needs none: openstacksdk's version discovery of it
# already finds no compute API at an endpoint that is not Nova's.
PROBES = {"network": "/extensions"}


@dataclass(frozen=True)
class Cache:
    """Which provider cache a use case trusts and keeps (``provider sync`` writes it, the reports and the exporter
    read it): the sync's file for this Placement (:data:`DEFAULT_CACHE`), a file the user names
    (:meth:`at`), or none (:data:`NO_CACHE`)."""

    on: bool = True
    path: str | None = None  # None: the sync's file for the Placement endpoint (cache.providers.default_cache_path)

    @classmethod
    def at(cls, path: str | None) -> Cache:
        """The cache in ``path`` (None or empty: the sync's file for this Placement)."""
        return cls(True, path or None)

    @classmethod
    def of(cls, value) -> Cache:
        """As a config file or a module gives it: a path, true or "" (the default file), false or null (none)."""
        if isinstance(value, Cache):
            return value
        if value is None or value is False:
            return NO_CACHE
        return DEFAULT_CACHE if value is True else cls.at(str(value))

    def file(self, api) -> str | None:
        """The cache's file for ``api``'s Placement; None for :data:`NO_CACHE`."""
        if not self.on:
            return None
        from minbw.cache.providers import default_cache_path

        return str(self.path or default_cache_path(api.endpoint()))

    def open(self, api, **options):
        """The :class:`~minbw.cache.providers.ProviderCache` for ``api``'s Placement (``options``: its own, e.g.
        ``max_age``); None for :data:`NO_CACHE`."""
        if not self.on:
            return None
        from minbw.cache.providers import ProviderCache

        return ProviderCache(self.file(api), api.endpoint(), **options)


DEFAULT_CACHE = Cache()
NO_CACHE = Cache(on=False)


class Cloud:
    """One cloud, as the front end was told to reach it.

    ``connect`` makes the openstacksdk Connection (the CLI from the ``--os-*`` options, a module from its auth
    options); ``region``, when given, the openstacksdk cloud region (``CloudRegion``) that Connection is made of: then
    Placement's client is made from the region alone (:mod:`minbw.placement.connection`: without importing
    openstacksdk's services) unless the Connection was made first, and ``connect`` is called only when another
    service is needed (it must make its Connection of the same region, to share its session); ``service_connect``
    the connection of the service user that may write ports' ``binding:profile`` (None: the same user);
    ``placement_version`` caps Placement's microversions (``--os-placement-api-version``); ``progress`` is told how
    long runs advance, ``say`` what they try.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        region: Callable[[], Any] | None = None,
        service_connect: Callable[[], Any] | None = None,
        progress: Progress | None = None,
        say: Say | None = None,
        placement_version: str | None = None,
        cache: Cache = NO_CACHE,
        workers: int = 4,
    ):
        self._connect = connect
        self._region = region
        self._service_connect = service_connect
        self.progress = progress
        self.say = say
        self.placement_version = placement_version
        self.cache = cache  # the provider cache the reports trust (none unless asked: --cache)
        self.workers = workers  # providers the reports read at once
        self._conn = None
        self._placement = None
        self._absent: dict[str, str | None] = {}
        # one Connection and one Placement client, whichever thread asks first (the CLI's shell binds
        # openstack.connection lazily: its first use, making the Connection, is one thread's)
        self._making = threading.RLock()

    @property
    def conn(self):
        """The openstacksdk Connection, made by ``connect`` on first use (what ``connect`` raises, e.g. CloudError,
        goes through)."""
        with self._making:
            if self._conn is None:
                self._conn = self._connect()
            return self._conn

    @property
    def placement(self):
        """The Placement client (:class:`minbw.placement.client.Placement`): over Placement's connection made from
        ``region`` (:func:`minbw.placement.connection.placement_connection`) when the cloud was given one, whether
        :attr:`conn` is made or not (the region is the one it was made from: one session), else over :attr:`conn`.
        Never through openstacksdk's placement proxy, whose version discovery, when Placement does not answer, logs
        keystoneauth's warnings and then fails with "no supported versions" instead of the retry policy's answer
        (the soak on the mini-cloud: ``minbw server heal`` while Placement was killed, docs/soak.md)."""
        with self._making:
            if self._placement is None:
                from minbw.placement.client import Placement

                conn = None
                if self._region is not None:
                    from minbw.placement.connection import placement_connection

                    conn = placement_connection(self._region())
                self._placement = Placement(conn or self.conn, max_microversion=self.placement_version)
            return self._placement

    def reader(self):
        """The reports' reader of Placement (:class:`minbw.readers.placement.Reader`), with the provider cache when
        :attr:`cache` names one (the sync's file by default), ``workers`` reads at once, and the progress."""
        from minbw.readers.placement import Reader

        api = self.placement
        return Reader(api, self.cache.open(api), workers=self.workers, progress=self.progress)

    def service_conn(self):
        """The connection that writes ports' ``binding:profile`` (Neutron allows it to the service role)."""
        return self._service_connect() if self._service_connect is not None else self.conn

    def has(self, service: str) -> bool:
        """Whether the cloud offers ``service`` (see :meth:`absent`)."""
        return self.absent(service) is None

    def absent(self, service: str) -> str | None:
        """Why the cloud has no ``service``, however openstacksdk learns it (None: it has one, as far as can be
        told before using it; asked once per service). Its configuration turns it off (``has_compute: false``);
        its catalog lists none, or lists Placement's endpoint for it; a cloud without a catalog (``admin_token``,
        ``none``) has no endpoint for it, or its one endpoint is Placement's, or answers no such API. With a
        catalog no call is made but the token's; without one, openstacksdk's version discovery of the service
        (made on its first use anyway) and one small GET (:data:`PROBES`)."""
        if service not in self._absent:
            self._absent[service] = self._why_absent(service)
        return self._absent[service]

    def require(self, service: str, needed_by: str, fix: str = "") -> None:
        """Refuse, naming the service, the cloud, how it is known to lack it, what needed it, and the fix, when
        the cloud has no ``service`` (e.g. the embedded Placement, which is a cloud of Placement alone; or a
        hand-written clouds.yaml of a Placement behind an ``admin_token``, which does not say so)."""
        why = self.absent(service)
        if why is None:
            return
        name = getattr(self.conn.config, "name", None)
        cloud = f"cloud {name!r}" if name else "the cloud"
        project = SERVICES.get(service, service)
        if self.conn.config.has_service(service):  # it is not configured off: say how to give it, or say so
            key = service.replace("-", "_")
            ways = (
                f"give {cloud} a {service} endpoint ({key}_endpoint_override in its clouds.yaml entry, or "
                f"auth through a Keystone whose catalog lists {project}), or, if it has no {project}, say so "
                f"with has_{key}: false in its clouds.yaml entry"
            )
            fix = f"{fix}; or {ways}" if fix else ways
        raise MissingService(service, project, needed_by, cloud, fix, why=why)

    def _why_absent(self, service: str) -> str | None:
        from keystoneauth1.identity.base import BaseIdentityPlugin

        conn = self.conn
        from openstack.connection import Connection  # (after the Connection is made: it loaded the module)

        config = conn.config
        key = service.replace("-", "_")
        if not config.has_service(service):
            reason = config.get_disabled_reason(service)
            return f"its configuration turns it off ({one_line(reason) if reason else f'has_{key}: false'})"
        if not isinstance(conn, Connection):  # a stand-in (tests): its configuration is all there is to ask
            return None
        # read before any proxy is made: openstacksdk may write an override of its own while making one
        override = config.get_endpoint(service)
        if isinstance(config.get_auth(), BaseIdentityPlugin):
            # a catalog (the token's, no call of its own): what openstacksdk would find, without making the proxy
            endpoint = override or config.get_endpoint_from_catalog(service)
            if not endpoint:
                return (
                    f"its catalog lists no {service} endpoint (interface {config.get_interface(service)}, "
                    f"region {config.get_region_name(service) or 'any'})"
                )
            return self._placement_s(service, endpoint)
        return self._why_absent_without_catalog(service, override)

    def _why_absent_without_catalog(self, service: str, override: str | None) -> str | None:
        """A cloud without a service catalog (``admin_token``, ``none``, ``http_basic``): every service is asked
        at its ``<service>_endpoint_override`` or else at the auth's one endpoint, whatever serves there."""
        from keystoneauth1 import exceptions as ksa_exceptions
        from openstack import exceptions as sdk_exceptions

        conn = self.conn
        config = conn.config
        key = service.replace("-", "_")
        auth_type = config.config.get("auth_type") or "?"
        fixed = None if override else getattr(config.get_auth(), "endpoint", None)
        if not override and not fixed:
            return f"it has no service catalog (auth_type {auth_type}) and no {key}_endpoint_override"
        if fixed and self._placement_s(service, fixed):
            return f"it has no service catalog (auth_type {auth_type}), and its one endpoint, {fixed}, is Placement's"
        try:
            proxy = getattr(conn, key)
            endpoint = proxy.get_endpoint()  # a disabled-service stand-in raises here
        except (
            ksa_exceptions.EndpointNotFound,
            sdk_exceptions.ServiceDisabledException,
            sdk_exceptions.NotSupported,
            sdk_exceptions.ServiceDiscoveryException,
        ) as e:
            return f"openstacksdk finds none ({type(e).__name__}: {one_line(e)})"
        kinds = tuple((getattr(getattr(type(conn), key, None), "supported_versions", None) or {}).values())
        if kinds and not isinstance(proxy, kinds):  # openstacksdk's passthrough proxy: no API it knows
            return f"its endpoint {endpoint} offers no {service} API (openstacksdk discovered no version of it)"
        said = self._placement_s(service, endpoint)
        if said or service not in PROBES:
            return said
        answer = proxy.get(PROBES[service], raise_exc=False)
        if answer.status_code == 404:
            return (
                f"it has no service catalog (auth_type {auth_type}), and its endpoint {endpoint} answers "
                f"{PROBES[service]} with 404 (Not Found)"
            )
        return None

    def _placement_s(self, service: str, endpoint: str) -> str | None:
        """Why ``endpoint`` is no ``service``'s: it is Placement's (None: it is not, or the service is Placement)."""
        if service != "placement" and _same_endpoint(endpoint, self._placement_endpoint()):
            return f"its endpoint {endpoint} is Placement's"
        return None

    def _placement_endpoint(self) -> str | None:
        return self.placement.endpoint()


def _same_endpoint(a: str | None, b: str | None) -> bool:
    """Whether two endpoints are one, whatever API version path (``/v2.0``, ``/v2.1``) ends either."""

    def base(url: str) -> str:
        return re.sub(r"/v\d+(\.\d+)?$", "", url.strip().rstrip("/")).rstrip("/").lower()

    return bool(a and b and base(a) == base(b))


def progress_of(cloud: Cloud) -> Progress:
    """The cloud's progress callback, or one that ignores every step."""
    return cloud.progress or (lambda step, done, total: None)
