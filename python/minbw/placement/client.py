"""The one layer that talks to Placement, through openstacksdk's placement proxy.

The only code that builds a Placement URL or chooses the microversion of a call (the
lowest that has what the call needs, named in :mod:`minbw.model.microversions`); every
error answer becomes a :class:`minbw.errors.PlacementError` subclass chosen by
``errors[0].code``.
"""
from __future__ import annotations

import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Iterator, Mapping

from minbw.errors import MicroversionUnsupported, placement_error
from minbw.model import microversions as mv
from minbw.model.providers import Provider, ProviderDetail

READERS = 4  # concurrent provider reads: the client's work and the network overlap the server's

class Placement:
    """Thin verbs over ``conn.placement``; no policy, no retries (callers decide on codes)."""

    def __init__(self, conn):
        self.conn = conn
        self.proxy = conn.placement
        self._max_version: tuple[int, int] | None = None
        self.calls = 0  # HTTP calls sent (for summaries); safe to read from the calling thread
        self.writes = 0
        self._count = threading.Lock()

    # ------------------------------------------------------------ plumbing
    def request(self, method: str, url: str, microversion: str | mv.Microversion, json: Any = None,
                ok=(200, 201, 204), params: Mapping[str, Any] | None = None):
        """One call through the placement proxy at ``microversion``; an error answer raises the
        PlacementError subclass of its ``errors[0].code``. Returns the JSON body (None when empty)."""
        kwargs: dict[str, Any] = {"microversion": mv.format(microversion), "raise_exc": False}
        if json is not None:
            kwargs["json"] = json
        if params:
            kwargs["params"] = params
        with self._count:
            self.calls += 1
            self.writes += method != "get"
        resp = getattr(self.proxy, method)(url, **kwargs)
        if resp.status_code not in ok:
            try:
                body = resp.json()
            except ValueError:
                body = None
            raise placement_error(resp.status_code, body, request_id=resp.headers.get("x-openstack-request-id"),
                                  method=method.upper(), url=url, fallback_message=resp.text[:500])
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    def endpoint(self) -> str:
        return self.proxy.get_endpoint()

    def max_version(self) -> tuple[int, int]:
        if self._max_version is None:
            body = self.request("get", "/", mv.ROOT)
            versions = body.get("versions") or [body.get("version", {})]
            self._max_version = mv.parse(versions[0].get("max_version") or "1.0")
        return self._max_version

    def supports(self, microversion: str | mv.Microversion) -> bool:
        return mv.at_least(self.max_version(), microversion)

    def require(self, microversion: str | mv.Microversion, what: str) -> None:
        if not self.supports(microversion):
            raise MicroversionUnsupported(f"{what} needs Placement microversion {mv.format(microversion)}; "
                                          f"this server offers up to {mv.format(self.max_version())}")

    # ------------------------------------------------------------ providers
    def list_providers(self, **filters: str) -> list[Provider]:
        query = ("?" + urllib.parse.urlencode(filters)) if filters else ""
        version = mv.PROVIDERS_REQUIRED if "required" in filters else mv.PROVIDERS
        body = self.request("get", "/resource_providers" + query, version)
        return [Provider.from_api(p) for p in body["resource_providers"]]

    def provider_names(self, **filters: str) -> dict[str, str]:
        """``{uuid: name}`` of the listed providers (summaries and mappings carry only UUIDs)."""
        return {p.uuid: p.name for p in self.list_providers(**filters)}

    def get_provider(self, uuid: str) -> Provider:
        return Provider.from_api(self.request("get", f"/resource_providers/{uuid}", mv.PROVIDERS))

    def create_provider(self, uuid: str, name: str, parent_uuid: str | None) -> Provider:
        body = {"uuid": uuid, "name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        return Provider.from_api(self.request("post", "/resource_providers", mv.CREATE_RETURNS_BODY, json=body, ok=(200,)))

    def update_provider(self, uuid: str, name: str, parent_uuid: str | None, reparent: bool = False) -> Provider:
        body = {"name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        version = mv.REPARENT if reparent else mv.CREATE_RETURNS_BODY
        return Provider.from_api(self.request("put", f"/resource_providers/{uuid}", version, json=body))

    def delete_provider(self, uuid: str) -> None:
        self.request("delete", f"/resource_providers/{uuid}", mv.PROVIDERS)

    # ------------------------------------------------------------ traits
    def existing_traits(self, names: Iterable[str]) -> set[str]:
        names = sorted(set(names))
        if not names:
            return set()
        body = self.request("get", "/traits?name=in:" + ",".join(names), mv.TRAITS)
        return set(body["traits"])

    def create_trait(self, name: str) -> None:
        self.request("put", f"/traits/{name}", mv.TRAITS)

    def get_provider_traits(self, uuid: str) -> tuple[set[str], int]:
        body = self.request("get", f"/resource_providers/{uuid}/traits", mv.TRAITS)
        return set(body["traits"]), body["resource_provider_generation"]

    def set_provider_traits(self, uuid: str, traits: Iterable[str], generation: int) -> int:
        # at ERROR_CODES: a generation conflict must carry its code (placement.concurrent_update) to be retried
        body = self.request("put", f"/resource_providers/{uuid}/traits", mv.ERROR_CODES,
                          json={"traits": sorted(traits), "resource_provider_generation": generation})
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ aggregates
    def get_provider_aggregates(self, uuid: str) -> tuple[set[str], int]:
        body = self.request("get", f"/resource_providers/{uuid}/aggregates", mv.AGGREGATES)
        return set(body["aggregates"]), body["resource_provider_generation"]

    def set_provider_aggregates(self, uuid: str, aggregates: Iterable[str], generation: int) -> int:
        """Replace a provider's aggregates at ``generation`` (callers add to what they read)."""
        body = self.request("put", f"/resource_providers/{uuid}/aggregates", mv.ERROR_CODES,
                            json={"aggregates": sorted(aggregates), "resource_provider_generation": generation})
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ inventories
    def get_inventories(self, uuid: str) -> tuple[dict[str, dict], int]:
        body = self.request("get", f"/resource_providers/{uuid}/inventories", mv.INVENTORIES)
        return body["inventories"], body["resource_provider_generation"]

    def set_inventories(self, uuid: str, inventories: Mapping[str, Mapping], generation: int) -> int:
        body = self.request("put", f"/resource_providers/{uuid}/inventories", mv.INVENTORIES,
                          json={"inventories": {rc: dict(inv) for rc, inv in inventories.items()},
                                "resource_provider_generation": generation})
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ usage and allocations
    def provider_allocations(self, uuid: str) -> dict[str, dict]:
        body = self.request("get", f"/resource_providers/{uuid}/allocations", mv.PROVIDERS)
        return body["allocations"]

    def provider_usages(self, uuid: str) -> dict[str, int]:
        return self.request("get", f"/resource_providers/{uuid}/usages", mv.PROVIDERS)["usages"]

    # ------------------------------------------------------------ whole providers
    def provider_details(self, providers: Iterable[Provider], *, inventories: bool = True,
                         usages: bool = False, readers: int = READERS) -> Iterator[ProviderDetail]:
        """Traits (and inventories, and usages of providers that have inventories) of each provider,
        read concurrently, yielded in the given order. The one reader of provider trees."""
        def read(p: Provider) -> ProviderDetail:
            traits, gen_t = self.get_provider_traits(p.uuid)
            invs, gen_i = self.get_inventories(p.uuid) if inventories else ({}, gen_t)
            use = (self.provider_usages(p.uuid) if invs else {}) if usages else None
            return ProviderDetail(p, frozenset(traits), invs, use, gen_t == gen_i == p.generation)

        with ThreadPoolExecutor(max_workers=max(1, readers)) as pool:
            yield from pool.map(read, list(providers))

    # ------------------------------------------------------------ allocation candidates
    def allocation_candidates(self, params: Mapping[str, Any], microversion: str | mv.Microversion) -> dict:
        """``GET /allocation_candidates`` with a query built by :mod:`minbw.placement.query`."""
        return self.request("get", "/allocation_candidates", microversion, params=params)

    # ------------------------------------------------------------ consumers' allocations
    def get_allocations(self, consumer: str) -> dict:
        """``{"allocations": {...}, "consumer_generation": n|None, "project_id", "user_id"}``."""
        return self.request("get", f"/allocations/{consumer}", mv.CONSUMER_GENERATIONS)

    def put_allocations(self, consumer: str, body: Mapping[str, Any]) -> None:
        """Replace a consumer's allocations atomically (``consumer_generation`` None: a new consumer).
        A body with ``consumer_type`` is sent at the microversion that knows it."""
        version = mv.CONSUMER_TYPES if body.get("consumer_type") else mv.CONSUMER_GENERATIONS
        self.request("put", f"/allocations/{consumer}", version, json=dict(body))

    def post_allocations(self, bodies: Mapping[str, Mapping[str, Any]]) -> None:
        """``POST /allocations``: several consumers' allocations in one atomic call (moves, swaps)."""
        version = (mv.CONSUMER_TYPES if any(b.get("consumer_type") for b in bodies.values())
                   else mv.CONSUMER_GENERATIONS)
        self.request("post", "/allocations", version, json={c: dict(b) for c, b in bodies.items()})
