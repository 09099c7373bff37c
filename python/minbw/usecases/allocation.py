"""``minbw allocation create|delete`` and the ``allocation``
module: claim a server's resources atomically (one ``PUT /allocations/{consumer}`` per attempt, alternates on
capacity), or free them safely. A claim is idempotent: the consumer already holding exactly that claim is left
unchanged; holding something else is explained."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import ClaimDiffers, InvalidInput, MappingError, NoValidHost, PlacementError
from minbw.model.claims import Claim
from minbw.ops import claims
from minbw.plan.allocations import ClaimPlan, holding_difference, plan_free
from minbw.plan.base import Plan
from minbw.usecases.server_request import ServerSpec, no_valid_host, nova_query
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class ClaimRequest:
    consumer: str
    server: ServerSpec
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None
    max_hosts: int = 3
    check: bool = False


@dataclass(frozen=True)
class ClaimResult:
    """``changed`` False: the consumer already held exactly this claim. In check mode ``claim`` is the claim the
    real run makes first and ``plan`` its attempts."""

    changed: bool
    claim: Claim
    check: bool = False
    plan: ClaimPlan | None = None

    def diff(self) -> dict:
        """Ansible's diff shape: ``claimed`` (and the host) before and after."""
        if not self.changed:
            return {
                "before": {"claimed": True, "host": self.claim.host},
                "after": {"claimed": True, "host": self.claim.host},
            }
        return {"before": {"claimed": False}, "after": {"claimed": True, "host": self.claim.host}}

    def to_dict(self) -> dict:
        """The claim as JSON values, with ``claimed`` and ``changed`` (and ``planned``, the plan, in check mode)."""
        out = {"claimed": not self.check or not self.changed, "changed": self.changed, **self.claim.to_dict()}
        if self.plan is not None:
            out["planned"] = self.plan.to_dict()
        return out


def claim(cloud: Cloud, request: ClaimRequest) -> ClaimResult:
    """Claim ``request.server``'s resources for ``request.consumer`` (check mode: plan the first attempt only): a
    ClaimResult, unchanged when the consumer already holds exactly such a claim. Raises ClaimDiffers when it holds
    another, InvalidInput without project_id and user_id, NoValidHost (with the per-group diagnosis) when nothing
    fits; lets the request's errors (InvalidInput, ObjectNotFound, MissingService), ConsumerConflict, PartialApply
    and PlacementError through."""
    api = cloud.placement
    req, segments, nq = nova_query(cloud, request.server)
    held = api.get_allocations(request.consumer).get("allocations") or {}
    if held:
        try:
            return ClaimResult(
                False, claims.with_host_name(api, claims.mapped_claim(api, request.consumer, held, req)), request.check
            )
        except MappingError as e:
            raise ClaimDiffers(
                holding_difference(request.consumer, held, req, str(e)),
                {rp: dict(a.get("resources", {})) for rp, a in held.items()},
                {"groups": [g.id for g in req.request_groups()]},
            ) from None
    if not request.check and not (request.project_id and request.user_id):
        raise InvalidInput(
            "claiming needs project_id and user_id (the consumer's owner in Placement). Fix: give "
            "--project-id and --user-id (the module's project_id and user_id)"
        )
    try:
        # check mode shows the claim the real run makes first: the same plan, from the same candidates
        plan = claims.planned_claim(api, request.consumer, req, max_hosts=request.max_hosts)
        if request.check:
            op = plan.ops[0]
            return ClaimResult(
                True,
                claims.with_host_name(
                    api,
                    Claim(
                        request.consumer,
                        op.host,
                        None,
                        op.allocations,
                        op.mapping,
                        op.binding_profiles,
                        mapping_source=op.mapping_source,
                    ),
                ),
                True,
                plan,
            )
        made = claims.claim(
            api,
            request.consumer,
            req,
            project_id=request.project_id,  # type: ignore[arg-type]  # checked above
            user_id=request.user_id,  # type: ignore[arg-type]  # checked above
            consumer_type=request.consumer_type,
            max_hosts=request.max_hosts,
            candidates=plan.candidates,
            candidates_current=True,  # fetched just now, by planned_claim above
        )
    except NoValidHost as e:
        raise no_valid_host(cloud, req, segments, e, nq) from None
    return ClaimResult(True, named(cloud, made))


def named(cloud: Cloud, made: Claim) -> Claim:
    """The claim made, with its host's name; without it when that read fails, said through ``cloud.say``: the claim
    is written and verified, and a failed read of a name must not report it as not made (its error's "nothing was
    written by this call" is about the read alone)."""
    try:
        return claims.with_host_name(cloud.placement, made)
    except PlacementError as e:
        if cloud.say:
            cloud.say(f"claimed for consumer {made.consumer} on host {made.host}; its name could not be read: {e}")
        return made


@dataclass(frozen=True)
class FreeRequest:
    consumer: str
    check: bool = False


@dataclass(frozen=True)
class FreeResult:
    consumer: str
    plan: Plan

    @property
    def changed(self) -> bool:
        """Whether the consumer held allocations to free."""
        return self.plan.changed

    def to_dict(self) -> dict:
        """``changed`` and the consumer."""
        return {"changed": self.changed, "consumer": self.consumer}


def free(cloud: Cloud, request: FreeRequest) -> FreeResult:
    """Remove every allocation of the consumer (a safe ``PUT {}`` at its generation); nothing when it has none."""
    api = cloud.placement
    plan = plan_free(request.consumer, api.get_allocations(request.consumer))
    if plan.changed and not request.check and not claims.free_allocations(api, request.consumer):
        plan = plan_free(request.consumer, {})  # freed by someone else meanwhile
    return FreeResult(request.consumer, plan)
