"""The preflight of guaranteed minimum bandwidth (``minbw doctor``): what a cloud must offer before and after an
operator enables guarantees, each check one line with what to fix. Pure: the facts come read
(:mod:`minbw.ops.doctor`), each function here judges one of them.

Statuses: ``ok``; ``warn`` (works, with a limit the operator should know); ``fail`` (a guarantee cannot hold, or a
tool would misbehave); ``skip`` (the cloud has no such service, or it cannot be read through the API: said where
to look instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from minbw.model import microversions

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
ORDER = (FAIL, WARN, OK)  # the result's status: the worst of its checks (a skipped check does not count)

# Neutron's API extensions a guarantee needs (neutron-lib's ALIAS), and what each brings
EXTENSIONS = (
    ("qos", FAIL, "QoS policies and rules (service_plugins: qos)"),
    ("qos-bw-limit-direction", WARN, "rules with a direction"),
    ("qos-bw-minimum-ingress", WARN, "ingress minimum bandwidth rules"),
    ("qos-pps-minimum", WARN, "minimum packet rate rules"),
    ("port-resource-request", FAIL, "ports' resource_request, which Nova reads to schedule them"),
    (
        "port-resource-request-groups",
        WARN,
        "several request groups per port (bandwidth and packet rate); without "
        "it a port speaks the legacy single-group format",
    ),
)
# the agents that report bandwidth in their configuration, by Neutron's agent_type
BANDWIDTH_AGENTS = ("Open vSwitch agent", "NIC Switch agent")


@dataclass(frozen=True)
class Check:
    """One check: its ``name``, ``status``, what was found (``detail``) and, unless ok, what to do (``fix``)."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def to_dict(self) -> dict:
        """The check as a JSON-ready dict: name, status, detail, fix."""
        return asdict(self)


@dataclass(frozen=True)
class Agent:
    """A Neutron agent as ``GET /v2.0/agents`` shows it."""

    agent_type: str
    host: str
    alive: bool
    configurations: Mapping
    resources_synced: bool | None = None


def skipped(name: str, why: str, fix: str = "") -> Check:
    """A Check with status skip: ``why`` as its detail, and ``fix``."""
    return Check(name, SKIP, why, fix)


def placement_version(server_max: tuple[int, int]) -> Check:
    """Placement's newest microversion against what Nova's query (1.36) and any-traits (1.39) need."""
    shown = microversions.format(server_max)
    if server_max < microversions.NOVA_CANDIDATES:
        return Check(
            "placement microversion",
            FAIL,
            f"Placement answers up to {shown}; Nova's scheduling query "
            f"with QoS ports needs {microversions.format(microversions.NOVA_CANDIDATES)} (same_subtree)",
            "upgrade Placement (Yoga or later)",
        )
    if server_max < microversions.ANY_TRAITS:
        return Check(
            "placement microversion",
            WARN,
            f"Placement answers up to {shown}: no any-traits "
            f"({microversions.format(microversions.ANY_TRAITS)}) for ports on networks of several physnets",
            "upgrade Placement (Zed or later) to use --any-traits",
        )
    return Check("placement microversion", OK, f"Placement answers up to {shown}")


def neutron_extensions(aliases: Iterable[str]) -> list[Check]:
    """One check per extension a guarantee needs (:data:`EXTENSIONS`)."""
    have = set(aliases)
    out = []
    for alias, severity, what in EXTENSIONS:
        if alias in have:
            out.append(Check(f"neutron extension {alias}", OK, what))
        else:
            out.append(
                Check(
                    f"neutron extension {alias}",
                    severity,
                    f"missing: {what}",
                    "enable Neutron's qos service plugin (service_plugins) and the ML2 qos extension "
                    "driver (extension_drivers), on a Neutron that has the extension",
                )
            )
    return out


def _reports_bandwidth(agent: Agent) -> bool:
    conf = agent.configurations or {}
    return bool(
        conf.get("resource_provider_bandwidths")
        or conf.get("resource_provider_packet_processing_without_direction")
        or conf.get("resource_provider_packet_processing_with_direction")
    )


def agents(found: Iterable[Agent]) -> list[Check]:
    """The L2 agents that report bandwidth: alive, with the ``qos`` agent extension (no extension, no data plane
    enforcement), and their ``resources_synced``."""
    found = [a for a in found if a.agent_type in BANDWIDTH_AGENTS]
    if not found:
        return [
            Check(
                "agents reporting bandwidth",
                WARN,
                "no Open vSwitch or SR-IOV agent (an ML2/OVN cloud reports bandwidth in each chassis' ovn-cms-options)",
                "",
            )
        ]
    reporting = [a for a in found if _reports_bandwidth(a)]
    out = [
        Check(
            "agents reporting bandwidth",
            OK if reporting else FAIL,
            f"{len(reporting)} of {len(found)} Open vSwitch / SR-IOV agents report resource_provider_bandwidths"
            + (f"; not: {_hosts(a for a in found if a not in reporting)}" if len(reporting) < len(found) else ""),
            ""
            if reporting
            else "set resource_provider_bandwidths in the agents' ini files (minbw.openstack."
            "bandwidth_agent, or docs/operators.md)",
        )
    ]
    dead = [a for a in found if not a.alive]
    out.append(
        Check(
            "agents alive",
            FAIL if dead else OK,
            f"down: {_hosts(dead)}" if dead else f"all {len(found)} alive",
            "start the agents (a dead agent's host cannot bind QoS ports)" if dead else "",
        )
    )
    noqos = [a for a in reporting if "qos" not in ((a.configurations or {}).get("extensions") or ())]
    out.append(
        Check(
            "agents' qos extension",
            WARN if noqos else OK,
            f"without the qos agent extension: {_hosts(noqos)} (Placement reserves, nothing programs the data plane)"
            if noqos
            else "every agent reporting bandwidth loads the qos extension",
            "add qos to [agent] extensions in the agent's ini" if noqos else "",
        )
    )
    unsynced = [a for a in reporting if a.resources_synced is False]
    out.append(
        Check(
            "agents' resources_synced",
            WARN if unsynced else OK,
            f"Neutron's placement plugin failed to sync: {_hosts(unsynced)}"
            if unsynced
            else "no agent is marked unsynced",
            "see neutron-server's log for the placement report errors, or sync with minbw provider sync "
            "(with Neutron's placement plugin off)"
            if unsynced
            else "",
        )
    )
    return out


def provider_writers(found: Iterable[Agent]) -> Check:
    """Whether Neutron's ``placement`` service plugin writes the bandwidth providers: it sets each reporting
    agent's ``resources_synced`` (True or False); without the plugin it stays null. minbw's ``provider sync``
    must not write beside it."""
    reporting = [a for a in found if a.agent_type in BANDWIDTH_AGENTS and _reports_bandwidth(a)]
    synced = [a for a in reporting if a.resources_synced is not None]
    if not reporting:
        return skipped("provider writer", "no agent reports bandwidth")
    if synced:
        return Check(
            "provider writer",
            OK,
            f"Neutron's placement plugin writes the providers ({len(synced)} agents "
            f"synced by it): do not run minbw provider sync beside it",
            "",
        )
    return Check(
        "provider writer",
        OK,
        "Neutron's placement plugin is off (no agent's resources_synced is set): "
        "minbw provider sync (minbw.openstack.bandwidth_providers) writes the providers",
        "",
    )


def nova_services(services: Iterable) -> Check:
    """``nova-compute`` services (``GET /os-services``, as :class:`minbw.nova.owner.ComputeService`: host,
    forced_down, state, disabled): every one up."""
    services = list(services)
    if not services:
        return Check("nova-compute services", FAIL, "no nova-compute service", "start nova-compute on the hosts")
    down = [s.host for s in services if s.state != "up" or s.forced_down]
    disabled = [s.host for s in services if s.disabled]
    detail = (
        f"{len(services)} services; down: {', '.join(sorted(down)) or 'none'}; disabled: "
        f"{', '.join(sorted(disabled)) or 'none'}"
    )
    return Check(
        "nova-compute services",
        WARN if down else OK,
        detail,
        "a down nova-compute keeps its servers' allocations; bring it up or evacuate it" if down else "",
    )


def compute_microversion(max_version: str | None) -> Check:
    """Nova's API microversion against what servers with QoS ports need: booting one takes 2.72 (Stein); moves
    (migrate and resize from Train, live migration, evacuation and unshelve from Ussuri/Victoria) take no
    microversion of their own but a Nova of that release."""
    if not max_version:
        return skipped("compute microversion", "Nova's API did not say its microversion")
    major, _, minor = max_version.partition(".")
    if (int(major), int(minor or 0)) < (2, 72):
        return Check(
            "compute microversion",
            FAIL,
            f"Nova's API answers up to {max_version}: booting a server with a QoS port needs 2.72",
            "upgrade Nova (Stein or later)",
        )
    return Check("compute microversion", OK, f"Nova's API answers up to {max_version} (2.72: servers with QoS ports)")


def _hosts(agents: Iterable[Agent]) -> str:
    hosts = sorted({a.host for a in agents})
    return ", ".join(hosts[:6]) + (f" and {len(hosts) - 6} more" if len(hosts) > 6 else "")


def compute_versions(every_at_73: bool, why: str) -> Check:
    """Whether every nova-compute runs Nova 34 (service version 73), as :mod:`minbw.nova.owner` reads it: then
    every move of a server with QoS ports is supported (Victoria and later); otherwise the API does not show how
    old the older computes are."""
    if every_at_73:
        return Check(
            "nova-compute versions", OK, f"every nova-compute is at service version 73 (Nova 34) or later: {why}"
        )
    return skipped(
        "nova-compute versions",
        f"not every nova-compute is at service version 73 (Nova 34): {why}",
        "moving servers with QoS ports needs every nova-compute at Victoria or later (live migration, "
        "evacuation, unshelve); `nova-manage version` on each host tells",
    )


def worst(checks: Iterable[Check]) -> str:
    """The worst status among ``checks`` (ok when there are none; skipped checks do not count)."""
    statuses = {c.status for c in checks}
    return next((s for s in ORDER if s in statuses), OK)
