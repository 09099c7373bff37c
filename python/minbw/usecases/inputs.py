"""What the front ends parse, and the one grammar of each: the values their options take (a QoS port by its
rules, a resource ``CLASS=AMOUNT``, a Placement microversion), parsed by the core's own parsers. A front end
(the CLI, the collection's modules) imports these from here and nothing below the use cases."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from minbw.model import microversions
from minbw.model.resources import RESOURCE_EXAMPLE, parse_resource, resources_of
from minbw.neutron.port_request import QOS_PORT_EXAMPLE, QOS_PORT_GRAMMAR, QosPort

__all__ = [
    "MINIMUM_RULE_TYPES",
    "QOS_PORT_EXAMPLE",
    "QOS_PORT_GRAMMAR",
    "RESOURCE_EXAMPLE",
    "QosPort",
    "microversion",
    "parse_qos_port",
    "parse_resource",
    "qos_port_of_rules",
    "resources_of",
]

# the QoS rule types that reserve something in Placement (the others, limits and DSCP marking, request nothing)
MINIMUM_RULE_TYPES = ("minimum_bandwidth", "minimum_packet_rate")


def parse_qos_port(text: str, option: str = "--qos-port") -> QosPort:
    """A port described by its minimum rules, ``RULES[,vnic=TYPE][,physnet=NAME]``
    (:data:`QOS_PORT_GRAMMAR`); :class:`~minbw.errors.RequestError` naming ``option`` when it does not parse."""
    return QosPort.parse(text, option)


def qos_port_of_rules(
    qos_rules: Iterable[Mapping], vnic_type: str, segments: Iterable[Mapping], where: str = "qos_rules"
) -> QosPort | None:
    """A port described as Neutron shows it (its QoS policy's rules, its vnic type, its network's segments); the
    rules that reserve nothing are left out; None when no rule reserves anything."""
    minimum = [r for r in qos_rules if r.get("type") in MINIMUM_RULE_TYPES]
    if not minimum:
        return None
    return QosPort.from_dict(dict(qos_rules=minimum, vnic_type=vnic_type, segments=list(segments)), where)


def microversion(text: str) -> str:
    """A Placement microversion ``MAJOR.MINOR`` in its canonical form; ValueError when it is not one."""
    return microversions.format(text)
