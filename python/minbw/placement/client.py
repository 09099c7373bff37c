"""The one layer that talks to Placement, through openstacksdk's placement proxy.

The only code that builds a Placement URL or chooses the microversion of a call (the
lowest that has what the call needs, named in :mod:`minbw.model.microversions`); every
error answer becomes a :class:`minbw.errors.PlacementError` subclass chosen by
``errors[0].code``.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import random
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from minbw.errors import (
    DuplicateName,
    InvalidInput,
    MicroversionUnsupported,
    NotFound,
    PlacementError,
    PlacementUnavailable,
    ProviderNotFound,
    placement_error,
)
from minbw.model import microversions
from minbw.model.providers import Provider, ProviderDetail

READERS = 4  # concurrent provider reads: the client's work and the network overlap the server's
_GONE = object()  # a provider read with missing_ok that Placement no longer has
TRANSIENT_STATUS = (502, 503, 504)  # the front (or Placement) could not answer now: try again
# Placement failed inside the call: on Galera a transaction that fails certification at commit (MySQL error 1213)
# or a database node lost mid-query (2013) answers 500; the write may or may not have committed: re-read, try again
SERVER_ERROR = 500
DEFAULT_TIMEOUT = 60.0  # seconds per call when neither the policy nor the cloud's api_timeout sets one


def holds(now: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether ``now`` (a consumer's ``GET /allocations/{consumer}``) already holds what ``body`` (its PUT's body)
    writes: the same resources on the same providers, for the same project and user."""
    have = {rp: dict(a["resources"]) for rp, a in (now.get("allocations") or {}).items()}
    want = {rp: dict(a["resources"]) for rp, a in (body.get("allocations") or {}).items()}
    return have == want and all(now.get(k) == body[k] for k in ("project_id", "user_id") if want and body.get(k))


def _server_error(error: PlacementError, status: int) -> str:
    """A 500's part of a retry's message, on one line: its code first (never cut), then Placement's detail with its
    line breaks folded (a 500 of a database down holds one) and cut at 240 characters."""
    detail = " ".join(error.detail.split())
    if len(detail) > 240:
        detail = detail[:239] + "…"
    return f"answered {status}" + (f" ({error.code})" if error.code else "") + f": {detail}"


def _reread(converged: Callable[[], Any], method: str, url: str, tries: int) -> tuple[Any] | None:
    """``converged()`` for a write whose answer was lost, as ``(answer,)`` when the write is there, else None.
    A re-read without a usable answer is the write's failure, which may have been applied (PlacementUnavailable
    with ``maybe_applied``), not the read's own, whose "nothing was written by this call" is about the read; an
    error answer to the re-read (its code) is raised as it is."""
    try:
        done = converged()
    except PlacementUnavailable as e:
        raise PlacementUnavailable(
            f"its answer was lost, and re-reading Placement to find it got no usable answer either ({e.method} "
            f"{e.url}: {e.why})",
            status=e.status,
            method=method.upper(),
            url=url,
            tries=tries,
            maybe_applied=True,
        ) from e
    return None if done is None else (done,)


def _failure(e: Exception, timeout: float | None) -> str:
    """One line for a try that got no answer. keystoneauth raises ConnectTimeout for every timeout, the read
    timeout too (Placement took the request and did not answer in time), so its name alone misleads."""
    from keystoneauth1.exceptions import ConnectTimeout

    if isinstance(e, ConnectTimeout):
        return f"no answer within {timeout:g} s ({e})" if timeout else f"timed out ({e})"
    return f"{type(e).__name__}: {e}"


def _provider_or_link(obj: dict) -> Any:
    """One JSON object of a provider listing as it is decoded: a provider becomes its :class:`Provider`, a link
    (``rel``, ``href``) nothing, anything else stays as it is."""
    if "uuid" in obj and "generation" in obj and "name" in obj:
        return Provider.from_api(obj)
    if "rel" in obj and "href" in obj:
        return None
    return obj


def providers_of(content: str | bytes) -> dict[str, Any]:
    """A ``GET /resource_providers`` answer (its text) with each provider made a :class:`Provider` as soon as its
    JSON object is decoded, its links dropped: the listing of 70,000 providers (10,000 hosts, about 55 MiB of JSON)
    is never held as dicts. Raises ValueError (json.JSONDecodeError) for a body that is not JSON."""
    return json.loads(content, object_hook=_provider_or_link)


# Bytes of an answer read at once when it is decoded as it is read (:func:`providers_read`).
READ_AT_ONCE = 1 << 20
_LISTING_HEAD = re.compile(r'\s*\{\s*"resource_providers"\s*:\s*\[')
_SPACE = re.compile(r"\s*")


def providers_read(chunks: Iterable[bytes]) -> dict[str, Any] | None:
    """:func:`providers_of` of the answer whose bytes ``chunks`` yields, decoded as they come: a listing that starts
    as Placement's do (``{"resource_providers": [``) has its providers made one JSON object at a time from the text
    read so far (about :data:`READ_AT_ONCE` bytes more each time), so the answer is never held whole, as bytes or as
    text (at 10,000 hosts 55 MiB of each); any other answer is decoded whole. The same result as
    :func:`providers_of` of the whole text; None for an empty answer. Raises ValueError (json.JSONDecodeError) for
    a body that is not JSON."""
    text = codecs.getincrementaldecoder("utf-8")()  # JSON is UTF-8 (RFC 8259)
    chunks = iter(chunks)
    buffer, done = "", False

    def more() -> None:
        nonlocal buffer, done
        chunk = next(chunks, None)
        buffer += text.decode(b"" if chunk is None else chunk, final=chunk is None)
        done = chunk is None

    while not (head := _LISTING_HEAD.match(buffer)) and len(buffer) < 256 and not done:
        more()
    if head is None:  # not a listing as Placement writes it: decoded whole
        while not done:
            more()
        return providers_of(buffer) if buffer.strip() else None
    decoder = json.JSONDecoder(object_hook=_provider_or_link)
    providers: list[Any] = []
    at, after_one = head.end(), False  # after_one: a provider decoded, its comma (or the array's end) next
    while True:
        at = _SPACE.match(buffer, at).end()  # type: ignore[union-attr]  # \s* always matches
        if at < len(buffer):
            if buffer[at] == "]" and (after_one or not providers):
                break
            if after_one:
                if buffer[at] != ",":
                    raise json.JSONDecodeError("Expecting ',' delimiter", buffer, at)
                at, after_one = at + 1, False
                continue
            try:
                provider, end = decoder.raw_decode(buffer, at)
            except json.JSONDecodeError:
                if done:
                    raise
            else:
                if end < len(buffer) or done:  # a value at the text's end may go on in the next chunk
                    providers.append(provider)
                    at, after_one = end, True
                    continue
        if done:
            raise json.JSONDecodeError("Unterminated provider listing", buffer, len(buffer))
        buffer, at = buffer[at:], 0  # what was decoded let go
        more()
    rest, buffer = buffer[at + 1 :], ""
    while not done:
        more()
    # what follows the providers' array, decoded with an empty array in its place
    out = providers_of('{"resource_providers": []' + rest + buffer)
    out["resource_providers"] = providers
    return out


def _error_of(resp, method: str | None = None, url: str | None = None):
    """The PlacementError an error answer carries (its JSON body's first error, else its text)."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    return placement_error(
        resp.status_code,
        body,
        request_id=resp.headers.get("x-openstack-request-id"),
        method=method,
        url=url,
        fallback_message=resp.text[:500],
    )


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry policy of every Placement call (docs/reliability.md).

    A call that got no usable answer — connection refused or reset, no answer within ``timeout``,
    a 502/503/504, or a 500 (Placement failed inside the call: on Galera, a commit that failed certification
    or a database node lost mid-query) — is tried again, ``attempts`` tries in all, waiting ``backoff`` seconds
    doubled after each try (at most ``max_backoff``, jittered down to half). Every write minbw makes
    is safe to repeat (a PUT carries the generation it read, a POST names its provider's or
    consumer's UUID), and a write whose answer was lost is first re-read: if Placement already holds
    what it wrote, the call is done (a provider created before a reset and answered 409 duplicate
    on the retry is read back, not reported as a failure). A generation conflict
    (``placement.concurrent_update``) is the callers' to retry — they re-read the generation —
    waiting :meth:`pause` ``(n, conflict=True)``: ``conflict_backoff`` seconds times n, jittered.

    Defaults, or the environment: ``MINBW_PLACEMENT_ATTEMPTS``, ``MINBW_PLACEMENT_BACKOFF``,
    ``MINBW_PLACEMENT_MAX_BACKOFF``, ``MINBW_PLACEMENT_TIMEOUT`` (unset: the cloud's
    ``api_timeout``, else 60 s).
    """

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    timeout: float | None = None
    conflict_backoff: float = 0.05
    overcommit_backoff: float = 0.2

    ENV = {
        "attempts": "MINBW_PLACEMENT_ATTEMPTS",
        "backoff": "MINBW_PLACEMENT_BACKOFF",
        "max_backoff": "MINBW_PLACEMENT_MAX_BACKOFF",
        "timeout": "MINBW_PLACEMENT_TIMEOUT",
    }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "RetryPolicy":
        """The policy with the defaults replaced by the ``MINBW_PLACEMENT_*`` variables set in ``environ`` (default:
        os.environ; empty ones are unset). Raises InvalidInput naming the variable when its value is not a number in
        range."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, var in cls.ENV.items():
            text = environ.get(var)
            if text is None or text == "":
                continue
            try:
                value = int(text) if name == "attempts" else float(text)
            except ValueError:
                value = None
            if value is None or value < (1 if name == "attempts" else 0) or (name == "timeout" and value == 0):
                wanted = {"attempts": "whole number >= 1", "timeout": "number > 0"}.get(name, "number >= 0")
                raise InvalidInput(
                    f"{var}={text!r}: expected a {wanted}"
                    f" (the Placement retry policy, docs/reliability.md); unset it for the default"
                )
            values[name] = value
        return cls(**values)

    def pause(self, attempt: int, conflict: bool = False, overcommit: bool = False) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` >= 1 tries failed). ``overcommit``: after
        undoing a claim Placement accepted over capacity (racing claimers undo at once; the wider jitter
        spreads their next tries): uniform in [0, ``overcommit_backoff`` × attempt]."""
        if overcommit:
            return random.uniform(0, self.overcommit_backoff * attempt)
        if conflict:
            return random.uniform(0, self.conflict_backoff * attempt)
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


class Placement:
    """Thin verbs over ``conn.placement``; transport retries by :class:`RetryPolicy`, no other policy
    (callers decide on codes)."""

    def __init__(
        self,
        conn,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_microversion: str | microversions.Microversion | None = None,
    ):
        """``max_microversion`` (``--os-placement-api-version``): no call above it is sent; a call that needs
        more is refused naming the pin, and the candidates query uses at most it."""
        self.conn = conn
        self.proxy = conn.placement
        self._max_version: tuple[int, int] | None = None
        self.pinned = None if max_microversion is None else microversions.parse(max_microversion)
        self.retry = retry or RetryPolicy.from_env()
        self.sleep = sleep
        self.retried = 0  # calls tried again after no usable answer
        self.converged = 0  # writes whose answer was lost, found applied when re-read
        session_timeout = getattr(getattr(conn, "session", None), "timeout", None)
        self.timeout = self.retry.timeout or session_timeout or DEFAULT_TIMEOUT
        self.calls = 0  # HTTP calls sent (for summaries); safe to read from the calling thread
        self.writes = 0
        self._count = threading.Lock()
        self._readers: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------ plumbing
    def request(
        self,
        method: str,
        url: str,
        microversion: str | microversions.Microversion,
        json: Any = None,
        ok=(200, 201, 204),
        params: Mapping[str, Any] | None = None,
        converged: Callable[[], Any] | None = None,
        decode: Callable[[str], Any] | None = None,
        read: Callable[[Iterator[bytes]], Any] | None = None,
    ):
        """One call through the placement proxy at ``microversion``, tried again by :attr:`retry` when no
        usable answer came; an error answer raises the PlacementError subclass of its ``errors[0].code``.
        Returns the JSON body (None when empty), or what ``decode`` makes of a successful answer's text (its
        bytes freed first), or what ``read`` makes of a successful answer's bytes as they are read (the answer
        streamed, :data:`READ_AT_ONCE` bytes at a time: never held whole).

        ``converged`` (writes): re-reads Placement and returns what the write's answer would have been
        when what it writes is already there, else None. It is asked before trying again a write whose
        answer was lost, and before raising an error answer to such a retry (a 409: our own lost write).
        """
        from keystoneauth1.exceptions import RetriableConnectionFailure
        import requests.exceptions

        if self.pinned is not None and microversions.parse(microversion) > self.pinned:
            raise MicroversionUnsupported(
                f"{method.upper()} {url.split('?')[0]} needs Placement microversion "
                f"{microversions.format(microversion)}, above the {microversions.format(self.pinned)} that "
                f"--os-placement-api-version (OS_PLACEMENT_API_VERSION) pins. "
                f"Fix: pin {microversions.format(microversion)} or more, or leave the pin out"
            )
        kwargs: dict[str, Any] = {
            "microversion": microversions.format(microversion),
            "raise_exc": False,
            "timeout": self.timeout,
            "connect_retries": 0,
            "status_code_retries": 0,
        }
        if json is not None:
            kwargs["json"] = json
        if params:
            kwargs["params"] = params
        if read is not None:
            kwargs["stream"] = True
        uncertain = False  # an earlier try of this write may have been applied
        why = ""
        status = None
        last: Exception | None = None
        for attempt in range(1, self.retry.attempts + 1):
            if attempt > 1:
                self._bump("retried")
                self.sleep(self.retry.pause(attempt - 1))
                if uncertain and converged is not None and (done := _reread(converged, method, url, attempt - 1)):
                    self._bump("converged")
                    return done[0]
            self._bump("calls")
            if method != "get":
                self._bump("writes")
            try:
                resp = getattr(self.proxy, method)(url, **kwargs)
            except RetriableConnectionFailure as e:
                why, status, uncertain, last = _failure(e, self.timeout), None, uncertain or method != "get", e
                continue
            if resp.status_code in TRANSIENT_STATUS:
                resp.close()  # (a streamed answer's connection given back unread)
                why, status = f"answered {resp.status_code} {resp.reason or ''}".rstrip(), resp.status_code
                uncertain = uncertain or method != "get"
                continue
            if resp.status_code == SERVER_ERROR:
                why, status = _server_error(_error_of(resp), resp.status_code), resp.status_code
                uncertain = uncertain or method != "get"
                continue
            if resp.status_code not in ok:
                error = _error_of(resp, method=method.upper(), url=url)
                if uncertain and converged is not None and (done := _reread(converged, method, url, attempt)):
                    self._bump("converged")
                    return done[0]
                error.after_lost_answer = uncertain
                raise error
            if read is not None:
                try:
                    return None if resp.status_code == 204 else read(resp.iter_content(READ_AT_ONCE))
                except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as e:
                    # the answer cut (reset, timed out) while it was read
                    why, status, last = _failure(e, self.timeout), None, e
                    uncertain = uncertain or method != "get"
                    continue
                finally:
                    resp.close()
            if resp.status_code == 204 or not resp.content:
                return None
            if decode is None:
                return resp.json()
            text = resp.content.decode("utf-8")  # JSON is UTF-8 (RFC 8259)
            del resp  # the body's bytes are freed before ``decode`` makes its objects: a listing of 70,000
            return decode(text)  # providers is 55 MiB of JSON, which was held twice (bytes and text) while decoded
        raise PlacementUnavailable(
            why, status=status, method=method.upper(), url=url, tries=self.retry.attempts, maybe_applied=uncertain
        ) from (last if status is None else None)

    def _bump(self, counter: str) -> None:
        with self._count:  # the sync's reader/writer threads share this client
            setattr(self, counter, getattr(self, counter) + 1)

    def endpoint(self) -> str:
        """Placement's endpoint URL, as the placement proxy finds it, without a trailing ``/`` (openstacksdk's proxy
        adds one after its version discovery, :mod:`minbw.placement.connection` makes none): one string per
        Placement, whichever made the connection (the provider cache's file is named after it)."""
        return self.proxy.get_endpoint().rstrip("/")

    def max_version(self) -> tuple[int, int]:
        """The newest microversion calls may use: the server's (``GET /``, read once), at most the pin. Errors as
        :meth:`request`."""
        if self._max_version is None:
            body = self.request("get", "/", microversions.ROOT)
            versions = body.get("versions") or [body.get("version", {})]
            self._max_version = self._server_max = microversions.parse(versions[0].get("max_version") or "1.0")
            if self.pinned is not None:
                self._max_version = min(self._max_version, self.pinned)
        return self._max_version

    def server_max_version(self) -> tuple[int, int]:
        """The newest microversion the server answers, whatever the pin (``--os-placement-api-version``)."""
        self.max_version()
        return self._server_max

    def pin_limits(self) -> bool:
        """Whether the pinned microversion, rather than the server, sets :meth:`max_version`."""
        self.max_version()
        return self.pinned is not None and self._server_max > self.pinned

    def supports(self, microversion: str | microversions.Microversion) -> bool:
        """Whether :meth:`max_version` is ``microversion`` or later. Errors as :meth:`request`."""
        return microversions.at_least(self.max_version(), microversion)

    def require(self, microversion: str | microversions.Microversion, what: str) -> None:
        """None when :meth:`max_version` reaches ``microversion``. Raises MicroversionUnsupported naming ``what`` and
        the server's newest microversion (at most the pin) otherwise."""
        if not self.supports(microversion):
            raise MicroversionUnsupported(
                f"{what} needs Placement microversion {microversions.format(microversion)}; "
                f"this server offers up to {microversions.format(self.max_version())}"
            )

    # ------------------------------------------------------------ providers
    def list_providers(self, **filters: str) -> list[Provider]:
        """The providers ``filters`` select (Placement's query parameters: ``name``, ``in_tree``, ``required``, ...), at
        the microversion they need (1.18 for ``required``, 1.22 with a forbidden trait). Errors as :meth:`request`."""
        query = ("?" + urllib.parse.urlencode(filters)) if filters else ""
        version = microversions.PROVIDERS
        if "required" in filters:
            version = (
                microversions.PROVIDERS_FORBIDDEN if "!" in filters["required"] else microversions.PROVIDERS_REQUIRED
            )
        body = self.request("get", "/resource_providers" + query, version, read=providers_read)
        return list(body["resource_providers"])

    def provider_names(self, **filters: str) -> dict[str, str]:
        """``{uuid: name}`` of the listed providers (summaries and mappings carry only UUIDs)."""
        return {p.uuid: p.name for p in self.list_providers(**filters)}

    def get_provider(self, uuid: str) -> Provider:
        """The provider ``uuid``. Raises NotFound when Placement has none; otherwise errors as :meth:`request`."""
        return Provider.from_api(self.request("get", f"/resource_providers/{uuid}", microversions.PROVIDERS))

    def _provider_as(self, uuid: str, name: str, parent_uuid: str | None) -> dict | None:
        """The provider's body when it exists with this name and parent (a write of ours already there)."""
        try:
            body = self.request("get", f"/resource_providers/{uuid}", microversions.PROVIDERS)
        except NotFound:
            return None
        return body if (body["name"], body.get("parent_provider_uuid")) == (name, parent_uuid or None) else None

    def create_provider(self, uuid: str, name: str, parent_uuid: str | None) -> Provider:
        """Create a provider; one that already exists as asked (our own create whose answer was lost, or a
        concurrent sync's) is read back and returned, not reported as a duplicate."""
        body = {"uuid": uuid, "name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid

        def same():
            return self._provider_as(uuid, name, parent_uuid)

        try:
            # at ERROR_CODES (>= CREATE_RETURNS_BODY): a duplicate carries its code (placement.duplicate_name)
            created = self.request(
                "post", "/resource_providers", microversions.ERROR_CODES, json=body, ok=(200,), converged=same
            )
        except DuplicateName:
            created = same()
            if created is None:
                raise
            self._bump("converged")
        return Provider.from_api(created)

    def update_provider(self, uuid: str, name: str, parent_uuid: str | None, reparent: bool = False) -> Provider:
        """Set provider ``uuid``'s name and parent; returns it as Placement answers. ``reparent``: sent at 1.37,
        which lets an existing parent change (MicroversionUnsupported under a lower pin). A lost answer is re-read:
        the provider already as asked counts as written. Errors as :meth:`request`."""
        body = {"name": name}
        if parent_uuid:
            body["parent_provider_uuid"] = parent_uuid
        version = microversions.REPARENT if reparent else microversions.CREATE_RETURNS_BODY
        return Provider.from_api(
            self.request(
                "put",
                f"/resource_providers/{uuid}",
                version,
                json=body,
                converged=lambda: self._provider_as(uuid, name, parent_uuid),
            )
        )

    def delete_provider(self, uuid: str) -> None:
        """Delete provider ``uuid``; a lost answer is re-read (the provider gone counts as deleted). Returns None.
        Raises ProviderInUse (it has allocations), CannotDeleteParent (it has children), NotFound; otherwise as
        :meth:`request`."""

        def gone() -> dict | None:
            try:
                self.request("get", f"/resource_providers/{uuid}", microversions.PROVIDERS)
            except NotFound:
                return {}
            return None

        self.request("delete", f"/resource_providers/{uuid}", microversions.PROVIDERS, converged=gone)

    # ------------------------------------------------------------ traits
    def existing_traits(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` exist in Placement, as a set (none asked: an empty set, no call). Errors as
        :meth:`request`."""
        names = sorted(set(names))
        if not names:
            return set()
        body = self.request("get", "/traits?name=in:" + ",".join(names), microversions.TRAITS)
        return set(body["traits"])

    def create_trait(self, name: str) -> None:
        """Create the trait ``name`` (a PUT: one that exists is left as it is). Returns None. Errors as
        :meth:`request`."""
        self.request("put", f"/traits/{name}", microversions.TRAITS)

    def get_provider_traits(self, uuid: str) -> tuple[set[str], int]:
        """``(traits, provider generation)`` of provider ``uuid``. Errors as :meth:`request` (a 404: NotFound or
        ProviderNotFound)."""
        body = self.request("get", f"/resource_providers/{uuid}/traits", microversions.TRAITS)
        return set(body["traits"]), body["resource_provider_generation"]

    def set_provider_traits(self, uuid: str, traits: Iterable[str], generation: int) -> int:
        # at ERROR_CODES: a generation conflict must carry its code (placement.concurrent_update) to be retried
        """Replace provider ``uuid``'s traits at ``generation``; returns its new generation. A lost answer is re-read:
        the traits already as asked count as written. Raises ConcurrentUpdate when the generation moved; otherwise as
        :meth:`request`."""
        return self._replace_set(uuid, "traits", microversions.TRAITS, traits, generation)

    # ------------------------------------------------------------ aggregates
    def get_provider_aggregates(self, uuid: str) -> tuple[set[str], int]:
        """``(aggregate uuids, provider generation)`` of provider ``uuid``. Errors as :meth:`request`."""
        body = self.request("get", f"/resource_providers/{uuid}/aggregates", microversions.AGGREGATES)
        return set(body["aggregates"]), body["resource_provider_generation"]

    def set_provider_aggregates(self, uuid: str, aggregates: Iterable[str], generation: int) -> int:
        """Replace a provider's aggregates at ``generation`` (callers add to what they read)."""
        return self._replace_set(uuid, "aggregates", microversions.AGGREGATES, aggregates, generation)

    def _replace_set(
        self, uuid: str, key: str, read_version: microversions.Microversion, values: Iterable[str], generation: int
    ) -> int:
        """PUT provider ``uuid``'s ``key`` (traits, aggregates) as ``values`` at ``generation``; a lost answer is
        re-read (at ``read_version``) and the set already as asked counts as written. Returns the new generation."""
        wanted = set(values)

        def same() -> dict | None:
            now = self.request("get", f"/resource_providers/{uuid}/{key}", read_version)
            return now if set(now[key]) == wanted else None

        body = self.request(
            "put",
            f"/resource_providers/{uuid}/{key}",
            microversions.ERROR_CODES,
            json={key: sorted(wanted), "resource_provider_generation": generation},
            converged=same,
        )
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ inventories
    def get_inventories(self, uuid: str) -> tuple[dict[str, dict], int]:
        """``(inventories by class as Placement returns them, provider generation)`` of provider ``uuid``. Errors as
        :meth:`request` (a 404: NotFound or ProviderNotFound)."""
        body = self.request("get", f"/resource_providers/{uuid}/inventories", microversions.INVENTORIES)
        return body["inventories"], body["resource_provider_generation"]

    def set_inventories(self, uuid: str, inventories: Mapping[str, Mapping], generation: int) -> int:
        """Replace provider ``uuid``'s inventories at ``generation``; returns its new generation. A lost answer is
        re-read: inventories already holding the given fields count as written. Raises ConcurrentUpdate when the
        generation moved, InventoryInUse when a class with allocations would go; otherwise as :meth:`request`."""
        wanted = {rc: dict(inv) for rc, inv in inventories.items()}

        def same() -> dict | None:
            now = self.request("get", f"/resource_providers/{uuid}/inventories", microversions.INVENTORIES)
            have = now["inventories"]
            fits = set(have) == set(wanted) and all(
                have[rc].get(k) == v for rc, inv in wanted.items() for k, v in inv.items()
            )
            return now if fits else None

        body = self.request(
            "put",
            f"/resource_providers/{uuid}/inventories",
            microversions.INVENTORIES,
            json={"inventories": wanted, "resource_provider_generation": generation},
            converged=same,
        )
        return body["resource_provider_generation"]

    # ------------------------------------------------------------ usage and allocations
    def provider_allocations(self, uuid: str, with_generation: bool = False) -> dict[str, Any]:
        """consumer → ``{"resources": ...}``; ``with_generation``: the whole body (with
        ``resource_provider_generation``)."""
        body = self.request("get", f"/resource_providers/{uuid}/allocations", microversions.PROVIDERS)
        return body if with_generation else body["allocations"]

    def provider_usages(self, uuid: str) -> dict[str, int]:
        """``{class: used}`` of provider ``uuid``. Errors as :meth:`request` (a 404: NotFound or ProviderNotFound)."""
        return self.request("get", f"/resource_providers/{uuid}/usages", microversions.PROVIDERS)["usages"]

    def usages_of(
        self, uuids: Iterable[str], readers: int = READERS, *, missing_ok: bool = False
    ) -> dict[str, dict[str, int]]:
        """``{rp: usages}`` of several providers, read concurrently (a write's verification: minbw.ops.verify).
        ``missing_ok``: a provider deleted meanwhile is left out (a report over many), instead of raising."""
        uuids = list(dict.fromkeys(uuids))
        read = self._tolerant(self.provider_usages) if missing_ok else self.provider_usages
        if len(uuids) <= 1:
            found = {u: read(u) for u in uuids}
        elif len(uuids) <= min(readers, READERS):
            # a claim's verification (a few providers): the kept pool reads all but the first, this thread the
            # first, so the reads overlap without a thread started per call
            rest = [self._pool().submit(read, u) for u in uuids[1:]]
            first = read(uuids[0])
            found = {uuids[0]: first, **{u: f.result() for u, f in zip(uuids[1:], rest)}}
        else:
            with ThreadPoolExecutor(max_workers=max(1, readers)) as pool:
                found = dict(zip(uuids, pool.map(read, uuids)))
        return {u: v for u, v in found.items() if v is not _GONE}

    def _pool(self) -> ThreadPoolExecutor:
        """The client's own reader threads (READERS - 1 at most, started once, on first use, and kept: a verified
        claim reads its providers' usages through them instead of starting threads per claim)."""
        with self._count:
            if self._readers is None:
                self._readers = ThreadPoolExecutor(max_workers=READERS - 1, thread_name_prefix="placement-reader")
            return self._readers

    @staticmethod
    def _tolerant(read: Callable):
        """``read(provider)``, or :data:`_GONE` when Placement says the provider is not there (any more)."""

        def tolerant(p):
            try:
                return read(p)
            except (ProviderNotFound, NotFound):
                return _GONE

        return tolerant

    # ------------------------------------------------------------ whole providers
    def provider_details(
        self,
        providers: Iterable[Provider],
        *,
        inventories: bool = True,
        usages: bool = False,
        readers: int = READERS,
        traits: bool = True,
        missing_ok: bool = False,
        allocations: bool = False,
    ) -> Iterator[ProviderDetail]:
        """Traits (and inventories, and usages and allocations of providers that have inventories) of each provider,
        read concurrently, yielded in the given order. The one reader of provider trees. ``traits`` False:
        not read (empty). ``allocations``: each provider's allocations, read after its inventories (empty, not read,
        for a provider without inventories: Placement refuses allocations of a class without inventory and the
        removal of an inventory that holds allocations). ``missing_ok``: a provider deleted since it was listed is
        left out, instead of raising (one provider gone costs that provider only)."""
        want_traits, want_allocations = traits, allocations

        def read(p: Provider) -> ProviderDetail:
            traits, gen_t = self.get_provider_traits(p.uuid) if want_traits else (set(), p.generation)
            invs, gen_i = self.get_inventories(p.uuid) if inventories else ({}, gen_t)
            use = (self.provider_usages(p.uuid) if invs else {}) if usages else None
            allocs, gen_a = None, gen_i
            if want_allocations:
                body = self.provider_allocations(p.uuid, with_generation=True) if invs else {"allocations": {}}
                allocs, gen_a = body["allocations"], body.get("resource_provider_generation", gen_i)
            return ProviderDetail(p, frozenset(traits), invs, use, gen_t == gen_i == gen_a == p.generation, allocs)

        with ThreadPoolExecutor(max_workers=max(1, readers)) as pool:
            for d in pool.map(self._tolerant(read) if missing_ok else read, list(providers)):
                if d is not _GONE:
                    yield d

    # ------------------------------------------------------------ allocation candidates
    def allocation_candidates(self, params: Mapping[str, Any], microversion: str | microversions.Microversion) -> dict:
        """``GET /allocation_candidates`` with a query built by :mod:`minbw.placement.query`."""
        return self.request("get", "/allocation_candidates", microversion, params=params)

    # ------------------------------------------------------------ consumers' allocations
    def get_allocations(self, consumer: str) -> dict:
        """``{"allocations": {...}, "consumer_generation": n|None, "project_id", "user_id"}``."""
        return self.request("get", f"/allocations/{consumer}", microversions.CONSUMER_GENERATIONS)

    def put_allocations(self, consumer: str, body: Mapping[str, Any]) -> None:
        """Replace a consumer's allocations atomically (``consumer_generation`` None: a new consumer).
        A body with ``consumer_type`` is sent at the microversion that knows it."""
        version = microversions.CONSUMER_TYPES if body.get("consumer_type") else microversions.CONSUMER_GENERATIONS
        self.request(
            "put",
            f"/allocations/{consumer}",
            version,
            json=dict(body),
            converged=lambda: {} if self._holds(consumer, body) else None,
        )

    def post_allocations(self, bodies: Mapping[str, Mapping[str, Any]]) -> None:
        """``POST /allocations``: several consumers' allocations in one atomic call (moves, swaps)."""
        version = (
            microversions.CONSUMER_TYPES
            if any(b.get("consumer_type") for b in bodies.values())
            else microversions.CONSUMER_GENERATIONS
        )
        self.request(
            "post",
            "/allocations",
            version,
            json={c: dict(b) for c, b in bodies.items()},
            converged=lambda: {} if all(self._holds(c, b) for c, b in bodies.items()) else None,
        )

    def _holds(self, consumer: str, body: Mapping[str, Any]) -> bool:
        """Whether the consumer's allocations are already the ones ``body`` writes (a lost answer's write)."""
        return holds(self.get_allocations(consumer), body)
