"""``minbw audit`` and the ``bandwidth_audit_info`` module: leaked bandwidth
allocations, stale binding allocations, servers holding more than their ports request (double allocations),
providers over capacity; ``fix`` removes what is safe to remove."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.ops.audit import apply_fixes, run_audit
from minbw.plan.audit import AuditPlan, FixResult
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class AuditRequest:
    fix: bool = False
    ignore_consumers: tuple[str, ...] = ()  # consumers that are not Nova's (e.g. claims of minbw allocation create)
    check: bool = False  # with fix: say what would be fixed, fix nothing


@dataclass(frozen=True)
class AuditResult:
    plan: AuditPlan
    fixes: tuple[FixResult, ...]

    @property
    def left(self) -> bool:
        """Findings are left: report-only ones, or ones --fix did not fix."""
        return bool(self.plan.left(self.fixes))

    @property
    def changed(self) -> bool:
        """Whether some fix was made."""
        return any(f.done for f in self.fixes)

    @property
    def failed(self) -> list[str]:
        """The fixes that failed, one line each (the others were made: each fix is independent)."""
        return [" ".join(f"fix {f.op.action} {f.op.subject}: {f.error}".split()) for f in self.fixes if not f.done]

    @property
    def none_made(self) -> bool:
        """Fixes were tried and every one failed: nothing could be fixed."""
        return bool(self.fixes) and not self.changed

    @property
    def ok(self) -> bool:
        """Whether no finding is left (the opposite of ``left``)."""
        return not self.left

    def to_dict(self) -> dict:
        """The plan's dict, with ``fixes``: what each fix tried did."""
        return {**self.plan.to_dict(), "fixes": [f.to_dict() for f in self.fixes]}


def audit(cloud: Cloud, request: AuditRequest) -> AuditResult:
    """Read Nova, Neutron and Placement and judge (:func:`minbw.ops.audit.run_audit`), then apply the fixes when
    ``request.fix`` and not ``check``: an AuditResult. Raises MissingService without Nova or Neutron; lets
    PlacementError through (a failed fix is reported in ``fixes``, not raised)."""
    cloud.require("compute", "audit tells live servers and migrations from leaks by asking Nova")
    cloud.require("network", "audit reads the ports' binding allocations from Neutron")
    plan = run_audit(cloud.conn, cloud.reader(), ignore=request.ignore_consumers)
    fixes = (
        apply_fixes(cloud.conn, cloud.placement, plan, binding_conn=cloud.service_conn())
        if request.fix and not request.check
        else []
    )
    return AuditResult(plan, tuple(fixes))
