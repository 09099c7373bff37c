"""One exception hierarchy for minbw.

Placement errors are classified by ``errors[0].code`` (stable by Placement's
contract), never by message text.
"""
from __future__ import annotations


class MinbwError(Exception):
    """Base of every error minbw raises on purpose."""


class ConfigError(MinbwError, ValueError):
    """Bad agent configuration: the message is Neutron's own where it has one.

    ``option`` names the option, ``source`` the file (or "options").
    """

    def __init__(self, message: str, option: str | None = None, source: str | None = None):
        self.option = option
        self.source = source
        where = ""
        if source and option:
            where = f"{source}: {option}: "
        elif option:
            where = f"{option}: "
        elif source:
            where = f"{source}: "
        super().__init__(where + message)
        self.neutron_message = message


class RequestError(MinbwError, ValueError):
    """A resource request that cannot be built or expressed."""


class PlanError(MinbwError):
    """A desired state that cannot be reached safely (nothing was written)."""


class RootProviderNotFound(PlanError):
    def __init__(self, hypervisor: str, devices: list[str] | None = None):
        self.hypervisor = hypervisor
        devs = f" (for devices {', '.join(sorted(devices))})" if devices else ""
        super().__init__(
            f"No resource provider named {hypervisor!r} in Placement{devs}: the agent providers "
            f"hang under the compute node's root provider, looked up by hypervisor name. Fix: set "
            f"resource_provider_hypervisors / resource_provider_default_hypervisor in the agent's ini file, or "
            f"the agent host (module option 'host' / CLI --host), to the name nova-compute reports (see "
            f"'openstack hypervisor list'), or let minbw create the root with create_root / --create-root."
        )


class PlacementError(MinbwError):
    """An error answer from Placement."""

    code: str | None = None

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 request_id: str | None = None, method: str | None = None, url: str | None = None):
        self.status = status
        if code is not None:
            self.code = code
        self.request_id = request_id
        self.method = method
        self.url = url
        self.detail = message
        where = f"{method} {url}: " if method and url else ""
        tail = []
        if status:
            tail.append(f"status {status}")
        if self.code:
            tail.append(f"code {self.code}")
        if request_id:
            tail.append(f"request {request_id}")
        super().__init__(f"{where}{message}" + (f" ({', '.join(tail)})" if tail else ""))

    def to_dict(self) -> dict:
        return {"msg": self.detail, "status": self.status, "code": self.code,
                "request_id": self.request_id, "method": self.method, "url": self.url}


class ConcurrentUpdate(PlacementError):
    code = "placement.concurrent_update"


class InventoryInUse(PlacementError):
    code = "placement.inventory.inuse"


class DuplicateName(PlacementError):
    code = "placement.duplicate_name"


class ProviderInUse(PlacementError):
    code = "placement.resource_provider.inuse"


class CannotDeleteParent(PlacementError):
    code = "placement.resource_provider.cannot_delete_parent"


class ProviderNotFound(PlacementError):
    code = "placement.resource_provider.not_found"


class UndefinedCode(PlacementError):
    """Placement's catch-all code; also what a 'would exceed capacity' 409 carries."""

    code = "placement.undefined_code"


class NotFound(PlacementError):
    """A 404 without a more specific code."""


class MicroversionUnsupported(MinbwError):
    """The server cannot express a request at any microversion it offers."""


_BY_CODE = {cls.code: cls for cls in (ConcurrentUpdate, InventoryInUse, DuplicateName, ProviderInUse,
                                      CannotDeleteParent, ProviderNotFound, UndefinedCode)}


def placement_error(status: int | None, body: dict | None, *, request_id: str | None = None,
                    method: str | None = None, url: str | None = None,
                    fallback_message: str = "") -> PlacementError:
    """Build the right PlacementError subclass from an error response body."""
    code = None
    message = fallback_message
    errors = (body or {}).get("errors") if isinstance(body, dict) else None
    if errors:
        first = errors[0]
        code = first.get("code")
        message = first.get("detail") or first.get("title") or message
        request_id = request_id or first.get("request_id")
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = NotFound if status == 404 else PlacementError
    return cls(message.strip(), status=status, code=code, request_id=request_id, method=method, url=url)
