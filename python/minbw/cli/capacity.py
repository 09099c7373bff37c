"""``minbw capacity``: how many more servers of one shape fit, per host and physnet; a table, JSON,
and a picture of used/free bandwidth per provider (PNG or HTML, with matplotlib)."""
from __future__ import annotations

import base64
import html
import io

from minbw.errors import InvalidInput, MissingDependency

PORT_HELP = ("a QoS port: min_bw:DIRECTION:KBPS and/or min_pps:DIRECTION:KPPS rules, then optional vnic=TYPE "
             "(default normal), physnet=NAME or network_type=vxlan|geneve|gre (default: each physnet of each "
             "host), comma-separated; e.g. min_bw:egress:1000,min_bw:ingress:1000,vnic=direct,physnet=physnet0. "
             "Repeat per port")
_RULE_KINDS = {"min_bw": ("minimum_bandwidth", "min_kbps"), "min_pps": ("minimum_packet_rate", "min_kpps")}
_PORT_KEYS = {"vnic": "vnic_type", "vnic_type": "vnic_type", "physnet": "physical_network",
              "physical_network": "physical_network", "network_type": "network_type"}


def parse_resources(text: str | None, option: str = "--resources") -> dict[str, str]:
    """``VCPU:1,MEMORY_MB:256`` → ``{class: amount}``; the amounts are checked by the core (which says
    what is wrong with a negative or unknown one)."""
    out = {}
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        rc, sep, amount = item.partition(":")
        if not sep or not rc.strip() or not amount.strip():
            raise InvalidInput(f"{option}: expected CLASS:AMOUNT[,CLASS:AMOUNT...], got {item!r}")
        out[rc.strip()] = amount.strip()
    return out


def parse_port(spec: str, where: str) -> dict:
    """One ``--port`` value → ``{qos_rules, vnic_type, physical_network, network_type}``."""
    port: dict = {"qos_rules": []}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, eq, value = item.partition("=")
        if eq:
            if key.strip() not in _PORT_KEYS or not value.strip():
                raise InvalidInput(f"{where}: unknown item {item!r}; expected vnic=TYPE, physnet=NAME or "
                                   f"network_type=TYPE")
            port[_PORT_KEYS[key.strip()]] = value.strip()
            continue
        parts = item.split(":")
        if len(parts) != 3 or parts[0] not in _RULE_KINDS:
            raise InvalidInput(f"{where}: unknown item {item!r}; expected min_bw:DIRECTION:KBPS, "
                               f"min_pps:DIRECTION:KPPS, vnic=TYPE, physnet=NAME or network_type=TYPE")
        rtype, vkey = _RULE_KINDS[parts[0]]
        try:
            value = int(parts[2])
        except ValueError:
            raise InvalidInput(f"{where}: {item!r}: {vkey} must be a whole number, got {parts[2]!r}") from None
        port["qos_rules"].append({"type": rtype, "direction": parts[1], vkey: value})
    return port


def request_from_args(args):
    from minbw.cli.main import load_port_request
    from minbw.plan.capacity import capacity_request
    specs = args.port or []
    return capacity_request(
        parse_resources(args.resources), filter(None, (args.required or "").split(",")),
        [load_port_request(x) for x in args.port_request or ()],
        [parse_port(spec, f"--port {i} ({spec})") for i, spec in enumerate(specs, 1)],
        group_policy=args.group_policy, resources_option="--resources",
        port_labels=[f"--port {i}" for i in range(1, len(specs) + 1)])


# ---------------------------------------------------------------- the table

def _short(host: str):
    """Neutron names providers HOST:AGENT[:DEVICE]: the table and the picture keep the last part."""
    def short(name: str) -> str:
        return name[len(host) + 1:].rsplit(":", 1)[-1] if name.startswith(host + ":") else name
    return short


def _limits(fit: dict, host: str) -> str:
    """The first limit (the one with least left over; --json lists them all)."""
    from minbw.plan.capacity import Limit
    if not fit["limited_by"]:
        return "-"
    first = Limit(**fit["limited_by"][0]).describe(_short(host))
    more = len(fit["limited_by"]) - 1
    return first + (f" (+{more} more at the same count)" if more and not fit["limited_by"][0]["reason"] else "")


def rows(report: dict) -> list[list]:
    """host, physnet, fits, limited by: a row per physnet of each host, and "(any)" for the host as a whole
    when its port's physnet is open and it has several."""
    out = []
    for h in report["hosts"]:
        for n in h["physnets"]:
            out.append([h["host"], n["physnet"], n["fits"], _limits(n, h["host"])])
        if len(h["physnets"]) != 1:
            out.append([h["host"], "(any)" if h["physnets"] else "-", h["fits"], _limits(h, h["host"])])
    return out


def notes(report: dict) -> list[str]:
    out = list(report["notes"])
    for h in report["hosts"]:
        out += [f"{h['host']}: {n}" for n in h["notes"]]
        for p in h["physnets"]:
            out += [f"{h['host']} {p['physnet']}: {n}" for n in p["notes"] if n not in h["notes"]]
    return out


COLUMNS = ("host", "physnet", "fits", "limited by")


def report_output(report: dict):
    from minbw.cli.output import Output
    tail = tuple(f"{p['physnet']}: {p['fits']} more server(s) on {p['hosts']} host(s)" for p in report["physnets"])
    tail += (f"total: {report['total']} more server(s)",) + tuple(f"note: {n}" for n in notes(report))
    return Output(report, COLUMNS, tuple(tuple(r) for r in rows(report)), align_right=("fits",), tail=tail)


# ---------------------------------------------------------------- the picture

def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("--png/--html draw with matplotlib, which is not installed. Fix: "
                                "pip install 'minbw[plot]' (or pip install matplotlib).") from None
    matplotlib.use("Agg")  # files only, never a display
    from matplotlib.figure import Figure
    return Figure


_KINDS = (("bandwidth", "kbps", "NET_BW_"), ("packet rate", "kpps", "NET_PACKET_RATE_"))
_DIRECTION = {"NET_BW_EGR_KILOBIT_PER_SEC": "egress", "NET_BW_IGR_KILOBIT_PER_SEC": "ingress",
              "NET_PACKET_RATE_KILOPACKET_PER_SEC": "any", "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": "egress",
              "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": "ingress"}


def render_png(report: dict) -> bytes:
    """Used and free bandwidth (and packet rate, when there is any) of each provider, one row of charts
    per host, the host's count in its title."""
    Figure = _matplotlib()
    hosts = [h["host"] for h in report["hosts"]]
    kinds = [k for k in _KINDS if any(p["resource_class"].startswith(k[2]) for p in report["providers"])] or [_KINDS[0]]
    bars = {(h, k[0]): [p for p in report["providers"] if p["host"] == h and p["resource_class"].startswith(k[2])]
            for h in hosts for k in kinds}
    heights = [max(1, max(len(bars[(h, k[0])]) for k in kinds)) for h in hosts] or [1]
    fig = Figure(figsize=(6.5 * len(kinds), 1.2 + sum(0.45 * n + 0.9 for n in heights)), dpi=100)
    grid = fig.add_gridspec(max(1, len(hosts)), len(kinds), height_ratios=heights)
    fits = {h["host"]: h["fits"] for h in report["hosts"]}
    legend = None
    for r, host in enumerate(hosts):
        for c, (kind, unit, _) in enumerate(kinds):
            ax = fig.add_subplot(grid[r, c])
            items = bars[(host, kind)]
            ax.set_title(f"{host}: {fits[host]} more server(s) — {kind} ({unit})", fontsize=9, loc="left")
            if not items:
                ax.text(0.5, 0.5, f"no {kind} inventory", ha="center", va="center", fontsize=8, color="grey")
                ax.set_axis_off()
                continue
            labels = [f"{_short(host)(p['provider'])} {_DIRECTION.get(p['resource_class'], p['resource_class'])}"
                      + (f" [{','.join(p['physnets'])}]" if p.get("physnets") else "") for p in items]
            ys = range(len(items))
            used = [min(p["used"], p["capacity"]) for p in items]
            ax.barh(ys, used, color="#c0392b", label="used")
            ax.barh(ys, [p["free"] for p in items], left=used, color="#27ae60", alpha=0.55, label="free")
            over = [max(p["used"] - p["capacity"], 0) for p in items]
            if any(over):
                ax.barh(ys, over, left=[p["capacity"] for p in items], color="#8e44ad", label="over capacity")
            top = max(max(p["capacity"], p["used"]) for p in items) or 1
            for y, p in zip(ys, items):
                ax.text(top * 1.01, y, f"{p['used']}/{p['capacity']}", va="center", fontsize=7)
            ax.set_yticks(list(ys), labels, fontsize=7)
            ax.set_ylim(heights[r] - 0.5, -0.5)  # the same bar thickness in every chart, first on top
            ax.set_xlim(0, top * 1.18)
            ax.tick_params(axis="x", labelsize=7)
            legend = legend or ax.get_legend_handles_labels()
    if not hosts:
        fig.text(0.5, 0.5, "no hosts", ha="center")
    fig.suptitle(f"minbw capacity: {report['total']} more server(s) in total", fontsize=11)
    if legend:
        fig.legend(*legend, loc="upper right", fontsize=8, ncols=len(legend[0]))
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def render_html(report: dict, png: bytes) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in rows(report))
    totals = "".join(f"<li>{esc(p['physnet'])}: {p['fits']} more server(s) on {p['hosts']} host(s)</li>"
                     for p in report["physnets"])
    note_items = "".join(f"<li>{esc(n)}</li>" for n in notes(report))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>minbw capacity</title>"
            f"<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}"
            f"td,th{{border:1px solid #999;padding:2px 8px}}</style></head><body>\n"
            f"<h1>{report['total']} more server(s)</h1>\n<table><tr>{head}</tr>{body}</table>\n"
            f"<ul>{totals}</ul>\n" + (f"<p>Notes:</p><ul>{note_items}</ul>\n" if note_items else "") +
            f"<img alt=\"used and free bandwidth per provider\" "
            f"src=\"data:image/png;base64,{base64.b64encode(png).decode()}\">\n</body></html>\n")


# ---------------------------------------------------------------- the command

def cmd_capacity(args) -> int:
    from minbw.cli.cloud import connect
    from minbw.cli.output import emit
    from minbw.placement.client import Placement
    from minbw.reports.capacity import capacity_report
    req = request_from_args(args)  # bad input fails before anything is read
    if args.png or args.html:
        _matplotlib()  # and so does a missing matplotlib
    report = capacity_report(Placement(connect(args)), req, args.hypervisor, option="--hypervisor").to_dict()
    if args.png or args.html:
        png = render_png(report)
        if args.png:
            with open(args.png, "wb") as f:
                f.write(png)
        if args.html:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(render_html(report, png))
    emit(args, report_output(report))
    return 0


def register(subparsers) -> None:
    from minbw.cli.cloud import add_cloud_arguments
    from minbw.cli.output import add_output_arguments
    sp = subparsers.add_parser("capacity", help="how many more servers of one shape fit, per host and physnet "
                                                "(read-only)")
    sp.add_argument("--resources", metavar="CLASS:N,...", help="the flavor's resources, e.g. VCPU:1,MEMORY_MB:256,DISK_GB:1")
    sp.add_argument("--required", metavar="TRAIT,...", help="traits the flavor requires (!TRAIT: forbids)")
    sp.add_argument("--port", action="append", metavar="RULES[,vnic=TYPE][,physnet=NAME]", help=PORT_HELP)
    sp.add_argument("--port-request", action="append", metavar="[PORT_ID=]FILE",
                    help="a port's resource_request JSON (either format) or the port JSON, as for candidates; repeat")
    sp.add_argument("--group-policy", choices=("none", "isolate"), help="default: none with several port groups (as Nova)")
    sp.add_argument("--hypervisor", metavar="NAME", help="only this compute node")
    sp.add_argument("--png", metavar="FILE", help="draw used/free bandwidth per provider, grouped by host (matplotlib)")
    sp.add_argument("--html", metavar="FILE", help="the table and the picture in one HTML file (matplotlib)")
    add_output_arguments(sp, COLUMNS)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_capacity)
