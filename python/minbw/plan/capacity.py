"""How many more servers of one shape fit: per host, per physnet, in total. Pure: no I/O.

Input: what :meth:`minbw.placement.client.Placement.provider_details` reads (each provider with its
parent and root, traits, inventories and usages) and a :class:`CapacityRequest` (a
:class:`~minbw.model.requests.ServerRequest`, plus which port groups leave their network open).

The rule, per host (one provider tree):

1. **One inventory.** For an amount ``a`` of class ``rc`` on a provider: ``capacity = int((total -
   reserved) * allocation_ratio)``, ``free = capacity - used``; the provider can take ``a`` at all only
   if ``min_unit <= a <= max_unit`` and ``a % step_size == 0`` (Placement's own checks), and then
   ``free // a`` times.
2. **One server, the ways to place it.** Every way Placement could place one server on the host: each
   numbered (port) group on one provider that has its required traits (and any-of traits, and none
   of its forbidden ones) and every class it asks for within the units above; each class of the
   unsuffixed (flavor) group on one provider with that class, the providers used together having the
   group's traits (Placement's rule for the unsuffixed group in a tree); then ``group_policy=isolate``
   (numbered groups on distinct providers), every ``same_subtree`` (one of the providers is an
   ancestor of the others), and, where groups share a provider (``group_policy=none``), the summed
   amount within ``max_unit``. Ways that use the same amounts of the same inventories are one way.
3. **Many servers.** Each server takes one of the ways, independently of the others (each is its own
   consumer, with its own candidate). ``fits`` is the largest number of whole servers whose amounts,
   summed per inventory, stay within ``free``: an integer optimum, found by a bounded branch and
   bound seeded with first-fit packings. With one way it is simply ``min(free // a)`` over the
   inventories it uses; with several ways that do not compete (say one port and two bridges on the
   physnet), the bridges add up.
4. **Placement's choices.** Claims are made one by one, each taking a candidate Placement offers. When
   ways compete for providers (two ports of different sizes on two bridges, a port that fits a bridge
   or an SR-IOV PF, ``isolate``), where the earlier servers landed can leave room that no later server
   can use. ``first_fit`` is the fewest servers reached when each claim takes the first way that still
   fits, over every order of the ways (up to 6 ways; over rotations beyond that); when it is below
   ``fits`` a note says so.

``limited_by`` names what runs out first: the inventories whose bound equals ``fits`` (``copies``),
e.g. ``MEMORY_MB`` of the root, or ``NET_BW_EGR_KILOBIT_PER_SEC`` of two bridges together; or, when
no way exists, why (traits, units).

Physnets: the networks of a host are the ``CUSTOM_PHYSNET_*`` traits (and
``CUSTOM_NETWORK_TUNNEL_PROVIDER``) of its providers. A port whose network is left open is counted
once per network of the host (all such ports of a server on that network), and once for the host as a
whole with each such port free to use any of its networks (``required=in:`` over them): the host's
``fits``. ``total`` sums the hosts' ``fits``; each physnet's total sums that physnet's rows.
"""
from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import os_resource_classes as orc

from minbw.errors import InvalidInput, RequestError
from minbw.model.providers import Stock, stocks_of
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.neutron import naming
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import VNIC_TYPES, QosRule, validate_rules

PHYSNET_PREFIX = "CUSTOM_PHYSNET_"
TUNNEL_TRAIT = naming.TRAIT_NETWORK_TUNNEL
TUNNEL_LABEL = "tunnel"
TUNNEL_TYPES = ("vxlan", "geneve", "gre")
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# The classes drawn and listed per provider (bandwidth and packet rate).
NETWORK_CLASSES = (naming.BW_EGRESS, naming.BW_INGRESS, naming.PPS_ANY, naming.PPS_EGRESS, naming.PPS_INGRESS)

# Bounds of the search, so that a pathological tree answers in bounded time (with exact=False).
MAX_COMBINATIONS = 20000   # ways to place one server considered per host
MAX_ORDERS_ALL = 6         # up to this many ways, first_fit tries every order (6! = 720)
SEARCH_BUDGET = 20000      # branch-and-bound nodes per host
LOOK_AHEAD_STEPS = 64      # batches of the look-ahead packing that seeds the search
MAX_SEARCH_WAYS = 200      # beyond this many ways, no search: the best first-fit packing

# A port built with its network open is built by Neutron's code on this stand-in physnet, whose
# trait is then taken out again (build_port_request needs a segment to make the bandwidth group).
_OPEN_PHYSNET = "minbw-capacity-open-physnet"
_OPEN_TRAIT = naming.physnet_trait(_OPEN_PHYSNET)
_PORT_NS = uuid.UUID("5b0d7f0e-2a55-4d1b-9f4c-1f3ce7a0c0de")  # stable ids for ports given by rules


# ---------------------------------------------------------------- the request

@dataclass(frozen=True)
class CapacityRequest:
    """A server's shape. ``open_groups``: ids of port groups whose network (physnet or tunnel) is not
    fixed, counted once per network of each host. ``labels``: trait → physnet name as the user wrote
    it (the trait alone loses case and punctuation)."""

    server: ServerRequest
    open_groups: frozenset[str] = frozenset()
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    port_names: Mapping[str, str] = dataclasses.field(default_factory=dict)  # port id → how the user named it

    def __post_init__(self):
        object.__setattr__(self, "open_groups", frozenset(self.open_groups))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "port_names", MappingProxyType(dict(self.port_names)))
        groups = self.server.request_groups()
        if not any(g.resources for g in groups):
            raise InvalidInput("nothing to count: the server asks for no resources. Fix: give the flavor's "
                               "resources (--resources / resources) and/or a QoS port (--port / qos_ports).")
        unknown = self.open_groups - {g.id for g in groups}
        if unknown:
            raise RequestError(f"open groups {sorted(unknown)} are not request groups of the server")

    def for_network(self, traits: Sequence[str]) -> ServerRequest:
        """The server with every open group on one of ``traits`` (one trait: that network)."""
        if not self.open_groups:
            return self.server
        traits = tuple(traits)

        def group(g: RequestGroup) -> RequestGroup:
            if g.id not in self.open_groups:
                return g
            if len(traits) == 1:
                return dataclasses.replace(g, required=(traits[0], *g.required))
            return dataclasses.replace(g, required_any=(*g.required_any, traits))
        ports = tuple(dataclasses.replace(p, groups=tuple(group(g) for g in p.groups)) for p in self.server.ports)
        return dataclasses.replace(self.server, ports=ports)

    def fixed_networks(self) -> tuple[str, ...]:
        """The network traits the server's port groups require (the ports whose network is fixed)."""
        found = {t for g in self.server.request_groups() for t in g.required if is_network_trait(t)}
        return tuple(sorted(found))

    def label(self, trait: str) -> str:
        return self.labels.get(trait) or network_label(trait)

    def to_dict(self) -> dict:
        return {"flavor": self.server.flavor_resources(), "required": list(self.server.required),
                "group_policy": self.server.effective_group_policy(),
                "groups": [{"id": g.id, "resources": g.resource_dict, "required": list(g.required),
                            "required_any": [list(a) for a in g.required_any], "forbidden": list(g.forbidden),
                            "network": "each" if g.id in self.open_groups else None}
                           for g in self.server.request_groups()]}


def is_network_trait(trait: str) -> bool:
    return trait.startswith(PHYSNET_PREFIX) or trait == TUNNEL_TRAIT


def network_label(trait: str) -> str:
    """A physnet's name as far as its trait tells (upper case and punctuation are lost: lower case)."""
    if trait == TUNNEL_TRAIT:
        return TUNNEL_LABEL
    return trait[len(PHYSNET_PREFIX):].lower() if trait.startswith(PHYSNET_PREFIX) else trait


_CUSTOM_CLASS = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_TRAIT = re.compile(r"^[A-Z0-9_]{1,255}$")


def flavor_resources(resources: Mapping | None, option: str = "resources") -> dict[str, int]:
    """``{class: amount}`` checked: known class names (standard, or CUSTOM_*), whole amounts >= 0."""
    out = {}
    if resources is not None and not isinstance(resources, Mapping):
        raise InvalidInput(f"{option}: expected resource class to amount, got {resources!r}")
    for rc, amount in (resources or {}).items():
        if not isinstance(rc, str) or not (rc in orc.STANDARDS or _CUSTOM_CLASS.match(rc)):
            close = difflib.get_close_matches(str(rc).upper(), orc.STANDARDS, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise InvalidInput(f"{option}: unknown resource class {rc!r}.{hint} Fix: use a standard class "
                               f"(VCPU, MEMORY_MB, DISK_GB, PCPU, ...) or a custom one, CUSTOM_ followed by "
                               f"upper-case letters, digits and _.")
        try:
            value = int(amount) if not isinstance(amount, (bool, float)) else None
        except (TypeError, ValueError):
            value = None
        if value is None or value < 0:
            raise InvalidInput(f"{option}: {rc}: the amount must be a whole number >= 0, got {amount!r}.")
        out[rc] = value
    return out


def qos_port(index: int, rules: Sequence[Mapping], *, vnic_type: str = "normal", physnet: str | None = None,
             network_type: str | None = None, where: str = "") -> tuple[PortRequest, frozenset[str]]:
    """A port given by its QoS minimum rules (``{type, direction, min_kbps | min_kpps}``), vnic type and
    network, as Neutron would request it: its ``PortRequest`` and the ids of its groups whose network is
    left open (no physnet and no tunnel type given: each physnet of each host is tried)."""
    where = where or f"port {index}"
    if not isinstance(rules, Sequence) or isinstance(rules, (str, bytes)) or not rules:
        raise InvalidInput(f"{where}: give at least one QoS rule ({{type, direction, min_kbps | min_kpps}}).")
    port_id = str(uuid.uuid5(_PORT_NS, f"port-{index}"))
    parsed = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            raise InvalidInput(f"{where}: rule {i}: expected {{type, direction, min_kbps | min_kpps}}, got {rule!r}")
        try:
            r = QosRule.from_option(rule)
        except RequestError as e:
            raise InvalidInput(f"{where}: rule {i}: {e}") from None
        # Neutron derives group ids from rule ids: stable made-up ones (the capacity does not depend on them)
        parsed.append(dataclasses.replace(r, id=str(uuid.uuid5(uuid.UUID(port_id), f"rule-{i}"))))
    try:
        validate_rules([dataclasses.replace(r, id=None) for r in parsed], where)
    except RequestError as e:
        raise InvalidInput(str(e)) from None
    if vnic_type not in VNIC_TYPES:
        raise InvalidInput(f"{where}: unknown vnic_type {vnic_type!r}; Neutron accepts {', '.join(VNIC_TYPES)}.")
    tunnel = network_type in TUNNEL_TYPES
    if tunnel and physnet:
        raise InvalidInput(f"{where}: a {network_type} network has no physnet; give physical_network or a "
                           f"tunnel network_type, not both.")
    if network_type is not None and not tunnel and network_type not in ("vlan", "flat"):
        raise InvalidInput(f"{where}: network_type must be one of vlan, flat, {', '.join(TUNNEL_TYPES)}; "
                           f"got {network_type!r}.")
    if physnet is not None and (not isinstance(physnet, str) or not physnet.strip()):
        raise InvalidInput(f"{where}: physical_network must be a physnet name, got {physnet!r}.")
    segment = (Segment(network_type, None) if tunnel else
               Segment(network_type or "vlan", physnet or _OPEN_PHYSNET))
    pr = build_port_request(port_id, parsed, [segment], vnic_type)
    if pr is None:
        raise InvalidInput(f"{where}: no minimum rule: nothing to reserve.")
    if physnet or tunnel:
        return pr, frozenset()
    groups = tuple(dataclasses.replace(g, required=tuple(t for t in g.required if t != _OPEN_TRAIT))
                   for g in pr.groups)
    opened = frozenset(g.id for g, old in zip(groups, pr.groups) if old.required != g.required)
    return dataclasses.replace(pr, groups=groups), opened


QOS_PORT_KEYS = ("qos_rules", "vnic_type", "physical_network", "network_type")


def capacity_request(resources: Mapping | None = None, required: Iterable[str] = (), port_requests: Iterable = (),
                     qos_ports: Sequence[Mapping] = (), *, group_policy: str | None = None,
                     resources_option: str = "resources", port_labels: Sequence[str] | None = None,
                     ) -> CapacityRequest:
    """The shape to count, from plain data (CLI options, module parameters): the flavor's resources and
    traits, ports as Neutron reports their ``resource_request`` (``port_requests``), and ports given by
    their QoS rules, ``{qos_rules, vnic_type, physical_network, network_type}`` (``qos_ports``; a port
    without physical_network or tunnel network_type is counted on each physnet). ``port_labels`` name
    the qos_ports in errors (default ``qos_ports[i]``)."""
    flavor = flavor_resources(resources, resources_option)
    built, opened, labels, names = [], set(), {}, {}
    for i, spec in enumerate(qos_ports or ()):
        where = port_labels[i] if port_labels else f"qos_ports[{i}]"
        if not isinstance(spec, Mapping):
            raise InvalidInput(f"{where}: expected {{{', '.join(QOS_PORT_KEYS)}}}, got {spec!r}")
        unknown = sorted(set(spec) - set(QOS_PORT_KEYS))
        if unknown:
            raise InvalidInput(f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(QOS_PORT_KEYS)}")
        pr, open_ids = qos_port(i, spec.get("qos_rules") or [], vnic_type=spec.get("vnic_type") or "normal",
                                physnet=spec.get("physical_network"), network_type=spec.get("network_type"),
                                where=where)
        built.append(pr)
        names[pr.port_id] = where
        opened |= open_ids
        if spec.get("physical_network"):
            labels[naming.physnet_trait(spec["physical_network"])] = spec["physical_network"]
    traits = [t for t in (required or ()) if t]
    for t in traits:
        if not _TRAIT.match(t.removeprefix("!")):
            raise InvalidInput(f"required: {t!r} is not a trait name (A-Z, 0-9, _; forbidden ones start with !).")
    if group_policy not in (None, "none", "isolate"):
        raise InvalidInput(f"group_policy must be none or isolate, got {group_policy!r}.")
    server = ServerRequest.from_options(flavor, [t for t in traits if not t.startswith("!")], port_requests,
                                        group_policy=group_policy)
    server = dataclasses.replace(server, forbidden=tuple(t[1:] for t in traits if t.startswith("!")))
    return CapacityRequest(dataclasses.replace(server, ports=server.ports + tuple(built)), frozenset(opened), labels,
                           names)


# ---------------------------------------------------------------- inventories

# ---------------------------------------------------------------- results

@dataclass(frozen=True)
class Limit:
    """What stops the next server: ``resource_class`` on ``providers`` (names) together, ``needs`` per server,
    ``free`` there now, ``copies`` = free // needs as far as that resource goes; or, with no way to place a
    server at all, ``reason``."""

    resource_class: str | None = None
    providers: tuple[str, ...] = ()
    needs: int | None = None
    free: int | None = None
    copies: int | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return {"resource_class": self.resource_class, "providers": list(self.providers), "needs": self.needs,
                "free": self.free, "copies": self.copies, "reason": self.reason}

    def describe(self, short=lambda name: name) -> str:
        if self.reason:
            return self.reason
        where = "+".join(short(p) for p in self.providers)
        return f"{self.resource_class} on {where} ({self.free} free, {self.needs} per server)"


@dataclass(frozen=True)
class Fit:
    fits: int
    first_fit: int
    exact: bool
    ways: int
    limited_by: tuple[Limit, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"fits": self.fits, "first_fit": self.first_fit, "exact": self.exact, "ways": self.ways,
                "limited_by": [lim.to_dict() for lim in self.limited_by], "notes": list(self.notes)}


@dataclass(frozen=True)
class NetworkFit:
    physnet: str
    traits: tuple[str, ...]
    fit: Fit

    def to_dict(self) -> dict:
        return {"physnet": self.physnet, "traits": list(self.traits), **self.fit.to_dict()}


@dataclass(frozen=True)
class HostCapacity:
    uuid: str
    name: str
    fit: Fit
    physnets: tuple[NetworkFit, ...]

    def to_dict(self) -> dict:
        return {"host": self.name, "uuid": self.uuid, **self.fit.to_dict(),
                "physnets": [n.to_dict() for n in self.physnets]}


@dataclass(frozen=True)
class CapacityReport:
    request: CapacityRequest
    hosts: tuple[HostCapacity, ...]
    providers: tuple[Mapping, ...]
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(h.fit.fits for h in self.hosts)

    def physnet_totals(self) -> list[dict]:
        totals: dict[str, dict] = {}
        for h in self.hosts:
            for n in h.physnets:
                t = totals.setdefault(n.physnet, {"physnet": n.physnet, "traits": list(n.traits), "fits": 0,
                                                  "first_fit": 0, "hosts": 0})
                t["fits"] += n.fit.fits
                t["first_fit"] += n.fit.first_fit
                t["hosts"] += 1 if n.fit.fits else 0
        return [totals[k] for k in sorted(totals)]

    def to_dict(self) -> dict:
        return {"request": self.request.to_dict(), "hosts": [h.to_dict() for h in self.hosts],
                "physnets": self.physnet_totals(), "total": self.total,
                "total_first_fit": sum(h.fit.first_fit for h in self.hosts), "notes": list(self.notes),
                "providers": [dict(p) for p in self.providers]}


# ---------------------------------------------------------------- one server: the ways to place it

@dataclass(frozen=True)
class _Tree:
    root: str
    names: Mapping[str, str]
    parents: Mapping[str, str | None]
    traits: Mapping[str, frozenset[str]]
    stocks: Mapping[tuple[str, str], Stock]
    order: tuple[str, ...]  # providers, root first then by name

    def ancestors(self, rp: str) -> set[str]:
        out = set()
        while rp is not None and rp not in out:
            out.add(rp)
            rp = self.parents.get(rp)
        return out


@dataclass(frozen=True)
class _Way:
    """One way to place one server: ``places`` (group, class, provider, amount) and the summed ``use``."""

    places: tuple[tuple[str, str, str, int], ...]
    use: tuple[tuple[tuple[str, str], int], ...]


def _traits_text(g: RequestGroup) -> str:
    parts = [", ".join(g.required)] if g.required else []
    parts += [f"one of {', '.join(a)}" for a in g.required_any]
    parts += [f"none of {', '.join(g.forbidden)}"] if g.forbidden else []
    return "; ".join(parts)


def _group_label(req: ServerRequest, gid: str, port_names: Mapping[str, str]) -> str:
    if not gid:
        return "the flavor"
    for i, port in enumerate(req.ports):
        for g in port.groups:
            if g.id == gid:
                kind = "/".join(sorted({"bandwidth" if "_BW_" in rc else "packet rate" for rc, _ in g.resources})) \
                    or "traits"
                return f"{port_names.get(port.port_id) or f'port {port.port_id}'} {kind}"
    return f"group {gid}"


def _numbered_options(g: RequestGroup, tree: _Tree) -> tuple[list[tuple], str]:
    """Each provider that can serve numbered group ``g`` alone, as its places; or why none can."""
    options, near = [], []
    wanted = set(g.required) | {t for a in g.required_any for t in a}
    for rp in tree.order:
        problem = g.trait_problem(tree.traits[rp])
        if problem:
            have = wanted & tree.traits[rp]
            if have:
                # the nearest misses first: those on the port's network, then those with most of its traits
                near.append(((any(map(is_network_trait, have)), len(have)), f"{tree.names[rp]} {problem}"))
            continue
        unfit = []
        for rc, amount in g.resources:
            stock = tree.stocks.get((rp, rc))
            if stock is None:
                unfit.append(f"has no {rc} inventory")
            elif stock.refuses(amount):
                unfit.append(f"{rc}: {stock.refuses(amount)}")
        if unfit:
            near.append(((True, len(wanted) + 1), f"{tree.names[rp]} {'; '.join(unfit)}"))
        else:
            options.append(tuple((g.id, rc, rp, amount) for rc, amount in g.resources) or ((g.id, "", rp, 0),))
    if options:
        return options, ""
    why = f"no provider of {tree.names[tree.root]} has {_traits_text(g)}" if g.required or g.required_any else \
        f"no provider of {tree.names[tree.root]} can take {', '.join(f'{rc}={a}' for rc, a in g.resources)}"
    top = max((rank for rank, _ in near), default=None)
    nearest = [text for rank, text in near if rank == top][:4]
    return [], why + (f" ({'; '.join(nearest)})" if nearest else "")


def _unsuffixed_options(g: RequestGroup, tree: _Tree) -> tuple[list[tuple], str]:
    """Each combination of providers (one per class) that can serve the flavor's group, as its places."""
    per_class, problems = [], []
    for rc, amount in g.resources:
        holders = []
        for rp in tree.order:
            stock = tree.stocks.get((rp, rc))
            if stock is None or set(g.forbidden) & tree.traits[rp]:
                continue
            if stock.refuses(amount):
                problems.append(f"{rc} of {tree.names[rp]}: {stock.refuses(amount)}")
                continue
            holders.append((g.id, rc, rp, amount))
        if not holders:
            return [], (f"no provider of {tree.names[tree.root]} can take {rc}={amount}"
                        + (f" ({'; '.join(problems)})" if problems else ""))
        per_class.append(holders)
    if not per_class:
        # traits only (a flavor with required traits and no resources): some provider must have them
        ok = any(not g.trait_problem(tree.traits[rp]) for rp in tree.order)
        return ([()], "") if ok else ([], f"no provider of {tree.names[tree.root]} has {_traits_text(g)}")
    options = []
    for combo in itertools.product(*per_class):
        # Placement: the providers that serve the group's classes must have its traits between them
        if not g.trait_problem(set().union(*(tree.traits[rp] for _, _, rp, _ in combo))):
            options.append(combo)
        if len(options) >= MAX_COMBINATIONS:
            break
    if not options:
        return [], f"the providers of {tree.names[tree.root]} holding the flavor's resources lack {_traits_text(g)}"
    return options, ""


def _same_subtree_ok(rps: set[str], tree: _Tree) -> bool:
    # placement.objects.allocation_candidate._check_same_subtree: one of them is an ancestor of all
    if len(rps) <= 1:
        return True
    common = set.intersection(*(tree.ancestors(rp) for rp in rps))
    return bool(common & rps)


def _ways(req: ServerRequest, tree: _Tree, port_names: Mapping[str, str]) -> tuple[list[_Way], dict, list[Limit], bool]:
    """The distinct ways to place one server on the tree; every provider each item (a group's class)
    can use in some way; the reasons when there are none; whether the enumeration was cut at
    MAX_COMBINATIONS."""
    root_traits = tree.traits[tree.root]
    missing = [t for t in req.root_required if t not in root_traits]
    bad = [t for t in req.root_forbidden if t in root_traits]
    if missing or bad:
        return [], {}, [Limit(reason=f"the root {tree.names[tree.root]} "
                                 + (f"lacks {', '.join(missing)}" if missing else f"has {', '.join(bad)}"))], False
    groups = req.request_groups()
    options, reasons = [], []
    for g in groups:
        found, why = (_unsuffixed_options if not g.id else _numbered_options)(g, tree)
        options.append(found)
        if why:
            reasons.append(Limit(reason=f"{_group_label(req, g.id, port_names)}: {why}"))
    if reasons:
        return [], {}, reasons, False
    isolate = req.effective_group_policy() == "isolate"
    subtrees = req.same_subtrees()
    seen: dict[tuple, _Way] = {}
    pools: dict[tuple[str, str, int], set] = {}  # (group, class, amount) -> inventories, over every way
    cut = False
    for n, combo in enumerate(itertools.product(*options)):
        if n >= MAX_COMBINATIONS:
            cut = True
            break
        providers: dict[str, set[str]] = {}
        for places in combo:
            for gid, _, rp, _ in places:
                providers.setdefault(gid, set()).add(rp)
        if isolate:
            numbered = [next(iter(providers[g.id])) for g in groups if g.id]
            if len(set(numbered)) != len(numbered):
                continue
        if not all(_same_subtree_ok(set().union(*(providers.get(gid, set()) for gid in ids)), tree)
                   for ids in subtrees):
            continue
        use: dict[tuple[str, str], int] = {}
        places = tuple(p for places in combo for p in places if p[1])
        for _, rc, rp, amount in places:
            use[(rp, rc)] = use.get((rp, rc), 0) + amount
        # groups sharing a provider: Placement sums them and checks the sum against max_unit
        if any(amount > tree.stocks[key].max_unit for key, amount in use.items()):
            continue
        key = tuple(sorted(use.items()))
        seen.setdefault(key, _Way(places, key))
        for gid, rc, rp, amount in places:
            pools.setdefault((gid, rc, amount), set()).add((rp, rc))
    ways = list(seen.values())
    if not ways:
        return [], {}, [Limit(reason="no way to place all the groups together on one host: "
                                 + ("group_policy=isolate, same_subtree or max_unit of shared providers rule out "
                                    "every combination" if isolate or subtrees else
                                    "max_unit of shared providers rules out every combination"))], cut
    return ways, pools, [], cut


# ---------------------------------------------------------------- many servers: the packing

def _copies(use, rem) -> int:
    return min(rem[k] // a for k, a in use) if use else 0


def _first_fit(ways: Sequence[_Way], order: Sequence[int], cap: Mapping) -> tuple[int, ...]:
    """Copies of each way when each server takes the first way (in ``order``) that still fits: the same
    as taking as many copies of each way in turn (a way that stops fitting never fits again: usage
    only grows)."""
    rem = dict(cap)
    counts = [0] * len(ways)
    for j in order:
        n = counts[j] = _copies(ways[j].use, rem)
        for k, a in ways[j].use:
            rem[k] -= n * a
    return tuple(counts)


def _orders(k: int) -> Iterable[tuple[int, ...]]:
    if k <= MAX_ORDERS_ALL:
        return itertools.permutations(range(k))
    base = list(range(k))
    rot = [tuple(base[i:] + base[:i]) for i in range(k)]
    return rot + [tuple(reversed(r)) for r in rot]


def _bounds(pools: Mapping[tuple[str, str, int], set], rem: Mapping, isolate: bool) -> list[tuple[int, str, frozenset, int]]:
    """Upper bounds on how many more servers fit, as ``(bound, class, inventories, needs)``, from where
    each item (a group's class and amount) can go (``pools``) and what is left (``rem``):

    * per item: every server puts it on one of its providers: at most ``sum(rem // amount)``;
    * per class and amount, for the ``m`` items of a server that share them: ``sum(rem // amount) // m``
      over their providers (each copy takes a whole ``amount`` wherever it lands); under
      ``group_policy=isolate`` a provider also takes at most one of them per server, so the largest ``N``
      with ``sum(min(rem // amount, N)) >= m * N``;
    * per class: every server needs the sum of its items of that class: ``sum(rem) // need``.
    """
    out = []
    by_size: dict[tuple[str, int], list] = {}
    by_class: dict[str, list] = {}
    for (gid, rc, amount), keys in pools.items():
        out.append((sum(rem[k] // amount for k in keys), rc, frozenset(keys), amount))
        by_size.setdefault((rc, amount), []).append((gid, keys))
        by_class.setdefault(rc, []).append((amount, keys))
    for (rc, amount), members in by_size.items():
        if len(members) < 2:
            continue
        keys = frozenset().union(*(k for _, k in members))
        m = len(members)
        copies = [rem[k] // amount for k in keys]
        bound = sum(copies) // m
        if isolate and all(gid for gid, _ in members):
            low, high = 0, bound  # sum(min(c, N)) - m * N only falls once N passes the largest c
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if sum(min(c, mid) for c in copies) >= m * mid else (low, mid - 1)
            bound = low
        out.append((bound, rc, keys, m * amount))
    for rc, members in by_class.items():
        keys = frozenset().union(*(k for _, k in members))
        need = sum(a for a, _ in members)
        out.append((sum(rem[k] for k in keys) // need, rc, keys, need))
    return out


class _Bound:
    """:func:`_bounds` for the ways ``i..`` (the items' providers in those ways), for the search."""

    def __init__(self, ways: Sequence[_Way], isolate: bool):
        self.isolate = isolate
        self.suffix = []
        pools: dict[tuple[str, str, int], set] = {}
        for w in reversed(ways):
            for gid, rc, rp, amount in w.places:
                pools.setdefault((gid, rc, amount), set()).add((rp, rc))
            self.suffix.append({item: frozenset(keys) for item, keys in pools.items()})
        self.suffix.reverse()

    def __call__(self, i: int, rem: Mapping) -> int:
        return min(b for b, *_ in _bounds(self.suffix[i], rem, self.isolate))


def _look_ahead(ways: Sequence[_Way], cap: Mapping, bound: _Bound, steps: int = LOOK_AHEAD_STEPS) -> tuple[int, ...]:
    """A packing that keeps room for later servers: in about ``steps`` batches, each batch of servers takes
    the way after which the most servers could still fit (by the bounds). First fit takes one way until
    it is full; with large inventories and ways that compete (ports of two sizes under isolate) this
    one gets much closer to the best."""
    rem = dict(cap)
    counts = [0] * len(ways)
    everyone = _Bound(ways, bound.isolate)  # the bounds over all the ways (index 0)
    batch = max(1, max(_copies(w.use, rem) for w in ways) // steps)
    while True:
        best_j, best_score = None, (-1, 0.0)
        for j, w in enumerate(ways):
            n = min(batch, _copies(w.use, rem))
            if n <= 0:
                continue
            after = dict(rem)
            for k, a in w.use:
                after[k] -= n * a
            # ties (often: the bounds see totals, not how they are spread) go to the way that leaves
            # its fullest inventory the most room: spreading keeps every way open longer
            score = (n + everyone(0, after), min(after[k] / cap[k] if cap[k] else 0 for k, _ in w.use))
            if score > best_score:
                best_j, best_score = j, score
        if best_j is None:
            if batch == 1:
                return tuple(counts)
            batch = max(1, batch // 4)  # the last servers one by one
            continue
        n = min(batch, _copies(ways[best_j].use, rem))
        counts[best_j] += n
        for k, a in ways[best_j].use:
            rem[k] -= n * a


@dataclass(frozen=True)
class _Packing:
    fits: int
    first_fit: int
    exact: bool
    upper: int
    counts: tuple[int, ...]  # copies of each way in the best packing found


def _pack(ways: Sequence[_Way], cap: Mapping, isolate: bool = False) -> _Packing:
    """The most servers the ways can place (branch and bound, seeded with every first-fit order), the
    fewest any first-fit order places, whether the search finished, its upper bound."""
    fills = [_first_fit(ways, order, cap) for order in _orders(len(ways))]
    best_counts = max(fills, key=sum)
    best, worst = sum(best_counts), min(sum(f) for f in fills)
    bound = _Bound(ways, isolate)
    upper = bound(0, cap)
    if best >= upper or len(ways) == 1:
        return _Packing(best, worst, True, upper, best_counts)
    looked = _look_ahead(ways, cap, bound)
    if sum(looked) > best:
        best, best_counts = sum(looked), looked
    if best >= upper:
        return _Packing(best, worst, True, upper, best_counts)
    if len(ways) > MAX_SEARCH_WAYS:
        return _Packing(best, worst, False, upper, best_counts)
    nodes = 0
    exhausted = False
    counts = [0] * len(ways)

    def dfs(i: int, rem: dict, placed: int) -> None:
        nonlocal best, best_counts, nodes, exhausted
        nodes += 1
        if nodes > SEARCH_BUDGET:
            exhausted = True
            return
        if i == len(ways):
            if placed > best:
                best, best_counts = placed, tuple(counts)
            return
        if placed + bound(i, rem) <= best:
            return
        use = ways[i].use
        for n in range(_copies(use, rem), -1, -1):
            counts[i] = n
            nxt = dict(rem)
            for k, a in use:
                nxt[k] -= n * a
            dfs(i + 1, nxt, placed + n)
            if exhausted or best >= upper:
                break
        counts[i] = 0
    dfs(0, dict(cap), 0)
    return _Packing(best, worst, not exhausted, upper, best_counts)


def _fit(req: ServerRequest, tree: _Tree, port_names: Mapping[str, str] = MappingProxyType({})) -> Fit:
    ways, pools, reasons, cut = _ways(req, tree, port_names)
    if not ways:
        return Fit(0, 0, not cut, 0, tuple(reasons))
    cap = {key: tree.stocks[key].free for w in ways for key, _ in w.use}
    isolate = req.effective_group_policy() == "isolate"
    packing = _pack(ways, cap, isolate)
    fits, first_fit, exact, upper = packing.fits, packing.first_fit, packing.exact, packing.upper
    notes = []
    if cut:
        notes.append(f"only the first {MAX_COMBINATIONS} combinations of providers were considered: the count "
                     f"is a lower bound")
    if not exact:
        notes.append(f"the search for the best packing stopped early: {fits} is the best found, at most {upper} fit")
    if first_fit < fits:
        notes.append(f"the {len(ways)} ways to place a server compete for the same providers: {fits} fit when each "
                     f"server lands where it leaves room for the next, but Placement picks each claim's candidate, "
                     f"and claims can stop at {first_fit} (first fit in the worst order)")
    return Fit(fits, first_fit, exact, len(ways), _limits(ways, pools, cap, packing, tree, isolate), tuple(notes))


def _limits(ways: Sequence[_Way], pools: Mapping, cap: Mapping, packing: _Packing, tree: _Tree,
            isolate: bool) -> tuple[Limit, ...]:
    """The resources whose bound (:func:`_bounds`) is the count, each item over every provider it can use
    in any way (the search keeps one way per distinct usage, whose providers alone would name too few)."""
    bounds = _bounds(pools, cap, isolate)
    tight, seen = [], set()
    for b, rc, keys, needs in bounds:
        if b != packing.fits or (rc, keys) in seen:
            continue
        seen.add((rc, keys))
        rps = sorted((rp for rp, _ in keys), key=tree.order.index)
        tight.append(Limit(rc, tuple(tree.names[rp] for rp in rps), needs, sum(cap[k] for k in keys), b))
    if tight:
        # several give out at the same count: the one with the least left over first
        return tuple(sorted(tight, key=lambda lim: (lim.free - lim.copies * lim.needs, lim.resource_class)))
    # No single resource explains the count: the ways interfere. Name what is too short for each way
    # once the best packing is made.
    rem = dict(cap)
    for w, n in zip(ways, packing.counts):
        for k, a in w.use:
            rem[k] -= n * a
    short = sorted({k for w in ways for k, a in w.use if rem[k] < a},
                   key=lambda k: (tree.order.index(k[0]), k[1]))
    left = ", ".join(f"{rc} of {tree.names[rp]} ({rem[(rp, rc)]} left)" for rp, rc in short)
    return (Limit(reason=f"the ways to place a server compete: after {packing.fits}, none has room: {left}"),)


# ---------------------------------------------------------------- hosts

def _trees(details: Iterable) -> tuple[list[_Tree], list[str]]:
    details = list(details)
    by_root: dict[str, list] = {}
    for d in details:
        by_root.setdefault(d.provider.root_uuid, []).append(d)
    trees, notes = [], []
    for root, members in by_root.items():
        top = next((d for d in members if d.provider.uuid == root), None)
        if top is None:
            continue  # a tree read without its root (cannot happen with a whole listing)
        if SHARING_TRAIT in top.traits:
            notes.append(f"{top.provider.name} shares its inventory via aggregates: sharing providers are not "
                         f"counted here")
            continue
        names = {d.provider.uuid: d.provider.name for d in members}
        order = tuple([root] + sorted((d.provider.uuid for d in members if d.provider.uuid != root),
                                      key=lambda u: names[u]))
        stocks = {(d.provider.uuid, rc): s for d in members
                  for rc, s in stocks_of(d.provider.uuid, d.inventories, d.usages).items()}
        trees.append(_Tree(root, names, {d.provider.uuid: d.provider.parent_uuid for d in members},
                           {d.provider.uuid: frozenset(d.traits) for d in members}, stocks, order))
    if any(not getattr(d, "unmoved", True) for d in details):
        notes.append("some providers changed while they were read: run again for a consistent count")
    return sorted(trees, key=lambda t: t.names[t.root]), notes


def host_networks(tree: _Tree) -> tuple[str, ...]:
    return tuple(sorted({t for rp in tree.order for t in tree.traits[rp] if is_network_trait(t)}))


def _host(request: CapacityRequest, tree: _Tree) -> HostCapacity:
    name = tree.names[tree.root]
    if request.open_groups:
        networks = host_networks(tree)
        rows = tuple(NetworkFit(request.label(t), (t,), _fit(request.for_network((t,)), tree, request.port_names)) for t in networks)
        if not networks:
            fit = Fit(0, 0, True, 0, (Limit(reason=f"no provider of {name} has a physnet or tunnel trait "
                                                   f"(CUSTOM_PHYSNET_*, {TUNNEL_TRAIT})"),))
        elif len(networks) == 1:
            fit = rows[0].fit
        else:
            fit = _fit(request.for_network(networks), tree, request.port_names)
        return HostCapacity(tree.root, name, fit, rows)
    fit = _fit(request.server, tree, request.port_names)
    fixed = request.fixed_networks()
    rows = (NetworkFit("+".join(request.label(t) for t in fixed), fixed, fit),) if fixed else ()
    return HostCapacity(tree.root, name, fit, rows)


def network_usage(tree: _Tree) -> list[dict]:
    """Bandwidth and packet rate of each provider of the tree: capacity, used, free (for tables, pictures)."""
    out = []
    for rp in tree.order:
        for rc in NETWORK_CLASSES:
            s = tree.stocks.get((rp, rc))
            if s is None:
                continue
            out.append({"host": tree.names[tree.root], "provider": tree.names[rp], "uuid": rp, "resource_class": rc,
                        "total": s.total, "reserved": s.reserved, "allocation_ratio": s.allocation_ratio,
                        "capacity": s.capacity, "used": s.used, "free": s.free,
                        "physnets": [network_label(t) for t in sorted(tree.traits[rp]) if is_network_trait(t)]})
    return out


def capacity(details: Iterable, request: CapacityRequest) -> CapacityReport:
    """How many more servers shaped as ``request`` fit on each host (root provider) of ``details``,
    per physnet and in total (the module docstring gives the rule)."""
    trees, notes = _trees(details)
    hosts = tuple(_host(request, t) for t in trees)
    providers = tuple(row for t in trees for row in network_usage(t))
    return CapacityReport(request, hosts, providers, tuple(notes))
