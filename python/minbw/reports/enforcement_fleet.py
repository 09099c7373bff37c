"""The fleet's enforcement checks compared in one place: per host of an inventory, what its
``bandwidth_enforcement_info`` result says (the role ``bandwidth_enforcement``, through the filter
``minbw.openstack.enforcement_fleet``), or why there is none: its reader failed, the host was unreachable, or it left
the play before the check. Pure: the results are Ansible's, as registered on each host."""

from __future__ import annotations

from collections.abc import Mapping

from minbw.reports.enforcement import ENFORCED, FINDINGS, MISSING, ORPHAN, PLACEMENT_ONLY, WRONG_RATE

VERDICTS = (ENFORCED, MISSING, WRONG_RATE, PLACEMENT_ONLY, ORPHAN)
NOT_RUN = "not read: the host left the play before the check (unreachable, or failed in an earlier task)"


def one_line(result: Mapping) -> str:
    """A failed or unreachable task's error in one line: its message's first line, or for a module that died
    (``MODULE FAILURE``) the last line it wrote to stderr (the exception)."""
    msg = str(result.get("msg") or "").strip()
    if msg.startswith("MODULE FAILURE"):
        said = [line.strip() for line in str(result.get("module_stderr") or "").splitlines() if line.strip()]
        msg = said[-1] if said else msg
    return (msg.splitlines() or ["no message"])[0].strip()


def counted(counts: Mapping[str, int]) -> str:
    """``1 enforced, 2 orphan`` (the verdicts that occur), as ``minbw enforcement show`` ends."""
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts.get(v)) or "no minimum rule"


def host_outcome(result: Mapping | None) -> dict:
    """One host's outcome from its registered result (None: the check did not run there)."""
    if result is None:
        return {"read": False, "error": NOT_RUN}
    if result.get("unreachable"):
        return {"read": False, "error": f"unreachable: {one_line(result)}"}
    if result.get("skipped"):
        return {
            "read": False,
            "error": f"not read: the check was skipped ({result.get('skip_reason') or one_line(result)})",
        }
    if result.get("failed") or "counts" not in result:
        return {"read": False, "error": f"not read: {one_line(result)}"}
    findings = [
        f"{c['verdict']}{'' if c.get('factor') is None else ' x%g' % c['factor']}: {c['kind']} "
        f"{c['subject']}: {c.get('why') or '-'}"
        for c in result.get("checks") or ()
        if c["verdict"] in FINDINGS
    ]
    findings += [
        f"NIC {n.get('nic') or '-'} ({n.get('bridge') or n.get('physical_network') or '-'}): {error}"
        for n in result.get("nics") or ()
        for error in n.get("errors") or ()
    ]
    return {
        "read": True,
        "host": result.get("host"),
        "backend": result.get("backend"),
        "ok": bool(result.get("ok")),
        "counts": {v: int((result.get("counts") or {}).get(v, 0)) for v in VERDICTS},
        "findings": findings,
        "not_checked": list(result.get("not_checked") or ()),
    }


def fleet(results: Mapping[str, Mapping | None]) -> dict:
    """The fleet's outcome: per host (the inventory's names) its outcome, the verdicts summed, ``ok`` (every host
    read, nothing to act on anywhere) and the summary's ``lines``: per host its counts (its Neutron name where that
    differs) and each finding below it, or its one-line error."""
    hosts = {name: host_outcome(results[name]) for name in results}
    read = {n: h for n, h in hosts.items() if h["read"]}
    counts = {v: sum(h["counts"][v] for h in read.values()) for v in VERDICTS}
    lines = []
    for name, h in hosts.items():
        if not h["read"]:
            lines.append(f"{name}: {h['error']}")
            continue
        alias = f" (Neutron host {h['host']})" if h["host"] and h["host"] != name else ""
        lines.append(f"{name}{alias}, {h['backend']}: {counted(h['counts'])}")
        lines += [f"  {line}" for line in h["findings"]] + [f"  not checked: {line}" for line in h["not_checked"]]
    acting = sorted(n for n, h in read.items() if not h["ok"])
    unread = sorted(set(hosts) - set(read))
    lines.append(
        f"{len(hosts)} host(s): {len(read)} checked ({counted(counts)})"
        + (f"; findings on {', '.join(acting)}" if acting else "")
        + (f"; not read: {', '.join(unread)}" if unread else "")
    )
    return {
        "ok": not acting and not unread,
        "hosts": hosts,
        "counts": counts,
        "with_findings": acting,
        "unread": unread,
        "lines": lines,
    }
