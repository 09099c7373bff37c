"""``enforcement show``: what a host's data plane enforces, beside what Neutron asks and Placement reserved."""
from __future__ import annotations

from minbw.cli.base import EXIT_FINDINGS, Command, Section, View

COLUMNS = ("port", "rule", "reserved", "programmed", "kernel", "verdict", "why")
NIC_COLUMNS = ("nic", "bridge", "speed", "Placement admits", "enforced", "errors")


def _rule(rule: dict | None) -> str:
    return f"{rule['direction']} {rule['value']} {rule['unit']}" if rule else "-"


def _reserved(reserved: dict | None, rule: dict) -> str:
    """The amount on the provider, named by its device (HOST:AGENT:DEVICE) or agent (HOST:AGENT) as in Placement."""
    if not reserved:
        return "-"
    where = reserved["name"].split(":", 1)[-1].rsplit(":", 1)[-1] if reserved["name"] else reserved["provider"]
    shared = f" (with {len(reserved['shared_by'])} more port(s))" if reserved["shared_by"] else ""
    return f"{reserved['amount']} {rule['unit']} on {where}{shared}"


def _programmed(programmed: list[dict]) -> str:
    return "; ".join(f"{p['min_rate']} bit/s, queue {p['queue']} on {p['nic']}" for p in programmed
                     if p["queue"] is not None) or "-"


def _kernel(kernel: list[dict]) -> str:
    return "; ".join(f"{k['rate']} bit/s, class {k['class']} on {k['nic']}" if k["rate"] is not None
                     else f"no class {k['class']} on {k['nic']}" for k in kernel) or "-"


def rows(report: dict) -> tuple[tuple, ...]:
    return tuple((c["subject"] if c["kind"] != "qos" else f"QoS row {c['subject']}", _rule(c["rule"]),
                  _reserved(c["reserved"], c["rule"]) if c["rule"] else "-", _programmed(c["programmed"]),
                  _kernel(c["kernel"]), c["verdict"] + (f" (x{c['factor']:g})" if c["factor"] is not None else ""),
                  "; ".join(filter(None, (c["why"], *c["notes"]))) or "-")
                 for c in report["checks"])


def _kbps(value) -> str:
    return "-" if value is None else f"{value} kbps"


def _admits(kbps, direction: str) -> str:
    return f"no {direction}" if kbps is None else f"{kbps} kbps {direction}"


def nic_rows(report: dict) -> tuple[tuple, ...]:
    return tuple((n["nic"], n["bridge"], _kbps(n["speed_kbps"]),
                  f"{_admits(n['inventory_kbps'], 'egress')}, {_admits(n['ingress_inventory_kbps'], 'ingress')}"
                  if n["provider"] else "no provider", _kbps(n["enforced_kbps"]),
                  "; ".join(n["errors"]) or "-") for n in report["nics"])


class ShowEnforcement(Command):
    """For each minimum rule of the ports bound to a host: what Neutron's rule asks, what Placement reserved, what
    the Open vSwitch agent programmed (the host's OVSDB) and what the kernel applies (the NICs' tc classes), with a
    verdict (enforced, missing, wrong rate, placement-only, orphan); per NIC its speed, Placement's inventory and the
    minimums enforced. Reads only (exit 3 when something is missing, at a wrong rate, orphaned, or a NIC is promised
    more than its link). Run it on the host, as a user that may read its OVSDB socket and netlink."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--host", required=True,
                            help="the compute host: the ports' binding:host_id and its agent's host in Neutron")
        parser.add_argument("--ovs-db", metavar="REMOTE",
                            help="the host's Open vSwitch database: unix:PATH or tcp:HOST:PORT (default: the local "
                                 "one, unix:/run/openvswitch/db.sock)")
        parser.add_argument("--netns", metavar="NAME",
                            help="the network namespace (ip netns) of the host's NICs (default: this process's)")
        parser.add_argument("--no-kernel", dest="kernel", action="store_false",
                            help="do not read the NICs' tc classes and speed (when not run on the host)")

    def view(self, parsed_args):
        from minbw.usecases.enforcement import EnforcementRequest, show_enforcement
        where = {"ovs_db": parsed_args.ovs_db} if parsed_args.ovs_db else {}
        result = show_enforcement(self.cloud(parsed_args), EnforcementRequest(
            parsed_args.host, netns=parsed_args.netns, kernel=parsed_args.kernel, **where))
        report = result.to_dict()
        counts = ", ".join(f"{n} {v}" for v, n in report["counts"].items() if n) or "no minimum rule"
        return View(report, COLUMNS, rows(report),
                    sections=(Section("NICs", NIC_COLUMNS, nic_rows(report)),),
                    tail=(f"{report['host']}: {counts}",) + tuple(f"not checked: {line}"
                                                                    for line in report["not_checked"]),
                    exit_code=0 if result.ok else EXIT_FINDINGS)
