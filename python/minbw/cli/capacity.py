"""``capacity show``: how many more servers of one shape fit, per host and
physnet; a table, JSON, and a picture of used/free bandwidth per provider (PNG or HTML, with matplotlib)."""

from __future__ import annotations

import base64
import html
import io

from minbw.cli.base import Command, View
from minbw.cli.options import (
    add_nova_arguments,
    add_port_arguments,
    add_report_cache_argument,
    add_resource_arguments,
    load_port_request,
    names,
    nova_spec_fields,
    report_cloud,
    resources,
)
from minbw.errors import MissingDependency

# ---------------------------------------------------------------- the table


def _short(host: str):
    """Neutron names providers HOST:AGENT[:DEVICE]: the table and the picture keep the last part."""

    def short(name: str) -> str:
        return name.removeprefix(host + ":").rsplit(":", 1)[-1] if name.startswith(host + ":") else name

    return short


def _limits(fit: dict, host: str) -> str:
    """The first limit (the one with least left over; --json lists them all)."""
    from minbw.usecases.capacity import Limit

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


def report_view(report: dict) -> View:
    tail = tuple(f"{p['physnet']}: {p['fits']} more server(s) on {p['hosts']} host(s)" for p in report["physnets"])
    tail += (f"total: {report['total']} more server(s)",) + tuple(f"note: {n}" for n in notes(report))
    return View(report, COLUMNS, tuple(tuple(r) for r in rows(report)), tail=tail)


# ---------------------------------------------------------------- the picture


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency(
            "--png/--html draw with matplotlib, which is not installed. Fix: "
            "pip install matplotlib (from a minbw checkout: pip install './python[plot]')."
        ) from None
    matplotlib.use("Agg")  # files only, never a display
    from matplotlib.figure import Figure

    return Figure


_KINDS = (("bandwidth", "kbps", "NET_BW_"), ("packet rate", "kpps", "NET_PACKET_RATE_"))
_DIRECTION = {
    "NET_BW_EGR_KILOBIT_PER_SEC": "egress",
    "NET_BW_IGR_KILOBIT_PER_SEC": "ingress",
    "NET_PACKET_RATE_KILOPACKET_PER_SEC": "any",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": "egress",
    "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": "ingress",
}


def render_png(report: dict) -> bytes:
    """Used and free bandwidth (and packet rate, when there is any) of each provider, one row of charts
    per host, the host's count in its title."""
    Figure = _matplotlib()
    hosts = [h["host"] for h in report["hosts"]]
    kinds = [k for k in _KINDS if any(p["resource_class"].startswith(k[2]) for p in report["providers"])] or [_KINDS[0]]
    bars = {
        (h, k[0]): [p for p in report["providers"] if p["host"] == h and p["resource_class"].startswith(k[2])]
        for h in hosts
        for k in kinds
    }
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
            labels = [
                f"{_short(host)(p['provider'])} {_DIRECTION.get(p['resource_class'], p['resource_class'])}"
                + (f" [{','.join(p['physnets'])}]" if p.get("physnets") else "")
                for p in items
            ]
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
    totals = "".join(
        f"<li>{esc(p['physnet'])}: {p['fits']} more server(s) on {p['hosts']} host(s)</li>" for p in report["physnets"]
    )
    note_items = "".join(f"<li>{esc(n)}</li>" for n in notes(report))
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>minbw capacity</title>"
        f"<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}"
        f"td,th{{border:1px solid #999;padding:2px 8px}}</style></head><body>\n"
        f"<h1>{report['total']} more server(s)</h1>\n<table><tr>{head}</tr>{body}</table>\n"
        f"<ul>{totals}</ul>\n"
        + (f"<p>Notes:</p><ul>{note_items}</ul>\n" if note_items else "")
        + f"<img alt=\"used and free bandwidth per provider\" "
        f"src=\"data:image/png;base64,{base64.b64encode(png).decode()}\">\n</body></html>\n"
    )


# ---------------------------------------------------------------- the command


class ShowCapacity(Command):
    """How many more servers of one shape fit, per host and physnet (read-only)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        add_report_cache_argument(parser)
        add_resource_arguments(parser, "a trait the flavor requires (!TRAIT: forbids)")
        add_nova_arguments(parser)
        add_port_arguments(parser, neutron_ports=False)
        parser.add_argument("--hypervisor", metavar="NAME", help="only this compute node")
        parser.add_argument(
            "--png", metavar="FILE", help="draw used/free bandwidth per provider, grouped by host (matplotlib)"
        )
        parser.add_argument("--html", metavar="FILE", help="the table and the picture in one HTML file (matplotlib)")

    def view(self, parsed_args):
        from minbw.usecases.capacity import CapacityQuery, capacity

        specs = parsed_args.qos_port or []
        query = CapacityQuery(
            resources(parsed_args),
            tuple(names(parsed_args.required)),
            tuple(load_port_request(x) for x in parsed_args.port_request or ()),
            tuple(specs),
            group_policy=parsed_args.group_policy,
            hypervisor=parsed_args.hypervisor,
            resources_option="--resource",
            hypervisor_option="--hypervisor",
            port_labels=tuple(f"--qos-port {i}" for i in range(1, len(specs) + 1)),
            **nova_spec_fields(parsed_args),
        )
        if parsed_args.png or parsed_args.html:
            _matplotlib()  # a missing matplotlib fails before anything is read
        report = capacity(report_cloud(self.cloud(parsed_args, progress=True), parsed_args), query).to_dict()
        if parsed_args.png or parsed_args.html:
            png = render_png(report)
            if parsed_args.png:
                with open(parsed_args.png, "wb") as f:
                    f.write(png)
            if parsed_args.html:
                with open(parsed_args.html, "w", encoding="utf-8") as f:
                    f.write(render_html(report, png))
        return report_view(report)
