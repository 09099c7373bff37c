"""Nova 34's scheduler building its Placement query, run for real: the oracle of tests/unit/nova/test_scheduler.py.

Run by the mini-cloud's venv (``.venv-cloud/bin/python``: nova is not importable from ``.venv``) as ONE
long-lived process: it reads JSON requests from stdin, one per line, and writes one JSON answer per line.

``{"op": "query", ...}``: a real ``nova.objects.RequestSpec`` made as the API and conductor make it
(``RequestSpec.from_components`` with an ``objects.Flavor``, ``ImageMeta.from_dict`` of the image, the ports'
request groups and request-level params as ``nova.network.neutron.API.create_resource_requests`` builds them
from each port's ``resource_request``; ``is_bfv``, ``requested_networks``, ``requested_destination``), the case's
``[scheduler]``/``[filter_scheduler]``/``[workarounds]`` options set on Nova's CONF (``set_override``, cleared
before each case), then Nova's own code: every filter of ``request_filter.ALL_REQUEST_FILTERS`` in order (what
each returns is kept), ``utils.resources_from_request_spec`` and ``ResourceRequest.to_querystring()`` (and the
fallback query Nova makes for a pinned server). Answer: ``{"query": ..., "fallback": ..., "ran": {...}}``, or
``{"error": {"class": ..., "message": ...}, "ran": {...}}`` where Nova refuses the input.

The look-ups the filters make are answered from the case's facts: Nova's API database is a real one (SQLite in
memory, Nova's own models), holding the case's aggregates, so ``AggregateList.get_by_metadata`` and
``get_non_matching_by_metadata_keys`` run their own queries; the stand-ins are
``objects.service.get_minimum_version_all_cells`` (73 when every compute reports OWNER_NOVA, else 72), Neutron's
``show_port`` / ``get_segment_ids_for_network`` / ``get_segment_id_for_subnet`` (from the ports and subnets
given), the report client's ``_get_provider_aggregates`` (the segments' aggregates given) and the host manager's
``get_compute_nodes_by_host_or_node`` (the compute nodes given).

``{"op": "owner", "services": [...]}``: Nova's own ``_should_filter_by_owner`` over those ``nova-compute`` rows,
written in the tables of real cell databases (SQLite files with Nova's models, mapped in the API database), read
by the real ``get_minimum_version_all_cells``. ``{"op": "conf", "text": ...}``: the options minbw reads, as oslo.config reads them from that nova.conf text
with Nova's own option definitions. ``{"op": "facts"}``: Nova's constants minbw copies (enums, filter names,
option defaults, microversion) and os-traits' trait families. ``{"op": "group", ...}``: Nova's own
``ServerGroupAffinityFilter`` and ``ServerGroupAntiAffinityFilter`` (``nova/scheduler/filters/affinity_filter.py``)
for a server of a group moving off its host: a real ``objects.InstanceGroup`` (policy, members, rules, and its
``hosts`` as ``scheduler_utils.setup_instance_group`` sets them: the members' hosts) in a real ``RequestSpec``, each
host a host state holding the members placed there; answer ``{"passes": {host: bool}}``.
"""
from __future__ import annotations

import collections
import json
import logging
import os
import sys
import tempfile
import traceback
import uuid
import warnings

warnings.filterwarnings("ignore")
_OUT = sys.stdout
sys.stdout = sys.stderr  # nothing but answers on the pipe

import os_traits  # noqa: E402
from oslo_config import cfg  # noqa: E402

import nova.conf  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import objects  # noqa: E402
from nova.db.api import api as api_db_api  # noqa: E402
from nova.db.api import models as api_models  # noqa: E402
from nova.network import neutron  # noqa: E402
from nova.objects import aggregate as aggregate_obj  # noqa: E402
from nova.objects import fields as nova_fields  # noqa: E402
from nova.scheduler import request_filter, utils  # noqa: E402
from nova.scheduler.client import report  # noqa: E402

objects.register_all()
logging.disable(logging.CRITICAL)
CONF = nova.conf.CONF
CONF([], project="nova", default_config_files=[])

# the options minbw.nova.options reproduces: (group, name)
OPTIONS = [("scheduler", "max_placement_results"), ("scheduler", "limit_tenants_to_placement_aggregate"),
           ("scheduler", "placement_aggregate_required_for_tenants"),
           ("scheduler", "query_placement_for_image_type_support"),
           ("scheduler", "enable_isolated_aggregate_filtering"), ("scheduler", "image_metadata_prefilter"),
           ("scheduler", "query_placement_for_routed_network_aggregates"), ("filter_scheduler", "pci_in_placement"),
           ("workarounds", "disable_fallback_pcpu_query")]

api_db_api.context_manager.configure(connection="sqlite://")
api_models.BASE.metadata.create_all(api_db_api.get_engine())
CTX = nova_context.get_admin_context()


class Case:
    """The current case's facts, read by the stand-ins below."""
    ports: dict = {}
    subnets: list = []
    segment_aggregates: dict = {}
    compute_nodes: list = []
    owner_nova = True


AggInfo = collections.namedtuple("AggInfo", ["aggregates", "generation"])


class _Report:
    def _get_provider_aggregates(self, context, rp_uuid):
        aggs = Case.segment_aggregates.get(rp_uuid)
        return AggInfo(set(aggs), 1) if aggs else None


def _show_port(self, context, port_id, **kwargs):
    return {"port": Case.ports[port_id]}  # the port as Neutron shows it (binding:vnic_type, fixed_ips, ...)


def _segment_ids_for_network(self, context, network_id):
    # nova.network.neutron.API.get_segment_ids_for_network over list_subnets(network_id=...)
    return [s["segment_id"] for s in Case.subnets
            if s["network_id"] == network_id and s.get("segment_id") is not None]


def _segment_id_for_subnet(self, context, subnet_id):
    for s in Case.subnets:
        if s["id"] == subnet_id:
            return s.get("segment_id")
    from nova import exception
    raise exception.InvalidRoutedNetworkConfiguration("Subnet %s not found" % subnet_id)


class _HostManager:
    def get_compute_nodes_by_host_or_node(self, ctxt, host, node, cell=None):
        nodes = [n for n in Case.compute_nodes
                 if (not host or n["host"] == host) and (not node or n["node"] == node)]
        if node:
            nodes = nodes[:1]
        return objects.ComputeNodeList(objects=[
            objects.ComputeNode(uuid=n["uuid"], host=n["host"], hypervisor_hostname=n["node"]) for n in nodes])


neutron.API.show_port = _show_port
neutron.API.get_segment_ids_for_network = _segment_ids_for_network
neutron.API.get_segment_id_for_subnet = _segment_id_for_subnet
report.report_client_singleton = lambda: _Report()
_REAL_MINIMUM_VERSION = objects.service.get_minimum_version_all_cells  # the "owner" op runs it for real
objects.service.get_minimum_version_all_cells = (
    lambda context, binaries, require_all=False:
    request_filter.MIN_COMPUTE_VERSION_OWNER_TRAIT if Case.owner_nova else
    request_filter.MIN_COMPUTE_VERSION_OWNER_TRAIT - 1)


def _set_options(options: dict) -> None:
    for group, name in OPTIONS:
        CONF.clear_override(name, group=group)
    for key, value in options.items():
        group, name = key.split(".")
        CONF.set_override(name, value, group=group)


def _set_aggregates(aggregates: list) -> None:
    with api_db_api.context_manager.writer.using(CTX) as session:
        session.query(api_models.AggregateMetadata).delete()
        session.query(api_models.AggregateHost).delete()
        session.query(api_models.Aggregate).delete()
    for a in aggregates:
        aggregate_obj._aggregate_create_in_db(CTX, {"name": a.get("name") or a["uuid"], "uuid": a["uuid"]},
                                              metadata=dict(a.get("metadata") or {}))


def _request_spec(case: dict):
    f = case["flavor"]
    # the flavor as Nova's API shows it: ram, disk, OS-FLV-EXT-DATA:ephemeral, swap ("" for none)
    flavor = objects.Flavor(name=f.get("name") or "flavor", flavorid="f1", vcpus=f["vcpus"], memory_mb=f["ram"],
                            root_gb=f["disk"], ephemeral_gb=f.get("OS-FLV-EXT-DATA:ephemeral", 0),
                            swap=f.get("swap") or 0, extra_specs=dict(f.get("extra_specs") or {}))
    image = case.get("image") or {}  # as nova.image.glance._translate_from_glance gives it
    image_dict = {"name": image.get("name") or "image", "disk_format": image.get("disk_format") or "",
                  "properties": dict(image.get("properties") or {})}
    groups, level = [], objects.RequestLevelParams()
    for p in case.get("ports", []):   # nova.network.neutron.API.create_resource_requests
        rr = p.get("resource_request")
        if not rr:
            continue
        if "request_groups" in rr:
            groups.extend(objects.RequestGroup.from_extended_port_request(context=None, port_resource_request=rr))
            level.extend_with(objects.RequestLevelParams.from_port_request(port_resource_request=rr))
        else:
            groups.append(objects.RequestGroup.from_port_request(context=None, port_uuid=p["id"],
                                                                 port_resource_request=rr))
    for g in case.get("device_profile_groups", []):  # cyborg's get_device_request_groups
        rg = objects.RequestGroup(requester_id=g["id"])
        for rc, amount in g.get("resources", {}).items():
            rg.add_resource(rc, amount)
        for t in g.get("required", []):
            rg.add_trait(t, "required")
        groups.append(rg)
    spec = objects.RequestSpec.from_components(
        CTX, str(uuid.uuid4()), image_dict, flavor, None, objects.InstancePCIRequests(requests=[]),
        {"scheduler_hints": dict(case.get("scheduler_hints") or {})}, None, case.get("availability_zone"),
        project_id=case.get("project_id") or "no-project", user_id="user", port_resource_requests=groups,
        request_level_params=level)
    spec.is_bfv = bool(case.get("is_bfv"))
    if case.get("ports"):
        spec.requested_networks = objects.NetworkRequestList(
            objects=[objects.NetworkRequest(port_id=p["id"]) for p in case["ports"]])
    if case.get("host") or case.get("node"):   # nova.compute.api.API._provision_instances
        destination = objects.Destination()
        if case.get("host"):
            destination.host = case["host"]
        destination.node = case.get("node")
        spec.requested_destination = destination
    return spec


def query(case: dict) -> dict:
    facts = case.get("facts", {})
    Case.ports = {p["id"]: p for p in case.get("ports", [])}
    Case.subnets = facts.get("subnets", [])
    Case.segment_aggregates = facts.get("segment_aggregates", {})
    Case.compute_nodes = facts.get("compute_nodes", [])
    Case.owner_nova = facts.get("owner_nova", True)
    _set_options(case.get("options", {}))
    _set_aggregates(facts.get("aggregates", []))
    ran = {}
    try:
        spec = _request_spec(case)
        for f in request_filter.ALL_REQUEST_FILTERS:  # request_filter.process_reqspec, keeping each answer
            ran[f.__name__] = bool(f(CTX, spec))
        host_manager = _HostManager()
        rr = utils.resources_from_request_spec(CTX, spec, host_manager, enable_pinning_translate=True)
        out = {"query": rr.to_querystring(), "fallback": None, "ran": ran}
        if rr.cpu_pinning_requested and not CONF.workarounds.disable_fallback_pcpu_query:
            out["fallback"] = utils.resources_from_request_spec(
                CTX, spec, host_manager, enable_pinning_translate=False).to_querystring()
        return out
    except Exception as e:  # Nova refuses the input: say how
        return {"error": {"class": type(e).__name__, "message": str(e)}, "ran": ran}


class _Cells:
    """Two cells of real databases (SQLite files, Nova's own models), mapped in the API database: the services of
    the "owner" op's cases."""
    engines: dict = {}

    @classmethod
    def ensure(cls) -> None:
        if cls.engines:
            return
        import sqlalchemy
        from nova.db.main import models as main_models
        from oslo_messaging import opts as messaging_opts
        for group, opts in messaging_opts.list_opts():  # transport_url, read when a cell mapping is loaded
            if group is None:
                CONF.register_opts([o for o in opts if o.dest not in CONF])
        here = tempfile.mkdtemp(prefix="nova-cells-")
        for name in ("cell0", "cell1", "cell2"):
            url = f"sqlite:///{here}/{name}.db"
            engine = sqlalchemy.create_engine(url)
            main_models.BASE.metadata.create_all(engine)
            cell_uuid = objects.CellMapping.CELL0_UUID if name == "cell0" else str(uuid.uuid4())
            objects.CellMapping(CTX, uuid=cell_uuid, name=name, transport_url="none:///",
                                database_connection=url).create()
            cls.engines[name] = engine


def owner(case: dict) -> dict:
    """Nova's ``request_filter._should_filter_by_owner`` for the case's ``services`` (each: cell, host, version,
    deleted, forced_down; rows of the cells' ``services`` tables), through the real
    ``objects.service.get_minimum_version_all_cells`` over the real cell mappings."""
    from nova.db.main import models as main_models
    _Cells.ensure()
    table = main_models.Service.__table__
    for engine in _Cells.engines.values():
        with engine.begin() as db:
            db.execute(table.delete())
    for i, s in enumerate(case["services"], start=1):
        with _Cells.engines[s.get("cell", "cell1")].begin() as db:
            db.execute(table.insert().values(
                id=i, uuid=str(uuid.uuid4()), host=s["host"], binary="nova-compute", topic="compute",
                report_count=1, disabled=bool(s.get("disabled")), forced_down=bool(s.get("forced_down")),
                version=s["version"], deleted=i if s.get("deleted") else 0))
    saved = objects.service.get_minimum_version_all_cells
    objects.service.get_minimum_version_all_cells = _REAL_MINIMUM_VERSION
    try:
        return {"filter": bool(request_filter._should_filter_by_owner(CTX)),
                "minimum": objects.service.get_minimum_version_all_cells(CTX, ["nova-compute"])}
    finally:
        objects.service.get_minimum_version_all_cells = saved


def conf(text: str) -> dict:
    conf = cfg.ConfigOpts()
    nova.conf.scheduler.register_opts(conf)
    nova.conf.workarounds.register_opts(conf)
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(text)
    try:
        conf(args=[], project="nova", default_config_files=[f.name])
        return {"values": {f"{group}.{name}": getattr(getattr(conf, group), name) for group, name in OPTIONS}}
    except Exception as e:
        return {"error": {"class": type(e).__name__, "message": str(e)}}
    finally:
        os.unlink(f.name)


def facts() -> dict:
    enums = {n: list(getattr(nova_fields, n).ALL) for n in (
        "DiskBus", "VideoModel", "VIFModel", "Architecture", "VIOMMUModel", "SoundModelType", "TPMVersion",
        "TPMModel", "BlockDeviceEncryptionFormatType", "SecureBoot", "MaxPhyAddrMode", "PCINUMAAffinityPolicy",
        "CPUAllocationPolicy", "CPUThreadAllocationPolicy", "CPUEmulatorThreadsPolicy", "FirmwareType")}
    from nova.network import model as network_model
    return {"enums": enums,
            "filters": [f.__name__ for f in request_filter.ALL_REQUEST_FILTERS],
            "defaults": {f"{group}.{name}": getattr(getattr(CONF, group), name) for group, name in OPTIONS},
            "microversion": report.SAME_SUBTREE_VERSION,
            "min_compute_version_owner_trait": request_filter.MIN_COMPUTE_VERSION_OWNER_TRAIT,
            "tenant_metadata_key": request_filter.TENANT_METADATA_KEY,
            "xs_keypat": utils.ResourceRequest.XS_KEYPAT.pattern,
            "vnic_types": [getattr(network_model, n) for n in dir(network_model) if n.startswith("VNIC_TYPE_")],
            "traits": {p: sorted(os_traits.get_traits(p)) for p in (
                "COMPUTE_STORAGE_BUS_", "COMPUTE_GRAPHICS_MODEL_", "COMPUTE_NET_VIF_MODEL_", "HW_ARCH_",
                "COMPUTE_ARCH_", "COMPUTE_VIOMMU_", "COMPUTE_IMAGE_TYPE_")},
            "all_traits": sorted(os_traits.get_traits())}


def group(req: dict) -> dict:
    from nova.scheduler.filters import affinity_filter
    where = req["hosts"]  # member uuid -> its host
    members = list(where)
    grp = objects.InstanceGroup(uuid=str(uuid.uuid4()), policy=req["policy"], members=members,
                                rules={k: str(v) for k, v in req.get("rules", {}).items()},
                                hosts=sorted(set(where.values())))
    grp.policies = [grp.policy]  # InstanceGroup._from_db_object sets the deprecated list as the filters read it
    spec = objects.RequestSpec(instance_uuid=req["server"], instance_group=grp)
    passes = {}
    for host in req["candidates"]:
        state = collections.namedtuple("HostState", "host instances")(
            host, {m: object() for m, h in where.items() if h == host})
        passes[host] = all(f.host_passes(state, spec) for f in (affinity_filter.ServerGroupAffinityFilter(),
                                                                 affinity_filter.ServerGroupAntiAffinityFilter()))
    return {"passes": passes}


def main() -> None:
    _OUT.write(json.dumps({"ready": True}) + "\n")
    _OUT.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op", "query")
            answer = (query(req) if op == "query" else conf(req["text"]) if op == "conf" else owner(req)
                      if op == "owner" else group(req) if op == "group" else facts())
        except Exception:
            answer = {"oracle_error": traceback.format_exc()}
        _OUT.write(json.dumps(answer) + "\n")
        _OUT.flush()


if __name__ == "__main__":
    main()
