"""The ``minbw`` command."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from minbw import __version__
from minbw.cli import tables
from minbw.cli.output import Output, Section, add_output_arguments, emit, wants_json
from minbw.cli.progress import progress_of
from minbw.errors import InvalidInput, MinbwError, NoValidHost
from minbw.ops.sync import DEFAULT_CACHE_MAX_AGE, DEFAULT_WORKERS, MAX_WORKERS

EXIT_ERROR = 1       # an error: bad input, a refusal, an unreachable cloud, bad credentials
EXIT_USAGE = 2       # argparse: an unknown option or a bad value, found before anything is read
EXIT_FINDINGS = 3    # audit / drift / heal found something that is left (a CI gate)
EXIT_NO_VALID_HOST = 4  # claim, candidates, move: Placement has no host for the request (not an error)


def _api(args):
    from minbw.cli.cloud import connect
    from minbw.placement.client import Placement
    return Placement(connect(args))


def parse_inventory_spec(text: str) -> dict[str, dict]:
    """``VCPU=8,MEMORY_MB=16384`` → inventories (totals, Placement defaults for the rest)."""
    from minbw.model.providers import root_inventories
    totals = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        rc, sep, total = item.partition("=")
        if not sep or not total.strip().isdigit():
            raise InvalidInput(f"--root-inventory: expected CLASS=TOTAL[,CLASS=TOTAL...], got {item!r}")
        totals[rc.strip()] = total
    return root_inventories(totals, option="--root-inventory")


# ---------------------------------------------------------------- placement serve

def cmd_placement_serve(args) -> int:
    if not args.daemon:
        given = [opt for opt, value in (("--pid-file", args.pid_file), ("--log-file", args.log_file),
                                        ("--timeout", args.timeout), ("-f/--json/-c", args.format or args.columns))
                 if value is not None]
        if given:
            args.format = None
            raise InvalidInput(f"{', '.join(given)}: only with --daemon (without it, serve runs in the foreground)")
        from minbw.deploy.serve import serve
        return serve(args.port, args.state_dir, host=args.host)
    from minbw.deploy import daemon
    result = daemon.start(args.state_dir, args.port, pid_file=args.pid_file, log_file=args.log_file,
                          timeout=daemon.START_TIMEOUT if args.timeout is None else args.timeout, host=args.host)
    said = (f"minbw: placement started on {result['url']} (pid {result['pid']}, log {result['log_file']}, "
            f"cloud {result['cloud']!r} in {result['clouds_yaml']})" if result["changed"]
            else f"minbw: placement already running on {result['url']} (pid {result['pid']})")
    emit(args, fields_output(result, DAEMON_COLUMNS, said))
    return 0


DAEMON_COLUMNS = ("changed", "running", "pid", "url", "port", "cloud", "clouds_yaml", "state_dir", "pid_file",
                  "log_file", "ours", "port_in_use")


def fields_output(document: dict, columns: tuple[str, ...], said: str) -> Output:
    """A one-object result: the sentence in -f table, its fields for -c / -f value."""
    return Output(document, columns, (tuple(document.get(c) for c in columns),), fields=True, head=(said,),
                  show_table=False)


def cmd_placement_stop(args) -> int:
    from minbw.deploy import daemon
    result = daemon.stop(args.state_dir, pid_file=args.pid_file, timeout=args.timeout)
    emit(args, fields_output(result, DAEMON_COLUMNS, f"minbw: placement stopped (pid {result['pid']})"
                             if result["changed"] else f"minbw: placement of {result['state_dir']} is not running"))
    return 0


def cmd_placement_status(args) -> int:
    from minbw.deploy import daemon
    result = daemon.status(args.state_dir, port=args.port, pid_file=args.pid_file, host=args.host)
    if result["running"]:
        said = f"minbw: placement running on {result['url']} (pid {result['pid']}, state {result['state_dir']})"
    else:
        why = (f"its process (pid {result['pid']}) does not answer on {result['url']}" if result["ours"]
               else f"{result['url']} is held by another process" if result["port_in_use"] else "")
        said = f"minbw: placement of {result['state_dir']} is not running" + (f": {why}" if why else "")
    emit(args, fields_output(result, DAEMON_COLUMNS, said))
    return 0


def uuid_arg(text: str) -> str:
    """A UUID option (Placement's consumers and providers are UUIDs): refused by argparse, exit 2."""
    import uuid
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a UUID (e.g. from uuidgen), got {text!r}") from None


def _tcp_port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
        raise argparse.ArgumentTypeError(f"expected a TCP port number 1-65535, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


# ---------------------------------------------------------------- providers

def _desired(args):
    from minbw.cli import ovn as ovn_cli
    from minbw.ops import ovn
    from minbw.ops.agent_files import read_agent_configs
    if not args.agent_config and not ovn_cli.given(args):
        raise InvalidInput("give the configuration: --agent-config FILE (OVS / SR-IOV agents) and/or ML2/OVN "
                           "chassis options (--ovn-chassis FILE, --ovn-sb-db [DB], --ovs-db [DB])")
    configs = read_agent_configs(args.agent_config, host=args.host, paths_option="--agent-config")
    chassis, complete = ovn_cli.read_chassis(args) if ovn_cli.given(args) else ([], False)
    return ovn.desired(configs, chassis, complete=complete)


PLAN_COLUMNS = ("step", "write")


def plan_output(plan, result=None, summary: str | None = None) -> Output:
    """The writes of a providers plan (or sync): a row each; what was kept and the count under them."""
    out = plan.to_dict()
    out["diff"] = plan.diff()
    out["result"] = result.to_dict() if result is not None else None  # null: nothing written (a plan, or 0 writes)
    if summary is not None:
        out["summary"] = summary
    head = () if plan.ops else ("Placement already matches the configuration: 0 writes.",)
    tail = tuple("  " + str(k) for k in plan.kept)
    if result:
        tail += (f"{result.writes} writes" + (f", {result.retries} retried after concurrent updates"
                                              if result.retries else ""),)
    elif plan.ops:
        tail += (f"{len(plan.ops)} writes planned (nothing written)",)
    tail += (summary,) if summary else ()
    rows = tuple(("done" if result else "plan", str(op)) for op in plan.ops)
    return Output(out, PLAN_COLUMNS, rows, head=head, tail=tail, show_table=bool(rows))


def cmd_providers(args) -> int:
    from minbw.ops import sync as s
    desired = _desired(args)
    workers = s.check_workers(args.workers, "--workers")
    max_age = s.check_max_age(args.cache_max_age, "--cache-max-age")
    api = _api(args)
    root_inv = parse_inventory_spec(args.root_inventory) if args.root_inventory else None
    cache = None
    if not args.no_cache:
        path = args.cache or s.default_cache_path(api.endpoint())
        cache = s.ProviderCache(path, api.endpoint(), max_age=max_age)
    started, calls = time.perf_counter(), api.calls
    with progress_of(args) as progress:
        plan, result = s.sync(api, desired, check=args.action == "plan", create_root=args.create_root,
                              root_inventories=root_inv, absent=args.absent, progress=progress, cache=cache,
                              workers=workers)
    line = s.summary(desired, plan, result, seconds=time.perf_counter() - started, calls=api.calls - calls,
                     cache=cache, check=args.action == "plan")
    from minbw.cli.ovn import warn
    warn(plan.warnings)
    emit(args, plan_output(plan, result, line))
    return 0


def provider_report_output(report: list[dict]) -> Output:
    """osc-placement's provider list, then each provider's traits and inventories (with ``used``)."""
    sections = []
    for p in report:
        title = f"{p['name']} ({p['uuid']})"
        if p["traits"]:
            sections.append(Section(title, ("trait",), tuple((t,) for t in p["traits"])))
            title = ""
        if p["inventories"]:
            sections.append(Section(title, tables.INVENTORY_COLUMNS,
                                    tables.inventory_rows(p["inventories"], p["usages"]),
                                    align_right=tables.INVENTORY_COLUMNS[1:]))
    return Output(report, tables.PROVIDER_COLUMNS, tables.provider_rows(report), align_right=("generation",),
                  sections=tuple(sections))


def cmd_providers_show(args) -> int:
    from minbw.reports.providers import provider_report
    report = provider_report(_api(args), args.hypervisor)
    emit(args, provider_report_output(report))
    return 0


# ---------------------------------------------------------------- requests, candidates, claims

def parse_resources(text: str, option: str = "--resources") -> dict[str, int]:
    """``VCPU:1,MEMORY_MB:256`` → {class: amount}."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        rc, sep, amount = item.partition(":")
        if not sep or not amount.strip().isdigit():
            raise InvalidInput(f"{option}: expected CLASS:AMOUNT[,CLASS:AMOUNT...], got {item!r}")
        out[rc.strip()] = int(amount)
    return out


def load_port_request(spec: str) -> dict:
    """``[PORT_ID=]FILE``: a port's resource_request JSON (either format), or a port as Neutron shows it."""
    port_id, sep, path = spec.partition("=")
    if not sep:
        port_id, path = None, spec
    try:
        value = json.loads(Path(path).read_text())
    except OSError as e:
        raise InvalidInput(f"--port-request {path}: {e.strerror}") from None
    except ValueError as e:
        raise InvalidInput(f"--port-request {path}: not JSON: {e}") from None
    if isinstance(value, dict) and "resource_request" in value:  # a whole port (openstack port show -f json)
        return {"port_id": port_id or value.get("id"), "resource_request": value["resource_request"]}
    return {"port_id": port_id, "resource_request": value}


def request_from_args(args):
    """The server's request from the candidates/claim options."""
    from minbw.cli.separation import separation_from_args
    from minbw.model.requests import ServerRequest
    from minbw.plan.separation import separate
    return separate(ServerRequest.from_options(
        parse_resources(args.resources or ""), filter(None, (args.required or "").split(",")),
        [load_port_request(x) for x in args.port_request or ()], group_policy=args.group_policy,
        in_tree=args.in_tree, root_required=filter(None, (args.root_required or "").split(",")), limit=args.limit),
        separation_from_args(args))


def with_neutron_ports(api, args, req):
    """``req`` plus the --port Neutron ports (their groups, their routed segments); and each port's segments."""
    if not getattr(args, "port", None):
        return req, []
    from minbw.ops.schedule import with_neutron_ports as add_ports
    return add_ports(api, req, args.port, any_traits=args.any_traits)


def cmd_request(args) -> int:
    from minbw.neutron.port_request import Segment, build_port_request
    from minbw.neutron.qos import QosRule
    rules = []
    for i, spec in enumerate(args.rule or ()):
        parts = spec.split(":")
        if len(parts) not in (3, 4) or parts[0] not in ("min_bw", "min_pps") or not parts[2].isascii() \
                or not parts[2].isdigit():
            raise InvalidInput(f"--rule {spec!r}: expected min_bw:DIRECTION:KBPS[:RULE_ID] or "
                             f"min_pps:DIRECTION:KPPS[:RULE_ID]")
        kind = "minimum_bandwidth" if parts[0] == "min_bw" else "minimum_packet_rate"
        rule_id = parts[3] if len(parts) == 4 else str(__import__("uuid").uuid5(
            __import__("uuid").UUID(args.port_id), f"rule-{i}"))
        rules.append(QosRule(rule_id, kind, parts[1], int(parts[2])))
    segments = []
    for spec in args.segment or ("vlan:physnet0",):
        net_type, _, physnet = spec.partition(":")
        segments.append(Segment(net_type, physnet or None))
    pr = build_port_request(args.port_id, rules, segments, args.vnic_type, agent_kind=args.agent_type,
                            any_traits=args.any_traits)
    for note in (pr.notes if pr else ()):
        print(f"note: {note}", file=sys.stderr)
    emit(args, request_output(args.port_id, pr, legacy=args.legacy))
    return 0


REQUEST_COLUMNS = ("group", "resources", "required")


def request_output(port_id: str, pr, legacy: bool = False) -> Output:
    """The port as ``--port-request`` reads it back (``id`` and ``resource_request``, as Neutron shows a
    port), and a row per request group for -f table/value."""
    value = None if pr is None else (pr.to_legacy() if legacy else pr.to_neutron())
    document = {"id": port_id, "resource_request": value, "mode": pr.mode if pr else None,
                "notes": list(pr.notes) if pr else []}
    groups = ((value or {}).get("request_groups") or [dict(value, id="")]) if value else []
    rows = tuple((g.get("id", ""), ",".join(f"{rc}:{n}" for rc, n in sorted(g.get("resources", {}).items())),
                  ",".join(g.get("required", []))) for g in groups)
    return Output(document, REQUEST_COLUMNS, rows)


CANDIDATE_COLUMNS = ("#", "host", "request group → provider")


def candidate_rows(view: list[dict], names) -> tuple[tuple, ...]:
    rows = []
    for i, cand in enumerate(view, 1):
        if cand["mapping"] is not None:
            groups = "; ".join(f"{gid or 'flavor'} → {names.get(rps[0], rps[0])}" for gid, rps in cand["mapping"].items())
        else:
            groups = cand["mapping_problem"]
        rows.append((i, cand["host_name"] or "?", groups))
    return tuple(rows)


def cmd_candidates(args) -> int:
    from minbw.ops import claims
    from minbw.reports.diagnose import diagnose, summary
    api = _api(args)
    req, segments = with_neutron_ports(api, args, request_from_args(args))
    cands = claims.get_candidates(api, req)
    diagnosis = diagnose(api, req) if not cands.allocation_requests else []
    if diagnosis and segments:
        from minbw.ops.schedule import hosts_outside_segments
        outside = hosts_outside_segments(api, req, segments)
        if outside:
            diagnosis.append({"group": "member_of", "label": "the ports' segments", "problems": [outside]})
    from minbw.placement.query import query_string
    head = (f"GET /allocation_candidates?{query_string(cands.params)}  (microversion {cands.microversion})",)
    rows = ()
    if cands.allocation_requests:
        from minbw.reports.candidates import candidate_view
        names = api.provider_names()
        rows = candidate_rows(candidate_view(cands, req, names), names)
    else:
        head += ("No allocation candidates. " + summary(diagnosis),)
    emit(args, Output({**cands.to_dict(), "diagnosis": diagnosis, "segments": segments}, CANDIDATE_COLUMNS, rows, head=head,
                      show_table=bool(rows)))
    return 0 if cands.allocation_requests else EXIT_NO_VALID_HOST


def cmd_claim(args) -> int:
    from minbw.ops import claims
    api = _api(args)
    req, segments = with_neutron_ports(api, args, request_from_args(args))
    try:
        claim = claims.named(api, claims.claim(
            api, args.consumer, req, project_id=args.consumer_project_id, user_id=args.consumer_user_id,
            consumer_type=args.consumer_type, max_hosts=args.max_hosts))
    except NoValidHost as e:
        if segments:
            from minbw.ops.schedule import explain_segments
            e = explain_segments(api, req, segments, e)
        if wants_json(args):
            emit(args, Output({"claimed": False, **e.to_dict()}))
        print(f"minbw: {e}", file=sys.stderr)
        return EXIT_NO_VALID_HOST
    names = api.provider_names()
    rows = tuple((names.get(rp, rp), rp, ",".join(f"{rc}={n}" for rc, n in alloc["resources"].items()))
                 for rp, alloc in claim.allocations.items())
    emit(args, Output({"claimed": True, **claim.to_dict()}, CLAIM_COLUMNS, rows,
                      head=(f"claimed for consumer {claim.consumer} on {claim.host_name} ({claim.host})",),
                      sections=binding_sections(claim.binding_profiles)))
    return 0


CLAIM_COLUMNS = ("provider", "uuid", "resources")


def binding_sections(binding_profiles: dict) -> tuple[Section, ...]:
    """Each port's binding:profile.allocation (what Nova writes to the port), a table under the main one."""
    if not binding_profiles:
        return ()
    return (Section("", ("port", "binding:profile.allocation"),
                    tuple((port, json.dumps(value)) for port, value in binding_profiles.items())),)


def cmd_free(args) -> int:
    from minbw.ops import claims
    freed = claims.free(_api(args), args.consumer)
    emit(args, fields_output({"changed": freed, "consumer": args.consumer}, ("changed", "consumer"),
                             f"freed the allocations of {args.consumer}" if freed
                             else f"{args.consumer} has no allocations"))
    return 0


USAGE_COLUMNS = ("uuid", "name", "generation", "resource_class", "used", "total")


def cmd_usage(args) -> int:
    api = _api(args)
    if args.provider:
        provs = [api.get_provider(args.provider)]
    else:
        from minbw.reports.providers import provider_report
        report = provider_report(api, args.hypervisor)
        provs = [api.get_provider(p["uuid"]) for p in report if p["inventories"]]
    out, rows, sections = [], [], []
    for p in provs:
        inventories = api.get_inventories(p.uuid)[0]
        out.append({"uuid": p.uuid, "name": p.name, "generation": p.generation,
                    "usages": api.provider_usages(p.uuid), "allocations": api.provider_allocations(p.uuid)})
        usages = out[-1]["usages"]
        rows += [(p.uuid, p.name, p.generation, rc, usages.get(rc, 0), inventories[rc]["total"])
                 for rc in sorted(inventories)]
        sections.append(Section(f"{p.name} ({p.uuid}): allocations", ("consumer", "resources"), tuple(
            (c, ",".join(f"{rc}={n}" for rc, n in sorted(a["resources"].items())))
            for c, a in sorted(out[-1]["allocations"].items()))))
    emit(args, Output(out, USAGE_COLUMNS, tuple(rows), align_right=("generation", "used", "total"),
                      sections=tuple(sections)))
    return 0


def _server_request_arguments(sp, columns: tuple[str, ...]) -> None:
    sp.add_argument("--resources", metavar="CLASS:N,...", help="the flavor's resources, e.g. VCPU:1,MEMORY_MB:256,DISK_GB:1")
    sp.add_argument("--required", metavar="TRAIT,...", help="traits the flavor requires")
    sp.add_argument("--port-request", action="append", metavar="[PORT_ID=]FILE",
                    help="a port's resource_request JSON (either format) or the port JSON; repeat per port")
    sp.add_argument("--port", action="append", metavar="NAME|ID",
                    help="a Neutron port: its resource_request and, on a routed network, member_of its segments' "
                         "aggregates (segments without free addresses left out); repeat per port")
    sp.add_argument("--any-traits", action="store_true",
                    help="with --port: a port on a network with several physnet segments may use any of them "
                         "(Neutron's own request uses only the first)")
    sp.add_argument("--group-policy", choices=("none", "isolate"), help="default: none with several port groups (as Nova)")
    sp.add_argument("--root-required", metavar="TRAIT,...")
    sp.add_argument("--in-tree", metavar="UUID", type=uuid_arg)
    sp.add_argument("--limit", type=int)
    from minbw.cli.separation import add_request_arguments
    add_request_arguments(sp)
    add_output_arguments(sp, columns)


# ---------------------------------------------------------------- main

def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command tree; ``argv`` tells openstacksdk which auth plugin's --os-* options to offer."""
    from minbw.cli.cloud import add_cloud_arguments, cloud_template
    from minbw.cli.ovn import add_ovn_arguments
    cloud_template(argv)
    p = argparse.ArgumentParser(prog="minbw", description="Guaranteed minimum bandwidth for OpenStack, end to end.")
    p.add_argument("--version", action="version", version=f"minbw {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    pl = sub.add_parser("placement", help="the embedded real Placement").add_subparsers(dest="sub", required=True)
    serve = pl.add_parser("serve", help="run openstack-placement on 127.0.0.1 (SQLite, noauth2) in the foreground, "
                                        "or in the background with --daemon")
    serve.add_argument("--port", type=_tcp_port, default=8780)
    serve.add_argument("--state-dir", required=True, help="SQLite database, placement.conf, clouds.yaml, log")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.add_argument("--daemon", action="store_true",
                       help="start it detached and return once it answers; does nothing when this state dir's "
                            "Placement already runs (idempotent)")
    serve.add_argument("--pid-file", metavar="FILE", help="with --daemon: default STATE_DIR/placement.pid")
    serve.add_argument("--log-file", metavar="FILE", help="with --daemon: default STATE_DIR/placement.log")
    serve.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                       help="with --daemon: how long to wait until it is ready (default 120)")
    add_output_arguments(serve, DAEMON_COLUMNS)  # with --daemon
    serve.set_defaults(func=cmd_placement_serve)
    pstop = pl.add_parser("stop", help="stop the Placement that serve --daemon started (idempotent)")
    pstop.add_argument("--state-dir", required=True)
    pstop.add_argument("--pid-file", metavar="FILE", help="default STATE_DIR/placement.pid")
    pstop.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                       help="SIGKILL when it has not exited this long after SIGTERM (default 30)")
    add_output_arguments(pstop, DAEMON_COLUMNS)
    pstop.set_defaults(func=cmd_placement_stop)
    pstatus = pl.add_parser("status", help="is the Placement of a state dir running? (read-only)")
    pstatus.add_argument("--state-dir", required=True)
    pstatus.add_argument("--pid-file", metavar="FILE", help="default STATE_DIR/placement.pid")
    pstatus.add_argument("--port", type=_tcp_port, help="default: the port of its running process, else 8780")
    pstatus.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    add_output_arguments(pstatus, DAEMON_COLUMNS)
    pstatus.set_defaults(func=cmd_placement_status)

    prov = sub.add_parser("providers", help="bandwidth resource providers").add_subparsers(dest="action", required=True)
    for name, helptext in (("plan", "show the writes a sync would make (writes nothing)"),
                           ("sync", "make Placement match the agents' configuration")):
        sp = prov.add_parser(name, help=helptext)
        sp.add_argument("--agent-config", action="append", default=[], metavar="FILE",
                        help="an OVS ([ovs]) or SR-IOV ([sriov_nic]) agent ini file; repeat for several")
        sp.add_argument("--host", help="the agent host ([DEFAULT] host); also the default hypervisor name")
        add_ovn_arguments(sp)
        sp.add_argument("--create-root", action="store_true",
                        help="create a missing compute node root provider, as nova-compute would")
        sp.add_argument("--root-inventory", metavar="CLASS=TOTAL,...",
                        help="with --create-root: the root's inventories, e.g. VCPU=8,MEMORY_MB=16384,DISK_GB=100")
        cache_opts = sp.add_mutually_exclusive_group()
        cache_opts.add_argument("--cache", metavar="FILE",
                        help="where the sync remembers what it read and wrote (default: one file per Placement "
                             "endpoint under $XDG_CACHE_HOME/minbw or ~/.cache/minbw); the next sync re-reads only "
                             "providers whose generation moved or that the cache's safety check doubts")
        cache_opts.add_argument("--no-cache", action="store_true",
                        help="read every provider's traits and inventories; use and write no cache")
        sp.add_argument("--cache-max-age", type=float, default=DEFAULT_CACHE_MAX_AGE, metavar="SECONDS",
                        help="re-read providers the cache last read or wrote longer ago than this "
                             f"(the periodic full check; default {DEFAULT_CACHE_MAX_AGE}, 0: always)")
        sp.add_argument("--workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                        help=f"host trees written and providers read at once (1-{MAX_WORKERS}, default "
                             f"{DEFAULT_WORKERS})")
        sp.add_argument("--absent", action="store_true",
                        help="remove these agents' providers instead (kept where something is allocated)")
        add_output_arguments(sp, PLAN_COLUMNS)
        add_cloud_arguments(sp)
        sp.set_defaults(func=cmd_providers)
    show = prov.add_parser("show", help="providers with traits, inventories and usage")
    show.add_argument("--hypervisor", help="only this compute node's tree")
    add_output_arguments(show, tables.PROVIDER_COLUMNS)
    add_cloud_arguments(show)
    show.set_defaults(func=cmd_providers_show)

    rq = sub.add_parser("request", help="a port's resource_request from QoS rules, segments and vnic_type (as Neutron)")
    rq.add_argument("--port-id", required=True, type=uuid_arg, help="the port's UUID (group ids derive from it)")
    rq.add_argument("--rule", action="append", metavar="min_bw|min_pps:DIRECTION:VALUE[:RULE_ID]",
                    help="e.g. min_bw:egress:1000, min_pps:any:100; repeat in the policy's rule order")
    rq.add_argument("--segment", action="append", metavar="TYPE[:PHYSNET]", help="default vlan:physnet0; repeat")
    rq.add_argument("--vnic-type", default="normal")
    rq.add_argument("--agent-type", choices=("openvswitch", "sriov", "ovn"))
    rq.add_argument("--any-traits", action="store_true", help="multi-segment networks: required=in:A,B (Placement 1.39)")
    rq.add_argument("--legacy", action="store_true", help="print the legacy single-group format")
    # JSON by default: `minbw request ... > port.json` is what --port-request reads (with the port id)
    add_output_arguments(rq, REQUEST_COLUMNS, default="json")
    rq.set_defaults(func=cmd_request)

    cand = sub.add_parser("candidates", help="one GET /allocation_candidates for a server and its QoS ports")
    _server_request_arguments(cand, CANDIDATE_COLUMNS)
    add_cloud_arguments(cand)
    cand.set_defaults(func=cmd_candidates)

    cl = sub.add_parser("claim", help="claim a server's resources atomically; explains a failure per request group")
    cl.add_argument("--consumer", required=True, metavar="UUID", type=uuid_arg)
    # dest names of their own: openstacksdk reads project_id/user_id in the namespace as auth options
    cl.add_argument("--project-id", required=True, dest="consumer_project_id")
    cl.add_argument("--user-id", required=True, dest="consumer_user_id")
    cl.add_argument("--consumer-type", help="e.g. INSTANCE (Placement 1.38)")
    cl.add_argument("--max-hosts", type=int, default=3, help="hosts to try, as Nova's alternates (default 3)")
    _server_request_arguments(cl, CLAIM_COLUMNS)
    add_cloud_arguments(cl)
    cl.set_defaults(func=cmd_claim)

    fr = sub.add_parser("free", help="free a consumer's allocations (safe delete at its generation)")
    fr.add_argument("--consumer", required=True, metavar="UUID", type=uuid_arg)
    add_output_arguments(fr, ("changed", "consumer"))
    add_cloud_arguments(fr)
    fr.set_defaults(func=cmd_free)

    us = sub.add_parser("usage", help="usage and allocations of providers with inventory")
    us.add_argument("--hypervisor", help="only this compute node's tree")
    us.add_argument("--provider", metavar="UUID", type=uuid_arg, help="only this provider")
    add_output_arguments(us, USAGE_COLUMNS)
    add_cloud_arguments(us)
    us.set_defaults(func=cmd_usage)
    # command groups with a module of their own: minbw move [confirm|revert], audit, drift, heal, capacity
    from minbw.cli import audit, capacity, drift, heal, moves, schedule, separation
    for group in (moves, audit, drift, heal, capacity, schedule, separation):
        group.register(sub)
    from minbw.cli import completion
    completion.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from minbw.cli.cloud import explain
    args = build_parser(argv).parse_args(argv)
    try:
        return args.func(args)
    except Exception as e:  # noqa: BLE001 - only ours and the cloud's failures are explained; others re-raise
        error = explain(e) or (e if isinstance(e, MinbwError) else None)
        if error is None:
            raise
        if wants_json(args):
            emit(args, Output({"error": error.to_dict()}))
        print(f"minbw: error: {error}", file=sys.stderr)
        return EXIT_NO_VALID_HOST if isinstance(error, NoValidHost) else EXIT_ERROR
    except KeyboardInterrupt:
        print("minbw: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `minbw ... | head`: the reader left; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
