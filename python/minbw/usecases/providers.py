"""``minbw provider sync|list`` and the ``bandwidth_providers``
and ``bandwidth_providers_info`` modules: make Placement's bandwidth providers match the agents' configuration
(check mode = the plan), and show them with traits, inventories and usage."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.errors import ConfigError, InvalidInput
from minbw.model.providers import DesiredState, ProviderReport, natural_key, root_inventories, skipped_line
from minbw.ops import agent_files, ovn_chassis
from minbw.errors import MinbwError
from minbw.cache import desired
from minbw.cache.providers import record_sync
from minbw.ops.sync import (  # noqa: F401 (the front ends' defaults)  # pylint: disable=unused-import
    DEFAULT_CACHE_CHECK_INTERVAL,
    DEFAULT_CACHE_MAX_AGE,
    DEFAULT_WORKERS,
    MAX_WORKERS,
)
from minbw.ops.sync import (
    ApplyResult,
    check_check_interval,
    check_max_age,
    check_workers,
    summary,
    sync_providers,
    warm,
)
from minbw.model.synced import Unchanged, state_fingerprint
from minbw.ops.agent_files import read_agent_units
from minbw.ops.nova_query import read_compute_hosts
from minbw.plan.providers import Plan
from minbw.readers.providers import provider_report
from minbw.usecases.cloud import DEFAULT_CACHE, Cache, Cloud, progress_of


@dataclass(frozen=True)
class OvnSources:
    """Where ML2/OVN chassis options are read (what Neutron's OVN placement extension reads): saved files, the
    southbound database (every chassis of the cloud), this compute's Open vSwitch database, or option values
    (what an ovn_chassis_config task returns). ``sb_db``/``ovs_db``: the database, None for the tools' default;
    ``sbctl``/``vsctl``: how to run ovn-sbctl / ovs-vsctl."""

    files: tuple[str, ...] = ()
    southbound: bool = False
    sb_db: str | None = None
    sbctl: str | tuple[str, ...] | None = None
    open_vswitch: bool = False
    ovs_db: str | None = None
    vsctl: str | tuple[str, ...] | None = None
    values: tuple = ()

    @property
    def given(self) -> bool:
        """Whether some source is given: files, the southbound, the Open vSwitch database or option values."""
        return bool(self.files or self.southbound or self.open_vswitch or self.values)

    def read(self, hostname: str | None = None):
        """The chassis of every source, and whether they are every chassis of the cloud (the southbound)."""
        return ovn_chassis.gather(
            files=self.files,
            southbound=self.southbound,
            sb_db=self.sb_db,
            sbctl=self.sbctl,
            open_vswitch=self.open_vswitch,
            ovs_db=self.ovs_db,
            vsctl=self.vsctl,
            values=self.values,
            hostname=hostname,
        )


@dataclass(frozen=True)
class ProvidersRequest:
    """The agents' configuration (ini files and/or option dicts) and how to sync it: ``agent_configs`` the agents'
    ``--config-file`` files in order and ``config_dirs`` their ``--config-dir`` (read as the agents read them,
    :func:`minbw.neutron.agentconf.agents_of`); ``cache`` the provider cache (the sync's file for the endpoint by
    default). ``option``: how the front end names the files."""

    agent_configs: tuple[str, ...] = ()
    config_dirs: tuple[str, ...] = ()
    agents: tuple[Mapping, ...] = ()
    ovn: OvnSources = OvnSources()
    host: str | None = None
    check: bool = False
    absent: bool = False
    create_root: bool = False
    root_inventories: Mapping | None = None
    ignore_nova_compute: bool = False  # create minbw's own root / set root inventories where nova-compute would not
    cache: Cache = DEFAULT_CACHE
    cache_max_age: float = DEFAULT_CACHE_MAX_AGE
    cache_check_interval: float = DEFAULT_CACHE_CHECK_INTERVAL
    workers: int = DEFAULT_WORKERS
    option: str = "agent_configs"
    options: Mapping[str, str] = field(default_factory=dict)  # option names in errors: workers, cache_max_age, ...

    def name(self, option: str) -> str:
        """How the front end names ``option`` in errors (by default ``option`` itself)."""
        return self.options.get(option, option)


@dataclass(frozen=True)
class ProvidersResult:
    desired: DesiredState
    plan: Plan
    applied: ApplyResult | None
    summary: str
    check: bool
    # the warm sync as the listing: nothing changed since the last complete sync, and why that is sure (None: the
    # state observed and planned)
    unchanged: Unchanged | None = None

    @property
    def changed(self) -> bool:
        """Whether the plan has writes."""
        return self.plan.changed

    def diffs(self) -> list[dict]:
        """One diff per changing provider, headed by its name and UUID."""
        whole = self.plan.diff()
        out = []
        for uuid in set(whole["before"]) | set(whole["after"]):
            before, after = whole["before"].get(uuid), whole["after"].get(uuid)
            header = "%s (%s)" % ((after or before)["name"], uuid)
            out.append(dict(before=before, after=after, before_header=header, after_header=header))
        return sorted(out, key=lambda d: d["before_header"])

    @property
    def warnings(self) -> list[str]:
        """What Neutron would silently skip (an OVN bridge without a hypervisor entry, ...)."""
        return list(self.plan.warnings)

    @property
    def skipped(self) -> list[str]:
        """One line per agent configuration or chassis that got no writes (which, its host, what and the fix),
        and per host tree whose writes Placement refused while the others were made."""
        lines = (
            [u.skipped for u in self.desired.skipped]
            + list(self.rootless().values())
            + (self.applied.failures() if self.applied else [])
        )
        return sorted(lines, key=natural_key)  # by the unit each names: its kind, then its name

    def rootless(self) -> dict[str, str]:
        """The line of each hypervisor whose compute node root is not in Placement (its providers skipped)."""
        out = {}
        for hyp, why in self.plan.skipped:
            hosts = sorted({u.host for u in self.desired.units if hyp in u.hypervisors and u.host}, key=natural_key)
            what, _sep, fix = why.partition(" Fix: ")
            out[hyp] = skipped_line(
                f"hypervisor {hyp}",
                ", ".join(hosts) or hyp,
                what,
                fix or "create the compute node's root provider (--create-root)",
            )
        return out

    def units(self) -> list[dict]:
        """Each configuration and chassis: its hypervisors, whether a write touched them (``changed``), and
        why it was skipped (None: planned)."""
        ops = self.applied.applied if self.applied is not None else self.plan.ops
        by_uuid = {p.uuid: p.hypervisor for p in self.plan.providers}
        touched = {by_uuid.get(op.uuid or "") or (op.name or "").split(":", 1)[0] for op in ops if op.uuid or op.name}
        failed = {f["tree"]: f["error"] for f in (self.applied.failed if self.applied else [])}
        rootless = self.rootless()
        return [
            {
                **u.to_dict(),
                "changed": not u.skipped and bool(touched & {u.host, *u.hypervisors}),
                "skipped": u.skipped or next((rootless[h] for h in u.hypervisors if h in rootless), None),
                "failed": next((failed[h] for h in u.hypervisors if h in failed), None),
            }
            for u in self.desired.units
        ]

    def to_dict(self) -> dict:
        """The plan's dict with its diff, the apply result (None: nothing written), the summary, the warnings, what
        was skipped, each configuration's and chassis' unit, and ``unchanged`` (None: the full path ran)."""
        out = self.plan.to_dict()
        out["diff"] = self.plan.diff()
        out["result"] = self.applied.to_dict() if self.applied is not None else None  # null: nothing written
        out["summary"] = self.summary
        out["warnings"] = self.warnings
        out["skipped"] = self.skipped
        out["units"] = self.units()
        out["unchanged"] = self.unchanged.to_dict() if self.unchanged is not None else None
        return out


def sync(cloud: Cloud, request: ProvidersRequest) -> ProvidersResult:
    """Plan (``check``) or make the writes that bring Placement to the configuration (``absent``: remove these
    agents' providers where nothing is allocated)."""
    if not (request.agent_configs or request.config_dirs or request.agents or request.ovn.given):
        raise InvalidInput(
            "give the configuration: the OVS / SR-IOV agents' ini files or values, and/or ML2/OVN "
            "chassis options (--agent-config FILE, --config-dir DIR, --ovn-chassis FILE, --ovn-sb-db "
            "[DB], --ovs-db [DB]; the module's agent_configs, config_dirs, agents, ovn_chassis, "
            "ovn_sb_db)"
        )
    kept, digest = _kept_desired(cloud, request)
    state = desired.load(kept, digest) if digest else None
    parsed = state is None
    unread: list = []  # kept: none (a state whose every unit is skipped is never kept)
    if state is None:  # parsed
        configs, unread = read_agent_units(
            request.agent_configs,
            request.agents,
            request.host,
            config_dirs=request.config_dirs,
            paths_option=request.option,
            dirs_option=request.name("config_dirs"),
        )
        chassis, complete = request.ovn.read(request.host) if request.ovn.given else ([], False)
        # each agent configuration and chassis on its own: a bad one is skipped, named, and gets no writes
        state = ovn_chassis.desired(
            configs, chassis, complete=complete, skipped=[u for u, _error in unread], isolate=True
        )
    if state.skipped and len(state.skipped) == len(state.units):  # nothing could be done
        if len(state.units) == 1 and unread:
            raise unread[0][1]
        raise ConfigError(
            "nothing to sync: "
            + (
                "; ".join(u.skipped for u in state.skipped)
                if len(state.units) == 1
                else f"every one of the {len(state.units)} configurations is "
                f"skipped: " + " | ".join(u.skipped for u in state.skipped)
            )
        )
    if parsed and digest and not request.check:
        desired.save(kept, digest, state)
    workers = check_workers(request.workers, request.name("workers"))
    max_age = check_max_age(request.cache_max_age, request.name("cache_max_age"))
    check_interval = check_check_interval(request.cache_check_interval, request.name("cache_check_interval"))
    roots = (
        root_inventories(request.root_inventories, request.name("root_inventories"))
        if request.root_inventories
        else None
    )
    api = cloud.placement
    started, calls = time.perf_counter(), api.calls
    cache_file = request.cache.file(api)
    fingerprint = None
    if cache_file and not (request.absent or request.create_root or roots):
        fingerprint = f"files:{digest}" if digest else state_fingerprint(state)
    looked = (
        warm(api, state, fingerprint, cache_file, check_interval=check_interval, max_age=max_age)
        if (fingerprint and cache_file)
        else None
    )
    if looked is not None and looked.plan is not None and looked.unchanged is not None:  # the listing alone
        if not request.check:
            record_sync(cache_file, ok=True, writes=0)  # type: ignore[arg-type]  # a file: fingerprint is set
        line = summary(
            state,
            looked.plan,
            None,
            seconds=time.perf_counter() - started,
            calls=api.calls - calls,
            check=request.check,
            unchanged=looked.unchanged,
        )
        return ProvidersResult(
            state, looked.plan, None, _with_skipped(line, state, None), request.check, looked.unchanged
        )
    cache = request.cache.open(api, max_age=max_age, check_interval=check_interval)
    try:
        plan, applied = sync_providers(
            api,
            state,
            check=request.check,
            create_root=request.create_root,
            root_inventories=roots,
            absent=request.absent,
            progress=progress_of(cloud),
            cache=cache,
            workers=workers,
            nova=lambda: _nova_computes(cloud),
            ignore_nova_compute=request.ignore_nova_compute,
            fingerprint=fingerprint,
            listed=looked.listed if looked is not None else None,
        )
    except MinbwError:
        if cache is not None and not request.check:
            record_sync(cache.path, ok=False)
        raise
    if cache is not None and not request.check:  # the exporter's minbw_sync_* metrics
        record_sync(cache.path, ok=True, writes=applied.writes if applied else 0)
    line = summary(
        state,
        plan,
        applied,
        seconds=time.perf_counter() - started,
        calls=api.calls - calls,
        cache=cache,
        check=request.check,
    )
    return ProvidersResult(state, plan, applied, _with_skipped(line, state, applied), request.check)


def _with_skipped(line: str, state: DesiredState, applied: ApplyResult | None) -> str:
    """The summary ``line`` with the configurations skipped and the host trees whose writes failed counted."""
    if state.skipped:
        line += f"; {len(state.skipped)} of {len(state.units)} configurations skipped (named above)"
    if applied is not None and applied.failed:
        line += f"; the writes of {len(applied.failed)} host tree(s) failed (named above)"
    return line


def _nova_computes(cloud: Cloud):
    """What Nova knows of its computes, where the cloud has Nova (None: a cloud without, such as the embedded
    Placement, where a root minbw creates is its own)."""
    return read_compute_hosts(cloud.conn) if cloud.has("compute") else None


def _kept_desired(cloud: Cloud, request: ProvidersRequest):
    """Where the desired state of this sync's inputs is kept (beside the provider cache) and the digest of its
    inputs; (None, None) when it is not kept: without the cache, with ML2/OVN sources (a database is read), or
    when a file cannot be read (the sync names it)."""
    if request.ovn.given or not request.cache.on:
        return None, None
    from minbw import errors
    from minbw.model import providers
    from minbw.neutron import agentconf, naming, ovn, provider_tree

    # the code that computes the desired state from the files and the options (its messages included)
    code = (agentconf, naming, ovn, provider_tree, providers, errors, ovn_chassis, agent_files, desired)
    try:  # the config dirs' files as they are now (one added or removed: another key)
        dir_files = [f for d in request.config_dirs for f in agent_files.dir_conf_files(d, "config_dirs")]
    except ConfigError:
        return None, None
    digest = desired.key(
        [*request.agent_configs, *dir_files],
        code=code,
        options={
            "host": request.host,
            "agents": [dict(a) for a in request.agents],
            "option": request.option,
            "config_dirs": list(request.config_dirs),
        },
    )
    cache_file = request.cache.file(cloud.placement)  # a file: the cache is on (above)
    return (desired.memo_path(cache_file), digest) if digest else (None, None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ShowRequest:
    hypervisor: str | None = None


@dataclass(frozen=True)
class ShowResult:
    providers: tuple[ProviderReport, ...]  # in tree order, each with traits, inventories and usages

    def to_dict(self) -> list[dict]:
        """The providers, a list of dicts in tree order."""
        return [p.to_dict() for p in self.providers]


def show(cloud: Cloud, request: ShowRequest) -> ShowResult:
    """Every provider, or the tree of ``request.hypervisor``, with traits, inventories and usages, in tree order (a
    ShowResult). Raises ObjectNotFound when no provider has that name; lets PlacementError through."""
    return ShowResult(tuple(provider_report(cloud.placement, request.hypervisor)))
