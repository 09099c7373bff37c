"""One exception hierarchy for minbw.

Placement errors are classified by ``errors[0].code`` (stable by Placement's
contract), never by message text.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence


class Reported(Protocol):
    """What an error carries for a module's failed result or the CLI's --json error to show: a typed result of the
    core (a claim's attempt, a group's diagnosis) with its JSON-ready dict. errors.py imports nothing of ours, so
    the errors name them by what they offer."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict."""


class MinbwError(Exception):
    """Base of every error minbw raises on purpose."""

    def to_dict(self) -> dict:
        """What a module's failed result or the CLI's --json error carries besides the message."""
        return {"msg": str(self)}


class InvalidInput(MinbwError, ValueError):
    """Input that cannot be used as given (nothing was written)."""


class ConfigError(InvalidInput):
    """Bad agent configuration: the message is Neutron's own where it has one.

    ``option`` names the option, ``source`` the file (or "options"); ``fix`` how to write it (added after
    Neutron's message, which stays ``neutron_message``).
    """

    def __init__(self, message: str, option: str | None = None, source: str | None = None, fix: str | None = None):
        self.option = option
        self.source = source
        self.fix = fix
        where = ""
        if source and option:
            where = f"{source}: {option}: "
        elif option:
            where = f"{option}: "
        elif source:
            where = f"{source}: "
        sep = " " if message.rstrip().endswith((".", ")")) else ". "
        super().__init__(where + message + (f"{sep}Fix: {fix}." if fix else ""))
        self.neutron_message = message

    def to_dict(self) -> dict:
        """The message with the option, the source file and the fix (None where not given)."""
        return {"msg": str(self), "option": self.option, "source": self.source, "fix": self.fix}


class RequestError(InvalidInput):
    """A resource request that cannot be built or expressed."""


class NothingCompared(InvalidInput):
    """A check had nothing to compare: no ini files, no agent reporting bandwidth to Neutron, no OVN chassis (on
    ML2/OVN, Neutron's agent list carries no bandwidth: the chassis options are read from the southbound or the
    Open vSwitch database). ``ovn_chassis``: how many OVN chassis Neutron's agent list shows (an ML2/OVN cloud);
    ``fix`` names the front end's options."""

    def __init__(self, message: str, fix: str, ovn_chassis: int = 0):
        self.fix = fix
        self.ovn_chassis = ovn_chassis
        super().__init__(f"{message}. Fix: {fix}")

    def to_dict(self) -> dict:
        """The message, ``nothing_compared`` (True), how many OVN chassis Neutron shows, and the fix."""
        return {"msg": str(self), "nothing_compared": True, "ovn_chassis": self.ovn_chassis, "fix": self.fix}


class BindingNotAllowed(MinbwError):
    """Neutron refused to write a port's ``binding:profile``: its policy gives that to the service role only."""


class ObjectNotFound(MinbwError, LookupError):
    """A named object (provider, server, port, policy) does not exist."""


class PlanError(MinbwError):
    """A desired state that cannot be reached safely (nothing was written)."""


class PartialApply(MinbwError):
    """A plan stopped part-way: ``applied`` of ``planned`` writes were made; ``cause`` stopped it.

    The message says first what was written, then the cause: the cause's own words are about its call alone
    (a failed read's "nothing was written by this call"), and a reader who stops at them must not take the whole
    command for one that wrote nothing. Running the same desired state again resumes from what is there.
    """

    def __init__(
        self,
        cause: BaseException,
        applied: list,
        planned: int,
        result=None,
        then: str = "running the sync again resumes from what is in Placement",
        pending: list | None = None,
        lead: str | None = None,
    ):
        self.cause = cause
        self.applied = list(applied)
        self.planned = planned
        self.result = result
        self.pending = list(pending or [])  # the planned writes not made (the first: the one that failed)
        last = self.applied[-1] if self.applied else "none"
        failed = ""
        if self.pending:
            more = f" and {len(self.pending) - 1} more" if len(self.pending) > 1 else ""
            failed = f"; not written: {self.pending[0]}{more}"
        written = lead or f"{len(self.applied)} of {planned} planned writes succeeded (the last: {last})"
        super().__init__(self._said(written, failed, then))

    def _said(self, written: str, failed: str, then: str) -> str:
        """The one line: what was written first (``written``), then what stopped it, what was not written and what
        to do."""
        return f"{written}, then stopped by: {self.cause}{failed}; {then}"

    @property
    def code(self) -> str | None:
        """The cause's Placement error code (callers decide on codes, never on text)."""
        return getattr(self.cause, "code", None)

    @property
    def status(self) -> int | None:
        """The cause's HTTP status, or None when it has none."""
        return getattr(self.cause, "status", None)

    def to_dict(self) -> dict:
        """The cause's fields (when a minbw error), then the message, the writes done and planned, and the writes
        applied and not applied (each its dict, or its text)."""
        inner = self.cause.to_dict() if isinstance(self.cause, MinbwError) else {}
        return {
            **inner,
            "msg": str(self),
            "writes_done": len(self.applied),
            "writes_planned": self.planned,
            "applied": [op.to_dict() if hasattr(op, "to_dict") else str(op) for op in self.applied],
            "not_applied": [op.to_dict() if hasattr(op, "to_dict") else str(op) for op in self.pending],
        }


def written_claim(consumer: str, host: str) -> str:
    """What a claim's error says first when the claim is written: the consumer and where its allocations are."""
    return f"the claim of consumer {consumer} is written in Placement (its allocations on host {host})"


class WrittenUnverified(PartialApply):
    """A claim Placement accepted (its ``PUT /allocations/{consumer}`` answered) whose verification then failed
    (the usages or inventories read, :mod:`minbw.ops.verify`): the consumer's allocations are written, not
    verified. An outcome of its own: the CLI exits 5 (``written_unverified`` in its ``-f json``/``yaml``), the
    modules fail with ``changed: true`` and ``written``. ``written``: the claim written (its dict: consumer, host,
    allocations, mapping, binding profiles)."""

    def __init__(self, cause: BaseException, op: Reported, *, consumer: str, host: str):
        self.consumer = consumer
        self.host = host
        self.written = op.to_dict()
        super().__init__(cause, [op], 1, lead=written_claim(consumer, host))

    def _said(self, written: str, failed: str, then: str) -> str:
        return (
            f"{written}, not verified: its verification's read (which writes nothing) failed: {self.cause}. For the "
            f"claim: check its providers' usage (minbw usage show), or free it (minbw allocation delete --consumer "
            f"{self.consumer}); minbw allocation create again for the same consumer and request finds it held "
            f"(exit 0)"
        )

    def to_dict(self) -> dict:
        """PartialApply's dict plus ``written_unverified`` (True), the consumer, the host and ``written`` (the claim
        written)."""
        return {
            **super().to_dict(),
            "written_unverified": True,
            "consumer": self.consumer,
            "host": self.host,
            "written": self.written,
        }


class MappingError(MinbwError):
    """No single group-to-provider mapping: there is none, or there are several (``result`` says)."""

    def __init__(self, result):
        self.result = result
        super().__init__(result.describe())


class NoValidHost(MinbwError):
    """No allocation candidate, or every candidate was taken: with a per-group diagnosis."""

    def __init__(
        self, message: str, diagnosis: Sequence[Reported] | None = None, attempts: Sequence[Reported] | None = None
    ):
        self.diagnosis: list[Reported] = list(diagnosis or ())
        self.attempts: list[Reported] = list(attempts or ())
        super().__init__(message)

    def to_dict(self) -> dict:
        """The message, the per-group diagnosis (reports.diagnosis.Diagnosis each) and the attempts (model.claims.Tried
        each), lists of dicts."""
        return {
            "msg": str(self),
            "diagnosis": [d.to_dict() for d in self.diagnosis],
            "attempts": [a.to_dict() for a in self.attempts],
        }


class ConsumerConflict(MinbwError):
    """The consumer's allocations changed under us (someone else claimed or freed for it)."""


class ClaimDiffers(ConsumerConflict):
    """The consumer already holds allocations, and not the ones asked for: what differs is said."""

    def __init__(self, message: str, held: dict, asked: dict):
        self.held = held
        self.asked = asked
        super().__init__(message)

    def to_dict(self) -> dict:
        """The message and the allocations held and asked for."""
        return {"msg": str(self), "held": self.held, "asked": self.asked}


class OvercommitUndone(NoValidHost):
    """Every attempt was refused or taken by others, and at least one was accepted by Placement but left a
    provider over capacity (its server-side retry under concurrency, docs/placement-overcommit.md) and was
    undone by minbw. ``excess``: what the last such attempt found over capacity (provider, resource_class, used,
    capacity: dicts)."""

    def __init__(
        self,
        message: str,
        diagnosis: Sequence[Reported] | None = None,
        attempts: Sequence[Reported] | None = None,
        excess: tuple = (),
    ):
        self.excess = tuple(excess)
        super().__init__(message, diagnosis, attempts)

    def to_dict(self) -> dict:
        """NoValidHost's dict plus ``excess``: what was found over capacity, a list of dicts."""
        return {**super().to_dict(), "excess": [dict(e) for e in self.excess]}


class RequestFilterFailed(NoValidHost):
    """One of Nova's scheduler request filters refused the server before any Placement query (Nova raises
    ``RequestFilterFailed`` and answers "No valid host"): ``filter`` names it, ``reason`` is Nova's."""

    def __init__(self, filter_name: str, reason: str, fix: str = ""):
        self.filter = filter_name
        self.reason = reason
        super().__init__(
            f"No valid host: Nova's request filter {filter_name} refuses the server: {reason}"
            + (f" Fix: {fix}" if fix else "")
        )

    def to_dict(self) -> dict:
        """NoValidHost's dict plus the refusing filter's name and Nova's reason."""
        return {**super().to_dict(), "filter": self.filter, "reason": self.reason}


class ServerFailed(MinbwError):
    """A server went to ERROR for a reason other than "No valid host" (Nova's fault message says why)."""


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


class RootRefused(PlanError):
    """A compute node root that ``create_root`` would make, or whose inventories ``root_inventories`` would set,
    where nova-compute makes or owns it (:mod:`minbw.nova.compute_root`): the hypervisor, why, and the fix."""

    def __init__(self, hypervisor: str, why: str, fix: str):
        self.hypervisor = hypervisor
        self.why = why
        self.fix = fix
        super().__init__(f"{why}. Fix: {fix}.")

    def to_dict(self) -> dict:
        """The message, the hypervisor and the fix."""
        return {"msg": str(self), "hypervisor": self.hypervisor, "fix": self.fix}


class PlacementError(MinbwError):
    """An error answer from Placement. ``after_lost_answer``: the call had sent the write before and lost that
    answer (a timeout, a reset), and its re-read did not find the write: it may still land (a worker that answers
    late), so a caller that finds exactly its own write later may take it as its own."""

    code: str | None = None
    after_lost_answer: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
        method: str | None = None,
        url: str | None = None,
    ):
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
        """Placement's own message (without method, URL, status or code), the status, the error code, the request id,
        the method and the URL."""
        return {
            "msg": self.detail,
            "status": self.status,
            "code": self.code,
            "request_id": self.request_id,
            "method": self.method,
            "url": self.url,
        }


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


class PlacementUnavailable(PlacementError):
    """No usable answer from Placement after every try of the retry policy (connection refused or reset,
    no answer in time, 502/503/504). ``maybe_applied``: a write was sent and its answer lost, so Placement
    may or may not hold it (re-reading it found it not there yet); running the same command again converges."""

    def __init__(
        self,
        why: str,
        *,
        status: int | None = None,
        method: str | None = None,
        url: str | None = None,
        tries: int = 1,
        maybe_applied: bool = False,
    ):
        self.tries = tries
        self.maybe_applied = maybe_applied
        self.why = why  # the last try's failure alone
        outcome = "this write may or may not have been applied" if maybe_applied else "nothing was written by this call"
        super().__init__(
            f"no usable answer from Placement after {tries} tries, the last: {why}; {outcome}. Fix: check "
            f"that Placement (and the proxy or load balancer in front of it) is up, then run the same "
            f"command again; MINBW_PLACEMENT_ATTEMPTS / MINBW_PLACEMENT_TIMEOUT set the retry policy",
            status=status,
            method=method,
            url=url,
        )

    def to_dict(self) -> dict:
        """PlacementError's dict plus the tries made and ``maybe_applied``."""
        return {**super().to_dict(), "tries": self.tries, "maybe_applied": self.maybe_applied}


class MicroversionUnsupported(MinbwError):
    """The server cannot express a request at any microversion it offers."""


_BY_CODE = {
    cls.code: cls
    for cls in (
        ConcurrentUpdate,
        InventoryInUse,
        DuplicateName,
        ProviderInUse,
        CannotDeleteParent,
        ProviderNotFound,
        UndefinedCode,
    )
}


def placement_error(
    status: int | None,
    body: dict | None,
    *,
    request_id: str | None = None,
    method: str | None = None,
    url: str | None = None,
    fallback_message: str = "",
) -> PlacementError:
    """Build the right PlacementError subclass from an error response body."""
    code = None
    message = fallback_message
    errors = (body or {}).get("errors") if isinstance(body, dict) else None
    if errors:
        first = errors[0]
        code = first.get("code")
        message = first.get("detail") or first.get("title") or message
        request_id = request_id or first.get("request_id")
    cls: type[PlacementError] | None = _BY_CODE.get(code or "")
    if status == 404 and cls in (None, UndefinedCode):
        # Placement's catch-all code says nothing; the status does (GET /resource_providers/{uuid}/inventories
        # of a provider that is not there answers 404 with placement.undefined_code)
        cls = NotFound
    elif cls is None:
        cls = PlacementError
    return cls(message.strip(), status=status, code=code, request_id=request_id, method=method, url=url)


class DaemonError(MinbwError):
    """The embedded Placement could not be started, found or stopped in the background
    (``minbw placement serve --daemon`` / ``stop``): the port is held by another process, the server
    did not become ready, or it would not exit. ``log_tail`` holds the last lines of its log."""

    def __init__(
        self,
        message: str,
        *,
        port: int | None = None,
        pid: int | None = None,
        log_file: str | None = None,
        log_tail: str | None = None,
    ):
        self.port = port
        self.pid = pid
        self.log_file = log_file
        self.log_tail = log_tail
        self.reason = message
        if log_tail is not None:
            message += f"\nLog {log_file} (last lines):\n{log_tail}" if log_tail else f"\nLog {log_file}: empty"
        super().__init__(message)

    def to_dict(self) -> dict:
        """The message, the reason, the port, the pid, the log file and the last lines of the log."""
        return {
            "msg": str(self),
            "reason": self.reason,
            "port": self.port,
            "pid": self.pid,
            "log_file": self.log_file,
            "log_tail": self.log_tail,
        }


class MoveRefused(PlanError):
    """A move, confirm or revert that must not be made as asked (nothing was written).

    ``reason`` is the rule that refused it, for callers to decide on (never on the text):
    ``no-allocations`` (the consumer holds nothing to move), ``same-host`` (it is already on the
    target), ``in-progress`` (the migration consumer already holds allocations: confirm or revert
    that move first), ``several-hosts`` (its allocations span more than one provider tree),
    ``mismatch`` (a revert whose consumer is not of the migration record's project and user).
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        consumer: str | None = None,
        migration: str | None = None,
        host: str | None = None,
    ):
        self.reason = reason
        self.consumer = consumer
        self.migration = migration
        self.host = host
        super().__init__(message)

    def to_dict(self) -> dict:
        """The message, the rule that refused the move (``reason``), the consumer, the migration and the host."""
        return {
            "msg": str(self),
            "reason": self.reason,
            "consumer": self.consumer,
            "migration": self.migration,
            "host": self.host,
        }


class CloudError(MinbwError):
    """The cloud could not be used: not in clouds.yaml, unreachable, TLS or credentials refused
    (the message names the cloud, its URL and the fix)."""


class MissingService(CloudError):
    """The cloud has no such service (e.g. no Nova behind the embedded Placement): which one, the cloud, how that
    is known (``why``: its configuration turns it off, its catalog lists none, its one endpoint is Placement's,
    ...), what needed it, and what to do."""

    def __init__(
        self, service: str, project: str, needed_by: str, cloud: str = "the cloud", fix: str = "", why: str = ""
    ):
        self.service = service
        self.why = why
        said = f": {why};" if why else " in its catalog,"
        super().__init__(
            f"{cloud} has no {service} service ({project}){said} and {needed_by}. Fix: "
            + (fix or f"run it against a cloud with {project} (--os-cloud / the module's cloud)")
        )

    def to_dict(self) -> dict:
        """The message, the missing service and ``why`` it is known missing."""
        return {"msg": str(self), "service": self.service, "why": self.why}


class MissingDependency(MinbwError):
    """An optional library a feature needs is not installed (the message names the pip extra)."""


class NovaMoveFailed(MinbwError):
    """A move of a server through Nova (migrate, resize, confirm, revert, live migration, evacuation,
    shelve, unshelve) did not reach the state it waits for: the server went to ERROR, its migration
    to ``error``/``failed``, Nova refused the request, or the bounded wait ran out (``timed_out``).
    Names the server, the migration and the statuses last seen against the ones expected."""

    def __init__(
        self,
        message: str,
        *,
        action: str,
        server: str | None = None,
        migration: str | None = None,
        status: str | None = None,
        task_state: str | None = None,
        migration_status: str | None = None,
        expected: dict | None = None,
        timed_out: bool = False,
        fault: str | None = None,
    ):
        self.action = action
        self.server = server
        self.migration = migration
        self.status = status
        self.task_state = task_state
        self.migration_status = migration_status
        self.expected = expected or {}
        self.timed_out = timed_out
        self.fault = fault
        super().__init__(message)

    def to_dict(self) -> dict:
        """The message, the action, the server, the migration, the statuses last seen and the ones expected, whether the
        wait ran out (``timed_out``) and Nova's fault."""
        return {
            "msg": str(self),
            "action": self.action,
            "server": self.server,
            "migration": self.migration,
            "status": self.status,
            "task_state": self.task_state,
            "migration_status": self.migration_status,
            "expected": dict(self.expected),
            "timed_out": self.timed_out,
            "fault": self.fault,
        }


class DataPlaneUnreadable(InvalidInput):
    """A host's data plane that cannot be read as asked (nothing was written): an Open vSwitch or OVN database
    that does not answer, refuses the connection or lacks a bridge asked for, a network namespace or link that
    does not exist. One line: what, and ``where`` (the OVSDB remote, or the link and its namespace)."""

    def __init__(self, what: str, where: str):
        self.what = what
        self.where = where
        super().__init__(f"{where}: {what}")

    def to_dict(self) -> dict:
        """The message, what could not be read and where."""
        return {"msg": str(self), "what": self.what, "where": self.where}
