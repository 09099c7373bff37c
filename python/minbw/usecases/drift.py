"""``minbw drift show`` and the ``bandwidth_drift_info`` module: the agents'
configuration vs what Neutron reports from it vs Placement, provider by provider.

OVS / SR-IOV: the agents' ini files, the agents' heartbeats in Neutron's agent list, Placement. ML2/OVN: the
chassis options on the computes (their Open vSwitch ``external_ids``, or a file) on the "ini" side, and the
southbound ``Chassis`` rows on the "agent" side: they are what Neutron's OVN placement extension reads
(Neutron's agent list carries no bandwidth for OVN chassis)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.ops import ovn_chassis
from minbw.errors import ConfigError, NothingCompared
from minbw.ops.agent_files import read_agent_units
from minbw.reports.drift import DriftRow, drift_rows, without_compute_node
from minbw.readers.providers import agent_reports, placement_snapshots
from minbw.usecases.cloud import Cloud
from minbw.usecases.providers import OvnSources


@dataclass(frozen=True)
class DriftRequest:
    """``agent_configs``: ini files to compare (none: Neutron vs Placement only), with ``config_dirs`` read as the
    agents read them (:func:`minbw.neutron.agentconf.agents_of`); ``neutron``: read what the
    agents report (off against a cloud of Placement alone). ``chassis``: OVN chassis options as the computes
    hold them (the ini side); ``southbound``: the southbound database's chassis (the agent side). ``options``: how
    the front end names agent_configs, neutron, ovn_sb_db, ovn_chassis, ovs_db (in the message of a drift that
    compared nothing; an option left out or None is not offered)."""

    agent_configs: tuple[str, ...] = ()
    host: str | None = None
    neutron: bool = True
    option: str = "agent_configs"  # how the front end names the files (in errors)
    chassis: OvnSources = OvnSources()
    southbound: OvnSources = OvnSources()
    options: Mapping[str, str | None] = field(default_factory=dict)
    config_dirs: tuple[str, ...] = ()

    def name(self, option: str) -> str | None:
        """How the front end names ``option`` (None: not offered); by default ``option`` itself, or ``self.option``
        for agent_configs."""
        return self.options.get(option, self.option if option == "agent_configs" else option)


@dataclass(frozen=True)
class DriftResult:
    rows: tuple[DriftRow, ...]
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # the configurations and chassis not compared: which, its host, what, the fix

    @property
    def ok(self) -> bool:
        """Whether every compared provider agrees and nothing was skipped."""
        return all(r.agree for r in self.rows) and not self.skipped

    def to_dict(self) -> dict:
        """``ok``, each provider's row as a dict, the warnings and what was skipped."""
        return {
            "ok": self.ok,
            "providers": [r.to_dict() for r in self.rows],
            "warnings": list(self.warnings),
            "skipped": list(self.skipped),
        }


def drift(cloud: Cloud, request: DriftRequest, reader=None) -> DriftResult:
    """Compare what is given: the ini files and OVN chassis options as the computes hold them; Neutron's agents
    (when ``neutron``) and the southbound chassis; and Placement (read by ``reader``, default the cloud's)."""
    chassis = request.chassis.read(request.host)[0] if request.chassis.given else []
    southbound = request.southbound.read()[0] if request.southbound.given else None
    # each ini file and chassis on its own: one that cannot be read is named and left out of the comparison
    configs, unread = read_agent_units(
        request.agent_configs,
        host=request.host,
        config_dirs=request.config_dirs,
        paths_option=request.option,
        dirs_option=request.name("config_dirs"),
    )
    ini = (
        ovn_chassis.desired(configs, chassis, skipped=[u for u, _error in unread], isolate=True)
        if (configs or chassis or unread)
        else None
    )
    if ini is not None and ini.skipped and len(ini.skipped) == len(ini.units):  # nothing to compare
        if len(ini.units) == 1 and unread:
            raise unread[0][1]
        raise ConfigError("nothing to compare: " + " | ".join(u.skipped for u in ini.skipped))
    hosts = {p.hypervisor for p in ini.providers} if ini else None
    agent = None
    ovn_hosts: list[str] = []
    # the heartbeats carry OVS / SR-IOV bandwidth only: with OVN chassis alone they have nothing to compare
    heartbeats_wanted = request.neutron and (bool(configs) or not chassis)
    if heartbeats_wanted:
        cloud.require(
            "network",
            "drift reads what the agents report from Neutron",
            fix="leave Neutron out (minbw drift show --no-neutron; the module's neutron: false) to compare "
            "the ini files with Placement only",
        )
    if heartbeats_wanted or southbound is not None:
        heartbeats, ovn_hosts = agent_reports(cloud.conn, hosts) if heartbeats_wanted else ([], [])
        sb = list(southbound or ())
        if chassis:  # the same chassis on both sides
            names = {c.name for c in chassis}
            sb = [c for c in sb if c.name in names]
        agent = ovn_chassis.desired(heartbeats, sb, complete=southbound is not None and not chassis, isolate=True)
    uuids = {p.uuid for d in (ini, agent) if d for p in d.providers}
    placement, roots = placement_snapshots(reader or cloud.reader(), uuids, (ini, agent))
    rows = without_compute_node(drift_rows(ini, agent, placement), (ini, agent), roots)
    # a skipped unit's hosts are not compared: its providers would only show as missing on its side
    left_out = {h for d in (ini, agent) if d for u in d.skipped for h in (u.host, *u.hypervisors) if h}
    rows = [r for r in rows if r.name.split(":", 1)[0] not in left_out]
    # each side's chassis apart: the same chassis is on both sides by design
    warnings = [w for side in (chassis, southbound or ()) for w in ovn_chassis.chassis_configs(side, isolate=True)[1]]
    # the configured side's lines as the sync prints them; the agents' side's (what they report) say so first
    skipped = [
        u.skipped if side == "ini" else f"as the agents report it: {u.skipped}"
        for side, d in (("ini", ini), ("agent", agent))
        if d
        for u in d.skipped
    ]
    if not rows and not skipped:
        raise nothing_compared(request, configs, chassis, southbound, heartbeats_wanted, ovn_hosts)
    return DriftResult(tuple(rows), tuple(dict.fromkeys(warnings)), tuple(dict.fromkeys(skipped)))


def nothing_compared(
    request: DriftRequest, configs, chassis, southbound, neutron: bool, ovn_hosts: list[str]
) -> NothingCompared:
    """The error of a drift with no provider on any side: what each source gave, and the options that give one
    (an ML2/OVN cloud, which Neutron's agent list shows by its OVN controller agents, needs the chassis options)."""
    gave = [
        "the agent ini files given configure no bandwidth"
        if configs
        else f"no agent ini files given ({request.name('agent_configs')})"
    ]
    if neutron:
        gave.append("no OVS or SR-IOV agent reports bandwidth to Neutron")
    else:
        gave.append(f"Neutron's agents not read ({request.name('neutron')})")
    if chassis or southbound:
        gave.append(
            "the OVN chassis read report no bandwidth (no resource_provider_bandwidths in their ovn-cms-options)"
        )
    else:
        gave.append("no OVN chassis given")
    if ovn_hosts:
        gave.append(
            f"Neutron's agent list shows {len(ovn_hosts)} OVN chassis ({', '.join(ovn_hosts[:3])}"
            f"{', ...' if len(ovn_hosts) > 3 else ''}): ML2/OVN reports bandwidth in the chassis options, "
            f"which Neutron's agent list does not carry"
        )
    chassis_options = " or ".join(
        f"{o} (this compute's Open vSwitch database)" if k == "ovs_db" else o
        for k in ("ovn_chassis", "ovs_db")
        if (o := request.name(k))
    )
    ovn_fix = f"{request.name('ovn_sb_db')} (every chassis, read from the OVN southbound database)"
    if chassis_options:
        ovn_fix += f" and/or {chassis_options}"
    fix = (
        f"on ML2/OVN give the chassis options: {ovn_fix}; on ML2/OVS or SR-IOV give "
        f"{request.name('agent_configs')}, or set resource_provider_bandwidths in the agents' configuration"
    )
    return NothingCompared("drift compared nothing: " + "; ".join(gave), fix, ovn_chassis=len(ovn_hosts))
