"""The one layer that reads Neutron (openstacksdk's network proxy) for resource requests."""
from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import MinbwError
from minbw.request import PortRequest, build_port_request, min_rules, segments_of_network


@dataclass(frozen=True)
class PortFacts:
    port: dict
    network: dict
    rules: tuple[dict, ...]
    policy_id: str | None


def port_facts(conn, name_or_id: str) -> PortFacts:
    net = conn.network
    port = net.find_port(name_or_id, ignore_missing=True)
    if port is None:
        raise MinbwError(f"no port {name_or_id!r} in Neutron")
    network = net.get_network(port.network_id)
    # the port's own policy wins over the network's, as in Neutron
    policy_id = port.qos_policy_id or network.qos_policy_id
    rules: tuple[dict, ...] = ()
    if policy_id:
        rules = tuple(dict(r) for r in (net.get_qos_policy(policy_id).rules or ()))
    return PortFacts(port=port.to_dict(computed=False), network=network.to_dict(computed=False),
                     rules=rules, policy_id=policy_id)


def network_dict(network: dict) -> dict:
    """openstacksdk names provider attributes differently from the API: give the API's names."""
    out = dict(network)
    for sdk, api in (("provider_network_type", "provider:network_type"),
                     ("provider_physical_network", "provider:physical_network")):
        if out.get(sdk) is not None:
            out.setdefault(api, out[sdk])
    return out


def computed_request(facts: PortFacts, agent_kind: str | None = None, any_traits: bool = False) -> PortRequest | None:
    """What Neutron computes for the port, from its QoS rules, network segments and vnic_type."""
    return build_port_request(facts.port["id"], min_rules(facts.rules),
                              segments_of_network(network_dict(facts.network)),
                              facts.port.get("binding_vnic_type") or "normal", agent_kind=agent_kind,
                              any_traits=any_traits)


def reported_request(facts: PortFacts) -> PortRequest | None:
    """Neutron's own ``resource_request`` (admin only; None for others or without minimum rules)."""
    return PortRequest.from_neutron(facts.port.get("resource_request"), port_id=facts.port["id"])
