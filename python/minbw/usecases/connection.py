"""What a failed connection means, in one line naming the cloud, its URL and the fix: shared by the CLI
(``--os-*`` options) and the modules (their auth options), which name the options differently (each front end
gives its :class:`OptionNames`)."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import CloudError, PlacementError, PlacementUnavailable

# how long the certificate check of an https endpoint that could not be reached may take
TLS_CHECK_TIMEOUT = 10


@dataclass(frozen=True)
class OptionNames:
    """How the caller spells the options a fix names."""

    cacert: str
    insecure: str
    cloud: str
    auth: str


def where(region) -> tuple[str, str | None]:
    """The cloud being talked to, and its URL (where it authenticates, or its Placement endpoint)."""
    if region is None:
        return "the cloud", None
    auth = region.config.get("auth") or {}
    url = auth.get("auth_url") or auth.get("endpoint") or region.config.get("placement_endpoint_override")
    return f"cloud {region.name!r} ({url or '?'})", url


def _untrusted_certificate(url: str | None, region) -> bool:
    """Whether ``url`` is https and its certificate fails verification as the cloud verifies it
    (keystoneauth's version discovery hides the TLS error behind "unable to find a version document")."""
    import requests

    if not url or not url.startswith("https://") or region is None:
        return False
    verify, _cert = region.get_requests_verify_args()  # False, True or the CA bundle's path
    if verify is False:
        return False
    try:
        requests.head(url, verify=verify, timeout=TLS_CHECK_TIMEOUT)
    except requests.exceptions.SSLError:
        return True
    except requests.exceptions.RequestException:
        return False
    return False


def explain_connection_failure(e: Exception, region, names: OptionNames) -> CloudError | None:
    """A connection or authentication failure as one line naming the cloud and the fix; None for others."""
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack import exceptions as sdk_exceptions

    at, url = where(region)
    if isinstance(e, PlacementUnavailable) and not e.maybe_applied and e.__cause__ is not None:
        e = e.__cause__  # an unreachable endpoint, after the retry policy's tries: explained as before
    if isinstance(e, PlacementError) and e.status in (401, 403):
        said = "rejected the credentials" if e.status == 401 else f"refused the request: {one_line(e.detail)}"
        return CloudError(
            f"{at} {said} (HTTP {e.status}{', request ' + e.request_id if e.request_id else ''}). "
            f"Fix: check the cloud's credentials (password or token, project, domains) in "
            f"{names.auth}; Placement needs an admin"
        )
    if isinstance(e, sdk_exceptions.ConfigException):
        return CloudError(
            f"{one_line(e)}. Fix: name a cloud of clouds.yaml with {names.cloud}, or give the "
            f"auth URL and the credentials ({names.auth})"
        )
    if isinstance(e, ksa_exceptions.Unauthorized):
        return CloudError(
            f"{at} rejected the credentials: {one_line(e)}. Fix: check the cloud's username, "
            f"password or token, project and domains in {names.auth}"
        )
    tls_fix = (
        f"Fix: give the CA bundle that signed it with {names.cacert}; only {names.insecure} turns verification off"
    )
    if isinstance(e, ksa_exceptions.SSLError) or (
        isinstance(e, (ksa_exceptions.ConnectFailure, ksa_exceptions.DiscoveryFailure))
        and _untrusted_certificate(url, region)
    ):
        return CloudError(
            f"{at}: its TLS certificate could not be verified (self-signed, or signed by a CA "
            f"that is not trusted here). {tls_fix}"
        )
    if isinstance(e, (ksa_exceptions.ConnectFailure, ksa_exceptions.ConnectTimeout, ksa_exceptions.DiscoveryFailure)):
        return CloudError(
            f"cannot reach {at}: {one_line(e)}. Fix: check the URL, that the service runs and, "
            f"for https, its CA ({names.cacert}); {names.cloud} picks the cloud"
        )
    if isinstance(e, ksa_exceptions.EndpointNotFound):
        return CloudError(
            f"{at}: {one_line(e)}. Fix: the catalog has no such endpoint; check the region name and the interface"
        )
    if isinstance(e, (ksa_exceptions.ClientException, sdk_exceptions.SDKException)):
        return CloudError(f"{at}: {type(e).__name__}: {one_line(e)}")
    return None


def one_line(text) -> str:
    """``text`` on one line: its whitespace runs made single spaces, a final full stop dropped ("no message" when
    empty)."""
    return " ".join(str(text).split()).rstrip(".") or "no message"
