"""The one layer that talks to Neutron (openstacksdk's network proxy): what a port's request is
built from, and applying QoS policy and port plans."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import BindingNotAllowed, ObjectNotFound
from minbw.model.requests import PortRequest
from minbw.neutron.port_request import build_port_request, segments_of_network
from minbw.neutron.qos import MIN_BW, MIN_PPS, min_rules
from minbw.ops import apply_in_order
from minbw.plan import base
from minbw.plan.ports import port_view
from minbw.plan.qos import policy_view


@dataclass(frozen=True)
class PortFacts:
    port: dict
    network: dict
    rules: tuple[dict, ...]
    policy_id: str | None


def port_facts(conn, name_or_id: str) -> PortFacts:
    """What a port's request is built from: the port, its network, the rules of the QoS policy that applies and that
    policy's id (a PortFacts). Raises ObjectNotFound when there is no such port."""
    net = conn.network
    port = net.find_port(name_or_id, ignore_missing=True)
    if port is None:
        raise ObjectNotFound(f"no port {name_or_id!r} in Neutron")
    network = net.get_network(port.network_id)
    # the port's own policy wins over the network's, as in Neutron
    policy_id = port.qos_policy_id or network.qos_policy_id
    rules: tuple[dict, ...] = ()
    if policy_id:
        rules = tuple(dict(r) for r in (net.get_qos_policy(policy_id).rules or ()))
    return PortFacts(
        port=port.to_dict(computed=False), network=network.to_dict(computed=False), rules=rules, policy_id=policy_id
    )


def write_binding_profile(conn, port, profile: dict):
    """Set a port's ``binding:profile`` (``port``: an id or an openstacksdk Port). Neutron lets only the
    service role write it (``update_port:binding:profile`` is ``rule:service_api``): connect as a service
    user (Nova's or Neutron's) for this write. Returns the updated openstacksdk Port; raises BindingNotAllowed when
    Neutron refuses the write (not the service role)."""
    from openstack import exceptions as sdk_exceptions

    try:
        return conn.network.update_port(port, binding_profile=profile)
    except sdk_exceptions.ForbiddenException as e:
        port_id = getattr(port, "id", port)
        raise BindingNotAllowed(
            f"Neutron refused to write binding:profile of port {port_id} ({e.details or e}): its policy lets only "
            f"the service role write it; connect as a service user (Nova's or Neutron's) for the binding writes: "
            f"--service-cloud NAME (CLI) or service_cloud (modules), a clouds.yaml entry of that user"
        ) from e


def network_dict(network: dict) -> dict:
    """The network as Neutron's API names it (a dict: what :func:`minbw.neutron.port_request.segments_of_network`
    parses, as Neutron's own code does): openstacksdk names the provider attributes differently. Raises nothing."""
    out = dict(network)
    for sdk, api in (
        ("provider_network_type", "provider:network_type"),
        ("provider_physical_network", "provider:physical_network"),
    ):
        if out.get(sdk) is not None:
            out.setdefault(api, out[sdk])
    return out


def computed_request(facts: PortFacts, agent_kind: str | None = None, any_traits: bool = False) -> PortRequest | None:
    """What Neutron computes for the port, from its QoS rules, network segments and vnic_type: a PortRequest, None
    without minimum rules. Raises RequestError for rules Neutron would refuse."""
    return build_port_request(
        facts.port["id"],
        min_rules(facts.rules),
        segments_of_network(network_dict(facts.network)),
        facts.port.get("binding_vnic_type") or "normal",
        agent_kind=agent_kind,
        any_traits=any_traits,
    )


def reported_request(facts: PortFacts) -> PortRequest | None:
    """Neutron's own ``resource_request`` as a PortRequest (admin only; None for others or without minimum rules).
    Raises RequestError when it cannot be parsed."""
    return PortRequest.from_neutron(facts.port.get("resource_request"), port_id=facts.port["id"])


@dataclass(frozen=True)
class ComparedRequest:
    """A Neutron port's request computed as Neutron does (``request``) beside Neutron's own ``resource_request``
    (``neutron``; ``shown``: whether Neutron showed one to this user at all: only admins see it)."""

    port_id: str
    request: PortRequest | None
    neutron: PortRequest | None
    shown: bool

    @property
    def matches_neutron(self) -> bool | None:
        """Whether the computed request is Neutron's (in Neutron's shape); None when Neutron shows none to this user
        (not admin) or the port has none."""
        if not self.shown:
            return None
        return (self.request.to_neutron() if self.request else None) == (
            self.neutron.to_neutron() if self.neutron else None
        )

    def to_dict(self) -> dict:
        """A JSON-ready dict: ``neutron_resource_request`` (Neutron's shape, or None) and ``matches_neutron``."""
        return {
            "neutron_resource_request": self.neutron.to_neutron() if self.neutron else None,
            "matches_neutron": self.matches_neutron,
        }


def request_against_neutron(
    conn, name_or_id: str, agent_kind: str | None = None, any_traits: bool = False
) -> ComparedRequest:
    """The port's request computed as Neutron does, beside Neutron's own ``resource_request``: a ComparedRequest.
    Raises ObjectNotFound when there is no such port; lets RequestError through (rules Neutron would refuse)."""
    facts = port_facts(conn, name_or_id)
    return ComparedRequest(
        facts.port["id"],
        computed_request(facts, agent_kind, any_traits),
        reported_request(facts),
        facts.port.get("resource_request") is not None,
    )


# ---------------------------------------------------------------- applying plans
_RULE_VERBS = {MIN_BW: "qos_minimum_bandwidth_rule", MIN_PPS: "qos_minimum_packet_rate_rule"}
_POLICY_ATTRS = {"shared": "is_shared"}  # API name -> openstacksdk attribute
_PORT_ATTRS = {"binding:vnic_type": "binding_vnic_type"}


def find_policy(conn, name_or_id: str):
    """The QoS policy named or with id ``name_or_id`` (an openstacksdk QoSPolicy), or None when there is none."""
    return conn.network.find_qos_policy(name_or_id, ignore_missing=True)


def _apply(plan: base.Plan, obj, attrs: dict, verbs: dict):
    """Run the plan's ops in order: ``verbs[action](obj, op, sdk_values)`` returns the object as it is
    after the op (None once it is deleted); API attribute names become openstacksdk's by ``attrs``.
    A failure after some writes is a PartialApply naming the ops that were applied."""
    state = {"obj": obj}

    def run(op: base.Op) -> bool:
        # policy and port ops have values
        values = {attrs.get(k, k): v for k, v in op.values.items()}  # type: ignore[attr-defined]
        state["obj"] = verbs[op.action](state["obj"], op, values)
        return state["obj"] is not None

    apply_in_order(plan.ops, run)
    return state["obj"]


def apply_policy(conn, policy, plan: base.Plan) -> dict | None:
    """Run a :func:`minbw.plan.qos.plan_policy` plan against ``policy`` (an openstacksdk QoSPolicy, or
    None to create). Returns the resulting policy's view (:func:`minbw.plan.qos.policy_view`: the dict the plan
    compares and Ansible's diff shows as ``after``), None once deleted. Raises PartialApply when a write fails
    after others (naming those made); a first write failing: openstacksdk's error as it is."""
    net = conn.network

    def rule(verb):
        def run(p, op, values):
            method = getattr(net, f"{verb}_{_RULE_VERBS[op.rule_type]}")
            if verb == "create":
                method(p, **values)
            elif verb == "update":
                method(op.rule_id, p, **values)
            else:
                method(op.rule_id, p, ignore_missing=True)
            return p

        return run

    policy = _apply(
        plan,
        policy,
        _POLICY_ATTRS,
        {
            "create_policy": lambda p, op, values: net.create_qos_policy(**values),
            "update_policy": lambda p, op, values: net.update_qos_policy(p, **values),
            "delete_policy": lambda p, op, values: net.delete_qos_policy(p, ignore_missing=True),
            "create_rule": rule("create"),
            "update_rule": rule("update"),
            "delete_rule": rule("delete"),
        },
    )
    return policy_view(net.get_qos_policy(policy.id)) if policy is not None else None


def apply_port(conn, port, plan: base.Plan) -> dict | None:
    """Run a :func:`minbw.plan.ports.plan_port` plan against ``port`` (an openstacksdk Port, or None to create).
    Returns the resulting port's view (:func:`minbw.plan.ports.port_view`: the dict the plan compares and Ansible's
    diff shows as ``after``), None once deleted. Raises PartialApply when a write fails after others."""
    net = conn.network
    return port_view(
        _apply(
            plan,
            port,
            _PORT_ATTRS,
            {
                "create": lambda p, op, values: net.create_port(**values),
                "update": lambda p, op, values: net.update_port(p, **values),
                "delete": lambda p, op, values: net.delete_port(p, ignore_missing=True),
            },
        )
    )
