"""Neutron's segments plugin keeping a segment provider's IPV4_ADDRESS count, run for real: the oracle.

``NovaSegmentNotifier``'s own handlers (``neutron/services/segments/plugin.py``: subnet created, updated,
deleted; port created, updated, deleted) with neutron-lib's ``PlacementAPIClient`` against a real
Placement, so every read and delta write is Neutron's. Stand-ins, for what has no bearing on the count:
Neutron's database where the handlers look a subnet's segment up (``Subnet.get_object``), the segment's
host mappings (none), the core plugin's subnet queries (from the subnets given here), and Nova's
aggregates API (an aggregate is made and hosts added; nothing reads it back). Neutron's batching is
replaced by sending each event as it comes, in order (an error ends that event as it ends Neutron's batch
thread, and is kept in ``errors``), unless a ``batch_interval`` asks for Neutron's own ``BatchNotifier``.
"""
from __future__ import annotations

import itertools
import time
import uuid
from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

from neutron.notifiers import batch_notifier
from neutron.services.segments import plugin as seg_plugin
from neutron_lib.callbacks import events, resources

from tests.support.oracle.neutron_sync import neutron_client


class _NovaAggregates:
    """Nova's os-aggregates as the notifier uses it when it makes a segment's provider."""

    def __init__(self):
        self._ids = itertools.count(1)

    def create(self, name, availability_zone):
        return SimpleNamespace(id=next(self._ids), uuid=str(uuid.uuid4()), name=name)

    def add_host(self, aggregate_id, host):
        return None

    def list(self):
        return []


class _SendNow:
    """The batch notifier without the batch: each event goes at once, through Neutron's own callback."""

    def __init__(self, callback, errors: list):
        self.callback = callback
        self.errors = errors

    def queue_event(self, event):
        try:
            self.callback([event])
        except Exception as e:  # noqa: BLE001 - Neutron's batch thread dies with it; the event is lost
            self.errors.append(e)


class NeutronSegments:
    """A network's subnets as Neutron's segments plugin sees them, and its notifier's events."""

    def __init__(self, placement_url: str, batch_interval: float | None = None):
        self.subnets: dict[str, dict] = {}
        self.errors: list[Exception] = []
        n = seg_plugin.NovaSegmentNotifier.__new__(seg_plugin.NovaSegmentNotifier)
        n.p_client = neutron_client(placement_url, openstack_api_version="placement 1.1")  # as _get_clients
        n.n_client = SimpleNamespace(aggregates=_NovaAggregates())
        if batch_interval is None:
            n.batch_notifier = _SendNow(n._send_notifications, self.errors)
        else:
            def send(events_):  # Neutron's callback; what ends its thread is kept, then ends it
                try:
                    n._send_notifications(events_)
                except Exception as e:
                    self.errors.append(e)
                    raise
            n.batch_notifier = batch_notifier.BatchNotifier(batch_interval, send)
        self.notifier = n

    def drain(self, timeout: float = 30) -> None:
        """Wait until Neutron's batch thread has sent what was queued (with ``batch_interval``)."""
        b = self.notifier.batch_notifier
        deadline = time.monotonic() + timeout
        while not (b._pending_events.empty() and not b._mutex.locked()):
            assert time.monotonic() < deadline, "Neutron's batch notifier did not send its events"
            time.sleep(0.05)

    @contextmanager
    def _neutron_db(self):
        def get_object(context, id):  # noqa: A002 - Neutron's keyword
            s = self.subnets.get(id)
            return SimpleNamespace(id=id, segment_id=s.get("segment_id")) if s else None

        def query(context, filters=None):
            seg, versions = filters["segment_id"], filters["ip_version"]
            return [s for s in self.subnets.values() if s.get("segment_id") in seg and s["ip_version"] in versions]

        core = SimpleNamespace(get_subnets=query,
                               get_subnets_count=lambda context, filters=None: len(query(context, filters)))
        with mock.patch.object(seg_plugin.subnet_obj.Subnet, "get_object", get_object), \
                mock.patch.object(seg_plugin.net_obj.SegmentHostMapping, "get_objects", lambda context, **kw: []), \
                mock.patch.object(seg_plugin.directory, "get_plugin", lambda *a: core):
            yield

    def _send(self, handler, resource, event, *states):
        with self._neutron_db():
            handler(resource, event, None, events.DBEventPayload(None, states=states, metadata={}))

    def subnet_created(self, subnet: dict) -> None:
        self.subnets[subnet["id"]] = subnet
        self._send(self.notifier._notify_subnet_created, resources.SUBNET, events.AFTER_CREATE, subnet)

    def subnet_updated(self, before: dict, after: dict) -> None:
        self.subnets[after["id"]] = after
        self._send(self.notifier._notify_subnet_updated, resources.SUBNET, events.AFTER_UPDATE, before, after)

    def subnet_deleted(self, subnet: dict) -> None:
        del self.subnets[subnet["id"]]
        self._send(self.notifier._notify_subnet_deleted, resources.SUBNET, events.AFTER_DELETE, subnet)

    def port_created(self, port: dict) -> None:
        self._send(self.notifier._notify_port_created_or_deleted, resources.PORT, events.AFTER_CREATE, port)

    def port_updated(self, before: dict, after: dict) -> None:
        self._send(self.notifier._notify_port_updated, resources.PORT, events.AFTER_UPDATE, before, after)

    def port_deleted(self, port: dict) -> None:
        self._send(self.notifier._notify_port_created_or_deleted, resources.PORT, events.AFTER_DELETE, port)
