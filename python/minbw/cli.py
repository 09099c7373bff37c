"""The ``minbw`` command."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from minbw import __version__
from minbw.errors import MinbwError, PlacementError


def _json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


def _progress(msg: str) -> None:
    print(f"minbw: {msg}", file=sys.stderr, flush=True)


def _api(args):
    from minbw.cloud import connect
    from minbw.placement import Placement
    return Placement(connect(args))


def parse_inventory_spec(text: str) -> dict[str, dict]:
    """``VCPU=8,MEMORY_MB=16384`` → inventories (totals, Placement defaults for the rest)."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        rc, sep, total = item.partition("=")
        if not sep or not total.strip().isdigit():
            raise MinbwError(f"--root-inventory: expected CLASS=TOTAL[,CLASS=TOTAL...], got {item!r}")
        out[rc.strip()] = {"total": int(total)}
    return out


# ---------------------------------------------------------------- placement serve

def cmd_placement_serve(args) -> int:
    from minbw.serve import serve
    return serve(args.port, args.state_dir, host=args.host)


# ---------------------------------------------------------------- providers

def _desired(args):
    from minbw.agentconf import load_agent_ini
    from minbw.providers import desired_state
    configs = []
    for path in args.agent_config:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise MinbwError(f"--agent-config {path}: {e.strerror}") from None
        configs.append(load_agent_ini(text, source=path, host=args.host))
    return desired_state(configs)


def _print_plan(plan, result=None) -> None:
    if not plan.ops:
        print("Placement already matches the configuration: 0 writes.")
    for op in plan.ops:
        print(("  done: " if result else "  plan: ") + str(op))
    for k in plan.kept:
        print("  " + str(k))
    if result:
        print(f"{result.writes} writes" + (f", {result.retries} retried after concurrent updates" if result.retries else ""))
    elif plan.ops:
        print(f"{len(plan.ops)} writes planned (nothing written)")


def cmd_providers(args) -> int:
    from minbw import sync as s
    desired = _desired(args)
    api = _api(args)
    root_inv = parse_inventory_spec(args.root_inventory) if args.root_inventory else None
    plan, result = s.sync(api, desired, check=args.action == "plan", create_root=args.create_root,
                          root_inventories=root_inv, progress=_progress)
    if args.json:
        out = plan.to_dict()
        out["diff"] = plan.diff()
        if result is not None:
            out["result"] = result.to_dict()
        _json(out)
    else:
        _print_plan(plan, result)
    return 0


def provider_report(api, hypervisor: str | None = None) -> list[dict]:
    """Every provider (or one hypervisor's tree) with traits, inventories and usages."""
    if hypervisor:
        roots = api.list_providers(name=hypervisor)
        if not roots:
            raise MinbwError(f"no resource provider named {hypervisor!r}")
        provs = api.list_providers(in_tree=roots[0].uuid)
    else:
        provs = api.list_providers()
    out = []
    for p in provs:
        traits, _ = api.get_provider_traits(p.uuid)
        invs, _ = api.get_inventories(p.uuid)
        out.append({"uuid": p.uuid, "name": p.name, "generation": p.generation, "root_provider_uuid": p.root_uuid,
                    "parent_provider_uuid": p.parent_uuid, "traits": sorted(traits), "inventories": invs,
                    "usages": api.provider_usages(p.uuid) if invs else {}})
    return _tree_order(out)


def _tree_order(provs: list[dict]) -> list[dict]:
    children: dict = {}
    for p in provs:
        children.setdefault(p["parent_provider_uuid"], []).append(p)
    known = {p["uuid"] for p in provs}
    ordered: list[dict] = []

    def walk(p):
        ordered.append(p)
        for c in sorted(children.get(p["uuid"], []), key=lambda x: x["name"]):
            walk(c)
    for p in sorted(provs, key=lambda x: x["name"]):
        if p["parent_provider_uuid"] not in known:
            walk(p)
    return ordered


def print_provider_report(report: list[dict], only_with_inventory: bool = False) -> None:
    from minbw import tables
    print(tables.provider_table(report))
    for p in report:
        if only_with_inventory and not p["inventories"]:
            continue
        print(f"\n{p['name']} ({p['uuid']})")
        if p["traits"]:
            print(tables.table(("trait",), [[t] for t in p["traits"]]))
        if p["inventories"]:
            print(tables.inventory_table(p["inventories"]))
            print(tables.usage_table(p["usages"]))


def cmd_providers_show(args) -> int:
    report = provider_report(_api(args), args.hypervisor)
    if args.json:
        _json(report)
    else:
        print_provider_report(report)
    return 0


# ---------------------------------------------------------------- main

def build_parser() -> argparse.ArgumentParser:
    from minbw.cloud import add_cloud_arguments
    p = argparse.ArgumentParser(prog="minbw", description="Guaranteed minimum bandwidth for OpenStack, end to end.")
    p.add_argument("--version", action="version", version=f"minbw {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    pl = sub.add_parser("placement", help="the embedded real Placement").add_subparsers(dest="sub", required=True)
    serve = pl.add_parser("serve", help="run openstack-placement on 127.0.0.1 (SQLite, noauth2) in the foreground")
    serve.add_argument("--port", type=int, default=8780)
    serve.add_argument("--state-dir", required=True, help="SQLite database, placement.conf, clouds.yaml, log")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.set_defaults(func=cmd_placement_serve)

    prov = sub.add_parser("providers", help="bandwidth resource providers").add_subparsers(dest="action", required=True)
    for name, helptext in (("plan", "show the writes a sync would make (writes nothing)"),
                           ("sync", "make Placement match the agents' configuration")):
        sp = prov.add_parser(name, help=helptext)
        sp.add_argument("--agent-config", action="append", required=True, metavar="FILE",
                        help="an OVS ([ovs]) or SR-IOV ([sriov_nic]) agent ini file; repeat for several")
        sp.add_argument("--host", help="the agent host ([DEFAULT] host); also the default hypervisor name")
        sp.add_argument("--create-root", action="store_true",
                        help="create a missing compute node root provider, as nova-compute would")
        sp.add_argument("--root-inventory", metavar="CLASS=TOTAL,...",
                        help="with --create-root: the root's inventories, e.g. VCPU=8,MEMORY_MB=16384,DISK_GB=100")
        sp.add_argument("--json", action="store_true")
        add_cloud_arguments(sp)
        sp.set_defaults(func=cmd_providers)
    show = prov.add_parser("show", help="providers with traits, inventories and usage")
    show.add_argument("--hypervisor", help="only this compute node's tree")
    show.add_argument("--json", action="store_true")
    add_cloud_arguments(show)
    show.set_defaults(func=cmd_providers_show)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PlacementError as e:
        if getattr(args, "json", False):
            _json({"error": e.to_dict()})
        print(f"minbw: error: {e}", file=sys.stderr)
        return 1
    except MinbwError as e:
        if getattr(args, "json", False):
            _json({"error": {"msg": str(e)}})
        print(f"minbw: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
