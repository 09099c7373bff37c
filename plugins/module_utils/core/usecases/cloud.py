"""The cloud a use case works on: its openstacksdk connection (made on first use, so that bad input is refused
before anything is contacted), Placement's client over it, the service user that writes ports' bindings, and
where progress goes."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MissingService

Progress = Callable[[str, int, int], None]  # (step, done, total)
Say = Callable[[str], None]                  # a line about a long run's course (e.g. each host schedule tries)

# What each service is called in errors, and which project serves it.
SERVICES = {"network": "Neutron", "compute": "Nova", "image": "Glance", "placement": "Placement"}


class Cloud:
    """One cloud, as the front end was told to reach it.

    ``connect`` makes the openstacksdk Connection (the CLI from the ``--os-*`` options, a module from its auth
    options); ``service_connect`` the connection of the service user that may write ports' ``binding:profile``
    (None: the same user); ``placement_version`` caps Placement's microversions (``--os-placement-api-version``);
    ``progress`` is told how long runs advance, ``say`` what they try.
    """

    def __init__(self, connect: Callable[[], Any], *, service_connect: Callable[[], Any] | None = None,
                 progress: Progress | None = None, say: Say | None = None, placement_version: str | None = None,
                 cache: str | None = None, workers: int = 4):
        self._connect = connect
        self._service_connect = service_connect
        self.progress = progress
        self.say = say
        self.placement_version = placement_version
        self.cache = cache      # the provider cache the reports trust: a file, "" the default one, None none
        self.workers = workers  # providers the reports read at once
        self._conn = None
        self._placement = None

    @property
    def conn(self):
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    @property
    def placement(self):
        """The Placement client (:class:`minbw.placement.client.Placement`) over :attr:`conn`."""
        if self._placement is None:
            from ..placement.client import Placement
            self._placement = Placement(self.conn, max_microversion=self.placement_version)
        return self._placement

    def reader(self):
        """The reports' reader of Placement (:class:`minbw.reports.reader.Reader`), with the provider cache when
        :attr:`cache` names one (the sync's file by default), ``workers`` reads at once, and the progress."""
        from ..reports.reader import ProviderCache, Reader, default_cache_path
        api = self.placement
        cache = None
        if self.cache is not None:
            cache = ProviderCache(self.cache or default_cache_path(api.endpoint()), api.endpoint())
        return Reader(api, cache, workers=self.workers, progress=self.progress)

    def service_conn(self):
        """The connection that writes ports' ``binding:profile`` (Neutron allows it to the service role)."""
        return self._service_connect() if self._service_connect is not None else self.conn

    def has(self, service: str) -> bool:
        """Whether the cloud's configuration offers ``service`` (no call is made: a cloud that lacks one in its
        catalog fails on first use, which the front ends explain)."""
        return bool(self.conn.config.has_service(service))

    def require(self, service: str, needed_by: str, fix: str = "") -> None:
        """Refuse, naming the service and what needed it, when the cloud has no ``service`` (e.g. the embedded
        Placement, which is a cloud of Placement alone)."""
        if not self.has(service):
            name = getattr(self.conn.config, "name", None)
            raise MissingService(service, SERVICES.get(service, service), needed_by,
                                 f"cloud {name!r}" if name else "the cloud", fix)


def progress_of(cloud: Cloud) -> Progress:
    """The cloud's progress callback, or one that ignores every step."""
    return cloud.progress or (lambda step, done, total: None)
