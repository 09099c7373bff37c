"""``minbw server heal`` and the ``server_port_allocations`` module: give servers'
QoS ports their missing allocations and ``binding:profile.allocation`` (check mode = each server's plan)."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.ops.heal import heal_servers
from minbw.plan.heal import ServerHeal
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class HealRequest:
    servers: tuple[str, ...] = ()  # names or ids; none: every server
    check: bool = False


@dataclass(frozen=True)
class HealResult:
    servers: tuple[ServerHeal, ...]  # per server: plan, healed, error
    check: bool

    @property
    def needed(self) -> list[ServerHeal]:
        """The servers whose plan has writes to make."""
        return [r for r in self.servers if r.needs_writes]

    @property
    def changed(self) -> bool:
        """Whether a server needed healing (check mode), or one was healed."""
        return bool(self.needed) if self.check else any(r.healed for r in self.needed)

    @property
    def pending(self) -> list[ServerHeal]:
        """Servers left unhealed (an error), or with --dry-run, those that need healing."""
        return [r for r in self.servers if r.error or (self.check and r.needs_writes)]

    @property
    def unhealed(self) -> list[str]:
        """The ids of the servers left unhealed (an error)."""
        return [r.server for r in self.servers if r.error]

    @property
    def failed(self) -> list[str]:
        """The servers left unhealed, one line each: why (a write refused and rolled back, no room, ...)."""
        return [
            " ".join(
                (
                    f"server {r.name} ({r.server}): {r.error}"
                    + (f" (rolled back: {', '.join(r.rolled_back)})" if r.rolled_back else "")
                ).split()
            )
            for r in self.servers
            if r.error
        ]

    @property
    def none_made(self) -> bool:
        """Servers' writes were tried and every one failed (rolled back): nothing could be healed."""
        return any(r.rolled_back is not None for r in self.servers) and not any(r.healed for r in self.servers)

    def to_dict(self) -> list[dict]:
        """The per-server results, a list of dicts."""
        return [r.to_dict() for r in self.servers]


def heal(cloud: Cloud, request: HealRequest) -> HealResult:
    """Plan and, unless ``check``, apply each named server's (or every server's) missing allocations and binding
    profiles: a HealResult, one entry per server (a server that cannot be healed is reported, not raised). Raises
    MissingService without Nova or Neutron."""
    cloud.require("compute", "heal reads the servers from Nova")
    cloud.require("network", "heal reads the servers' ports from Neutron")
    results = heal_servers(
        cloud.conn,
        cloud.placement,
        names=request.servers,
        check=request.check,
        binding_conn=None if request.check else cloud.service_conn(),
        progress=cloud.progress,
        reader=cloud.reader(),
    )
    return HealResult(tuple(results), request.check)
