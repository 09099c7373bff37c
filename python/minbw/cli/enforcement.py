"""``enforcement show``: what a host's data plane enforces, beside what Neutron asks and Placement reserved."""

from __future__ import annotations

from minbw.cli.base import EXIT_FINDINGS, Command, Section, View

COLUMNS = ("port", "rule", "reserved", "programmed", "kernel", "verdict", "why")
NIC_COLUMNS = ("nic", "bridge", "speed", "Placement admits", "enforced", "errors")
PF_COLUMNS = ("nic", "physnet", "speed", "Placement admits", "enforced", "errors")  # the SR-IOV agent's PFs
BACKENDS = ("openvswitch", "sriov", "ovn")  # minbw.reports.enforcement's OVS, SRIOV, OVN


def _rule(rule: dict | None) -> str:
    return f"{rule['direction']} {rule['value']} {rule['unit']}" if rule else "-"


def _reserved(reserved: dict | None, rule: dict) -> str:
    """The amount on the provider, named by its device (HOST:AGENT:DEVICE) or agent (HOST:AGENT) as in Placement."""
    if not reserved:
        return "-"
    where = reserved["name"].split(":", 1)[-1].rsplit(":", 1)[-1] if reserved["name"] else reserved["provider"]
    shared = f" (with {len(reserved['shared_by'])} more port(s))" if reserved["shared_by"] else ""
    return f"{reserved['amount']} {rule['unit']} on {where}{shared}"


def _programmed_one(p: dict) -> str | None:
    """One entry of what a backend programmed: an OVS agent's queue on a NIC, ML2/OVN's Logical_Switch_Port
    option, the SR-IOV agent's VF rate."""
    if "queue" in p:
        return f"{p['min_rate']} bit/s, queue {p['queue']} on {p['nic']}" if p["queue"] is not None else None
    if "lsp" in p:
        return f"{p['qos_min_rate']} bit/s, qos_min_rate" if p["qos_min_rate"] is not None else "no qos_min_rate"
    rate = "no IFLA_VF_RATE" if p["min_tx_rate"] is None else f"{p['min_tx_rate']} Mbps"
    return f"{rate}, VF {p['vf']} of {p['nic']}"


def _programmed(programmed: list[dict]) -> str:
    return "; ".join(filter(None, map(_programmed_one, programmed))) or "-"


def _kernel(kernel: list[dict]) -> str:
    return (
        "; ".join(
            f"{k['rate']} bit/s, class {k['class']} on {k['nic']}"
            if k["rate"] is not None
            else f"no class {k['class']} on {k['nic']}"
            for k in kernel
        )
        or "-"
    )


SUBJECT = {"qos": "QoS row {}", "vf": "VF {}"}  # an orphan that is no port


def rows(report: dict) -> tuple[tuple, ...]:
    return tuple(
        (
            SUBJECT.get(c["kind"], "{}").format(c["subject"]),
            _rule(c["rule"]),
            _reserved(c["reserved"], c["rule"]) if c["rule"] else "-",
            _programmed(c["programmed"]),
            _kernel(c["kernel"]),
            c["verdict"] + (f" (x{c['factor']:g})" if c["factor"] is not None else ""),
            "; ".join(filter(None, (c["why"], *c["notes"]))) or "-",
        )
        for c in report["checks"]
    )


def _kbps(value) -> str:
    return "-" if value is None else f"{value} kbps"


def _admits(kbps, direction: str) -> str:
    return f"no {direction}" if kbps is None else f"{kbps} kbps {direction}"


def nic_rows(report: dict) -> tuple[tuple, ...]:
    return tuple(
        (
            n["nic"] or "-",
            n["bridge"] or n["physical_network"] or "-",
            _kbps(n["speed_kbps"]),
            f"{_admits(n['inventory_kbps'], 'egress')}, {_admits(n['ingress_inventory_kbps'], 'ingress')}"
            if n["provider"]
            else "no provider",
            _kbps(n["enforced_kbps"]),
            "; ".join(n["errors"]) or "-",
        )
        for n in report["nics"]
    )


class ShowEnforcement(Command):
    """For each minimum rule of the ports bound to a host: what Neutron's rule asks, what Placement reserved, what
    the host's backend programmed (the Open vSwitch agent's queue in the host's OVSDB and the kernel's tc class;
    ML2/OVN's qos_min_rate in the northbound database and the kernel's tc class of the port's southbound queue;
    the SR-IOV agent's VF rate through netlink), with a verdict
    (enforced, missing, wrong rate, placement-only, orphan); per NIC its speed, Placement's inventory and the
    minimums enforced. Reads only (exit 3 when something is missing, at a wrong rate, orphaned, or a NIC is promised
    more than its link). Run it on the host, as a user that may read its OVSDB socket and netlink."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument(
            "--host", required=True, help="the compute host: the ports' binding:host_id and its agent's host in Neutron"
        )
        parser.add_argument(
            "--ovs-db",
            metavar="REMOTE",
            help="the host's Open vSwitch database, read on Open vSwitch agent and ML2/OVN hosts: "
            "unix:PATH or tcp:HOST:PORT (default: the local one, unix:/run/openvswitch/db.sock)",
        )
        parser.add_argument(
            "--netns",
            metavar="NAME",
            help="the network namespace (ip netns) of the host's NICs (default: this process's)",
        )
        parser.add_argument(
            "--no-kernel",
            dest="kernel",
            action="store_false",
            help="do not read the NICs' tc classes and speed, nor on ML2/OVN the ports' queues in "
            "the southbound database (when not run on the host)",
        )
        parser.add_argument(
            "--backend",
            choices=BACKENDS,
            help="the data plane to check where the host has several agents minbw reads (default: "
            "the host's one: the Open vSwitch agent, the NIC Switch agent, or an OVN Controller "
            "agent, from Neutron's agent list)",
        )
        parser.add_argument(
            "--ovn-nb",
            metavar="REMOTE",
            help="ML2/OVN's northbound database: tcp:HOST:6641, ssl:HOST:6641 or unix:PATH (needed on an ML2/OVN host)",
        )
        parser.add_argument("--ovn-nb-private-key", metavar="FILE", help="for an ssl: --ovn-nb, the client's key")
        parser.add_argument(
            "--ovn-nb-certificate", metavar="FILE", help="for an ssl: --ovn-nb, the client's certificate"
        )
        parser.add_argument("--ovn-nb-ca-cert", metavar="FILE", help="for an ssl: --ovn-nb, the CA certificate")

    def view(self, parsed_args):
        from minbw.usecases.enforcement import EnforcementRequest, show_enforcement

        where = {"ovs_db": parsed_args.ovs_db} if parsed_args.ovs_db else {}
        result = show_enforcement(
            self.cloud(parsed_args),
            EnforcementRequest(
                parsed_args.host,
                netns=parsed_args.netns,
                kernel=parsed_args.kernel,
                backend=parsed_args.backend,
                ovn_nb=parsed_args.ovn_nb,
                ovn_nb_private_key=parsed_args.ovn_nb_private_key,
                ovn_nb_certificate=parsed_args.ovn_nb_certificate,
                ovn_nb_ca_cert=parsed_args.ovn_nb_ca_cert,
                **where,
            ),
        )
        report = result.to_dict()
        counts = ", ".join(f"{n} {v}" for v, n in report["counts"].items() if n) or "no minimum rule"
        return View(
            report,
            COLUMNS,
            rows(report),
            sections=(Section("NICs", PF_COLUMNS if report["backend"] == "sriov" else NIC_COLUMNS, nic_rows(report)),),
            tail=(f"{report['host']}: {counts}",) + tuple(f"not checked: {line}" for line in report["not_checked"]),
            exit_code=0 if result.ok else EXIT_FINDINGS,
        )
