"""Operations: the only callers of I/O (Placement through :mod:`minbw.placement.client`, Neutron and
Nova through openstacksdk). Each reads, asks :mod:`minbw.plan` for the plan, and applies it."""

from collections.abc import Callable, Sequence
from typing import TypeVar

from minbw.errors import MinbwError, PartialApply

_Op = TypeVar("_Op")


def write_failures() -> tuple[type[BaseException], ...]:
    """What a write through openstacksdk or the Placement client can raise: our errors, Neutron's or Nova's HTTP
    answers (SDKException) and keystoneauth's transport failures (connection refused or reset, timeouts), which
    openstacksdk lets through unwrapped. Applying code catches all three (``except write_failures()``) so a
    half-applied state is reported. A function, not a constant: openstacksdk and keystoneauth1 are imported when
    it is called, not when this package is (python/README.md: lazy imports)."""
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack import exceptions as sdk_exceptions

    return (MinbwError, sdk_exceptions.SDKException, ksa_exceptions.ClientException)


def outcome_unknown(e: BaseException) -> bool:
    """The write that raised ``e`` may have been applied: no answer came (connection reset, timeout) or a
    5xx did; for Placement the client says so itself (``maybe_applied``, after its re-read). A 4xx answer,
    or one of our refusals, means it was not."""
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack import exceptions as sdk_exceptions

    if isinstance(e, MinbwError):
        return bool(getattr(e, "maybe_applied", False))
    if isinstance(e, sdk_exceptions.HttpException):
        return (e.status_code or 500) >= 500
    return isinstance(e, ksa_exceptions.ClientException)


def apply_in_order(
    ops: Sequence[_Op],
    run: Callable[[_Op], object],
    *,
    then: str = "running the same desired state again applies the rest",
) -> list[_Op]:
    """Run ``run(op)`` for each op in order; return the ops run. A failure before any write is raised as
    it is; after some writes it is a PartialApply naming them and the ops not made, the failed one first
    (``then`` says how to resume). ``run`` returning ``False`` stops early (e.g. the object is gone) after
    counting that op as done."""
    done: list[_Op] = []
    for op in ops:
        try:
            more = run(op)
        except write_failures() as e:
            if not done:
                raise  # nothing was written: the error as it is
            written = len(done)
            raise PartialApply(e, done, len(ops), then=then, pending=list(ops[written:])) from e
        done.append(op)
        if more is False:
            break
    return done
