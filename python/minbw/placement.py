"""The one layer that talks to Placement, through openstacksdk's placement proxy.

Every call passes an explicit microversion; every error answer becomes a
:class:`minbw.errors.PlacementError` subclass chosen by ``errors[0].code``.
"""
from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from minbw.errors import MicroversionUnsupported, placement_error

# The microversion each kind of call is made at (the lowest that has what we need).
MV_PROVIDERS = "1.14"      # parent/root in provider bodies, in_tree
MV_PROVIDERS_REQUIRED = "1.18"  # the required= trait filter on provider listings
MV_CREATE_BODY = "1.20"    # POST /resource_providers returns the provider (its generation)
MV_TRAITS = "1.6"
MV_INVENTORIES = "1.26"   # reserved may equal total (as Neutron, which uses 1.37)
MV_REPARENT = "1.37"
MV_ALLOCATIONS = "1.28"    # consumer generations


def parse_version(v: str) -> tuple[int, int]:
    major, _, minor = v.partition(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str

    @classmethod
    def from_api(cls, body: Mapping[str, Any]) -> "Provider":
        return cls(uuid=body["uuid"], name=body["name"], generation=body["generation"],
                   parent_uuid=body.get("parent_provider_uuid"),
                   root_uuid=body.get("root_provider_uuid") or body["uuid"])


class Placement:
    """Thin verbs over ``conn.placement``; no policy, no retries (callers decide on codes)."""

    def __init__(self, conn):
        self.conn = conn
        self.proxy = conn.placement
        self._max_version: tuple[int, int] | None = None

    # ------------------------------------------------------------ plumbing
    def request(self, method: str, url: str, microversion: str, json: Any = None, ok=(200, 201, 204),
                params: Mapping[str, Any] | None = None):
        """One call through the placement proxy at ``microversion``; an error answer raises the
        PlacementError subclass of its ``errors[0].code``. Returns the JSON body (None when empty)."""
        kwargs: dict[str, Any] = {"microversion": microversion, "raise_exc": False}
        if json is not None:
            kwargs["json"] = json
        if params:
            kwargs["params"] = params
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
            body = self.request("get", "/", "1.0")
            versions = body.get("versions") or [body.get("version", {})]
            self._max_version = parse_version(versions[0].get("max_version") or "1.0")
        return self._max_version

    def supports(self, microversion: str) -> bool:
        return self.max_version() >= parse_version(microversion)

    def require(self, microversion: str, what: str) -> None:
        if not self.supports(microversion):
            have = "%d.%d" % self.max_version()
            raise MicroversionUnsupported(f"{what} needs Placement microversion {microversion}; this server "
                                          f"offers up to {have}")

    # ------------------------------------------------------------ providers
    def list_providers(self, **filters: str) -> list[Provider]:
        query = ("?" + urllib.parse.urlencode(filters)) if filters else ""
        mv = MV_PROVIDERS_REQUIRED if "required" in filters else MV_PROVIDERS
        body = self.request("get", "/resource_providers" + query, mv)
        return [Provider.from_api(p) for p in body["resource_providers"]]

    def provider_names(self, **filters: str) -> dict[str, str]:
        """``{uuid: name}`` of the listed providers (summaries and mappings carry only UUIDs)."""
        return {p.uuid: p.name for p in self.list_providers(**filters)}

    def get_provider(self, uuid: str) -> Provider:
        return Provider.from_api(self.request("get", f"/resource_providers/{uuid}", MV_PROVIDERS))

    def create_provider(self, uuid: str, name: str, parent_uuid: str | None) -> Provider:
        body = {"uuid": uuid, "name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        return Provider.from_api(self.request("post", "/resource_providers", MV_CREATE_BODY, json=body, ok=(200,)))

    def update_provider(self, uuid: str, name: str, parent_uuid: str | None, reparent: bool = False) -> Provider:
        body = {"name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        mv = MV_REPARENT if reparent else MV_CREATE_BODY
        return Provider.from_api(self.request("put", f"/resource_providers/{uuid}", mv, json=body))

    def delete_provider(self, uuid: str) -> None:
        self.request("delete", f"/resource_providers/{uuid}", MV_PROVIDERS)

    # ------------------------------------------------------------ traits
    def existing_traits(self, names: Iterable[str]) -> set[str]:
        names = sorted(set(names))
        if not names:
            return set()
        body = self.request("get", "/traits?name=in:" + ",".join(names), MV_TRAITS)
        return set(body["traits"])

    def create_trait(self, name: str) -> None:
        self.request("put", f"/traits/{name}", MV_TRAITS)

    def get_provider_traits(self, uuid: str) -> tuple[set[str], int]:
        body = self.request("get", f"/resource_providers/{uuid}/traits", MV_TRAITS)
        return set(body["traits"]), body["resource_provider_generation"]

    def set_provider_traits(self, uuid: str, traits: Iterable[str], generation: int) -> int:
        body = self.request("put", f"/resource_providers/{uuid}/traits", MV_TRAITS,
                          json={"traits": sorted(traits), "resource_provider_generation": generation})
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ inventories
    def get_inventories(self, uuid: str) -> tuple[dict[str, dict], int]:
        body = self.request("get", f"/resource_providers/{uuid}/inventories", MV_INVENTORIES)
        return body["inventories"], body["resource_provider_generation"]

    def set_inventories(self, uuid: str, inventories: Mapping[str, Mapping], generation: int) -> int:
        body = self.request("put", f"/resource_providers/{uuid}/inventories", MV_INVENTORIES,
                          json={"inventories": {rc: dict(inv) for rc, inv in inventories.items()},
                                "resource_provider_generation": generation})
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ usage and allocations
    def provider_allocations(self, uuid: str) -> dict[str, dict]:
        body = self.request("get", f"/resource_providers/{uuid}/allocations", MV_PROVIDERS)
        return body["allocations"]

    def provider_usages(self, uuid: str) -> dict[str, int]:
        return self.request("get", f"/resource_providers/{uuid}/usages", MV_PROVIDERS)["usages"]
