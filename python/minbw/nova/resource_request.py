"""Nova's ``ResourceRequest`` for a server: ``from_request_spec`` and ``resources_from_request_spec``
(nova/scheduler/utils.py, nova 34), as a ``minbw.model.requests.ServerRequest``.

The flavor's extra specs (``resources[S]:CLASS``, ``trait[S]:NAME``, ``group_policy``; what Nova ignores with a
warning is ignored here too, and noted), the image's ``trait:NAME=required`` properties, the CPU pinning
policies, the ports' request groups (either Neutron format, as ``nova.network.neutron.API.
create_resource_requests`` reads them), the flavor's vcpus/ram/disk/ephemeral/swap where no group names the
class, then the image/flavor translations (vPMEM, vTPM, PCI NUMA socket affinity, secure boot, maxphysaddr,
stateless firmware); zero amounts stripped; then what the request filters put on the request spec (root
traits, required and forbidden aggregates), a requested host's ``in_tree``, the limit and the group_policy
default. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from minbw.errors import NoValidHost, RequestError
from minbw.model.requests import RequestGroup, ServerRequest
from minbw.nova import fields, hardware
from minbw.nova.inputs import CloudFacts, Server
from minbw.nova.options import SchedulerOptions

# nova.scheduler.utils.ResourceRequest.XS_KEYPAT
XS_KEYPAT = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")
# scheduler hints that make Nova drop the limit (resources_from_request_spec)
UNLIMITED_HINTS = ("group", "same_host", "different_host")


@dataclass(frozen=True)
class Spec:
    """What Nova's request filters change on the RequestSpec: root traits (``request_level_params``) and the
    requested destination's aggregates (each an OR list; the lists AND-ed) and forbidden aggregates."""

    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    aggregates: tuple[tuple[str, ...], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()


@dataclass
class _Group:
    """One group while it is assembled (Nova's objects.RequestGroup): local to ``_assemble``."""

    id: str | None
    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)

    def empty(self) -> bool:
        """Whether the group asks for nothing: no resources, no required and no forbidden traits."""
        return not (self.resources or self.required or self.forbidden)


@dataclass(frozen=True)
class Assembled:
    """The request before the request-wide parts: Nova's ResourceRequest after ``from_request_spec``."""

    unsuffixed_extra: tuple[tuple[str, int], ...]  # resources the extra specs and translations set
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    flavor_groups: tuple[RequestGroup, ...]  # every suffix the flavor names, empty ones too
    group_policy: str | None
    cpu_pinning_requested: bool
    disk_gb: int
    notes: tuple[str, ...]
    all_required_traits: frozenset[str]


def _add_resource(group: _Group, rclass: str, amount, notes: list[str], where: str) -> None:
    """objects.RequestGroup.add_resource: an unknown class or an amount that is not a non-negative
    integer is ignored (Nova logs a warning)."""
    import os_resource_classes as orc

    if not (rclass.startswith(orc.CUSTOM_NAMESPACE) or rclass in orc.STANDARDS):
        notes.append(
            f"{where}: ignored, as Nova ignores it: {rclass!r} is neither a standard resource class nor CUSTOM_*"
        )
        return
    try:
        value = int(amount)
        if value < 0:
            raise ValueError
    except (TypeError, ValueError):
        notes.append(f"{where}: ignored, as Nova ignores it: the amount {amount!r} is not a non-negative integer")
        return
    group.resources[rclass] = value


def _add_trait(group: _Group, name: str, kind, notes: list[str], where: str) -> None:
    if kind == "required":
        group.required.add(name)
    elif kind == "forbidden":
        group.forbidden.add(name)
    else:
        notes.append(
            f"{where}: ignored, as Nova ignores it: a trait extra spec is 'required' or 'forbidden', not {kind!r}"
        )


def _port_groups(server: Server, notes: list[str]) -> list[tuple[str, RequestGroup, str]]:
    """(requester id, group, whose) for every group from outside the flavor: Cyborg's, then the ports'. A port
    group with any-traits (``required_any``: minbw's request for a network of several physnets, never Neutron's)
    is kept, noted: the query is then minbw's own, for what minbw schedules and claims itself."""
    out = [(g.id, g, "the device profile") for g in server.device_profile_groups]
    for port in server.ports:
        if port.vnic_type in fields.VNIC_TYPES_ACCELERATOR:
            raise RequestError(
                f"{port.label}: vnic type {port.vnic_type} takes its request groups from the "
                f"Cyborg device profile of the port, which minbw does not read: the query is not "
                f"reproduced. Fix: leave the port out, or use another vnic type."
            )
        if port.request is None:
            continue
        for g in port.request.groups:
            for any_of in g.required_any:
                notes.append(
                    f"{port.label}: group {g.id} asks for any of {', '.join(any_of)} (any-traits, "
                    f"Placement 1.39): minbw's own request, for what minbw schedules and claims itself; "
                    f"Nova never sees it: a server Nova schedules with this port asks for Neutron's "
                    f"resource_request (the network's first physnet only)"
                )
            out.append((g.id, g, port.label))
    return out


def _assemble(server: Server, spec: Spec, pinning: bool) -> Assembled:
    import os_resource_classes as orc

    flavor, notes = server.flavor, []
    meta = hardware.image_meta(server.image)
    groups: dict[str | None, _Group] = {}

    def group(ident: str | None) -> _Group:
        """The group being assembled for ``ident`` (None: the unsuffixed one), made on first use."""
        return groups.setdefault(ident, _Group(ident))

    policy = None
    for key, value in flavor.extra_specs:  # _process_extra_specs
        if key == "group_policy":
            if value in ("none", "isolate"):
                policy = value
            else:
                notes.append(
                    f"flavor extra spec group_policy={value!r}: ignored, as Nova ignores it: it is 'none' or 'isolate'"
                )
            continue
        m = XS_KEYPAT.match(key)
        if not m:
            continue
        prefix, suffix, name = m.groups()
        where = f"flavor extra spec {key}={value!r}"
        if prefix == "resources":
            _add_resource(group(suffix), name, value, notes, where)
        else:
            _add_trait(group(suffix), name, value, notes, where)
    flavor_suffixes = [s for s in groups if s is not None]

    for trait in meta["traits_required"]:  # _process_image_meta
        group(None).required.add(trait)

    pinning_requested = False
    if pinning:  # _translate_pinning_policies
        cpu_policy = hardware.get_cpu_policy_constraint(flavor, meta)
        thread_policy = hardware.get_cpu_thread_policy_constraint(flavor, meta)
        emulator_policy = hardware.get_emulator_thread_policy_constraint(flavor)
        pcpus = 0
        if cpu_policy == "dedicated":
            pinning_requested = True
            pcpus = flavor.vcpus
        if cpu_policy == "mixed":
            dedicated = hardware.get_dedicated_cpu_constraint(flavor)
            realtime = hardware.get_realtime_cpu_constraint(flavor, meta)
            pcpus = len(dedicated or realtime or [])
            _add_resource(group(None), orc.VCPU, flavor.vcpus - pcpus, notes, "hw:cpu_policy=mixed")
        if cpu_policy in ("dedicated", "mixed"):
            if emulator_policy == "isolate":
                pcpus += 1
            _add_resource(group(None), orc.PCPU, pcpus, notes, f"hw:cpu_policy={cpu_policy}")
        kind = {"isolate": "forbidden", "require": "required"}.get(thread_policy or "")
        if kind:
            _add_trait(group(None), fields.HW_CPU_HYPERTHREADING, kind, notes, "hw:cpu_thread_policy")

    # _process_requested_resources: the ports' (and device profile's) groups, as they are
    outside = _port_groups(server, notes)
    for ident, g, whose in outside:
        if not ident:
            raise RequestError(
                f"{whose}: a request group without an id: Nova refuses it (ValueError). Fix: pass "
                f"the resource_request as Neutron returns it."
            )
        if not g.resources and not g.required and not g.forbidden:
            raise RequestError(
                f"{whose}: request group {ident} asks for nothing (no resources, no traits): Nova "
                f"refuses to add it (ValueError). Fix: pass the resource_request as Neutron returns "
                f"it."
            )
        if ident in groups:
            raise RequestError(
                f"{whose}: request group {ident} has the suffix of another group of the request "
                f"(the flavor's or another port's): Nova refuses it (RequestGroupSuffixConflict). "
                f"Fix: rename the flavor's granular group {ident}."
            )
        groups[ident] = _Group(ident, dict(g.resources), set(g.required), set(g.forbidden))

    swap_gb = -(-flavor.swap // 1024)  # compute_utils.convert_mb_to_ceil_gb
    disk = flavor.ephemeral + swap_gb + (0 if server.boot_from_volume else flavor.disk)

    if hardware.mem_encryption_requested(flavor, meta):
        raise RequestError(
            "the flavor (hw:mem_encryption) or image (hw_mem_encryption) asks for memory "
            "encryption: Nova then adds MEM_ENCRYPTION_CONTEXT and a CPU model trait checked against "
            "the machine type and firmware, which minbw does not reproduce. Fix: leave memory "
            "encryption out of the flavor and image asked about."
        )
    amounts: dict[str, int] = {}
    for label in hardware.get_vpmems(flavor):  # _translate_vpmems_request
        rc = hardware.pmem_resource_class(label)
        amounts[rc] = amounts.get(rc, 0) + 1
    for rc, amount in amounts.items():
        group(None).resources[rc] = amount
    vtpm = hardware.get_vtpm_constraint(flavor, meta)
    if vtpm:
        version, model = vtpm
        group(None).required.add(
            fields.COMPUTE_SECURITY_TPM_CRB if model == "tpm-crb" else fields.COMPUTE_SECURITY_TPM_TIS
        )
        group(None).required.add(
            fields.COMPUTE_SECURITY_TPM_2_0 if version == "2.0" else fields.COMPUTE_SECURITY_TPM_1_2
        )
    if hardware.get_pci_numa_policy_constraint(flavor, meta) == "socket":
        group(None).required.add(fields.COMPUTE_SOCKET_PCI_NUMA_AFFINITY)
    if hardware.get_secure_boot_constraint(flavor, meta) == "required":
        group(None).required.add(fields.COMPUTE_SECURITY_UEFI_SECURE_BOOT)
    mode = hardware.get_maxphysaddr_mode(flavor, meta)
    if mode:
        group(None).required.add(
            fields.COMPUTE_ADDRESS_SPACE_PASSTHROUGH if mode == "passthrough" else fields.COMPUTE_ADDRESS_SPACE_EMULATED
        )
    if hardware.get_stateless_firmware_constraint(meta):
        group(None).required.add(fields.COMPUTE_SECURITY_STATELESS_FIRMWARE)

    unsuffixed = groups.get(None, _Group(None))
    required = frozenset(t for g in groups.values() for t in g.required)
    return Assembled(
        unsuffixed_extra=tuple(unsuffixed.resources.items()),
        required=tuple(unsuffixed.required),
        forbidden=tuple(unsuffixed.forbidden),
        flavor_groups=tuple(
            RequestGroup(
                s,
                tuple(groups[s].resources.items()),
                tuple(sorted(groups[s].required)),
                forbidden=tuple(groups[s].forbidden),
            )
            for s in flavor_suffixes
        ),
        group_policy=policy,
        cpu_pinning_requested=pinning_requested,
        disk_gb=disk,
        notes=tuple(notes),
        all_required_traits=required,
    )


def all_required_traits(server: Server) -> frozenset[str]:
    """``ResourceRequest.from_request_spec(spec).all_required_traits``: what isolate_aggregates matches."""
    return _assemble(server, Spec(), pinning=True).all_required_traits


def pinning_requested(server: Server) -> bool:
    """``cpu_pinning_requested``: hw:cpu_policy=dedicated (flavor or image); Nova then also asks with VCPU."""
    return _assemble(server, Spec(), pinning=True).cpu_pinning_requested


def server_request(
    server: Server, spec: Spec, options: SchedulerOptions, facts: CloudFacts, *, pinning: bool = True
) -> tuple[ServerRequest, tuple[str, ...]]:
    """Nova's ResourceRequest (``resources_from_request_spec(..., enable_pinning_translate=pinning)``) as a
    ServerRequest, and notes on what Nova ignored."""
    if options.pci_in_placement and server.flavor.specs.get("pci_passthrough:alias"):
        raise RequestError(
            "the flavor has pci_passthrough:alias and [filter_scheduler] pci_in_placement is on: "
            "Nova then adds request groups from [pci] alias, which minbw does not read: the query is "
            "not reproduced. Fix: ask about a flavor without PCI aliases."
        )
    a = _assemble(server, spec, pinning)
    in_tree, limit = None, options.max_placement_results
    if server.host or server.node:
        nodes = [
            n
            for n in facts.compute_nodes
            if (not server.host or n.host == server.host) and (not server.node or n.node == server.node)
        ]
        if server.node:
            nodes = nodes[:1]  # ComputeNode.get_by_host_and_nodename / get_by_nodename: one node
        if not nodes:
            raise NoValidHost(
                f"No valid host: No such host - host: {server.host} node: {server.node} (Nova's "
                f"resources_from_request_spec finds no compute node for the requested destination). "
                f"Fix: request a host or hypervisor hostname that exists."
            )
        if len(nodes) == 1:
            in_tree = nodes[0].uuid
        else:
            limit = None  # several nodes: Nova lifts the limit rather than pick one for in_tree
    if any(h in UNLIMITED_HINTS for h in server.scheduler_hints):
        limit = None
    ports = tuple(p.request for p in server.ports if p.request is not None)
    req = ServerRequest(
        vcpus=server.flavor.vcpus,
        memory_mb=server.flavor.ram,
        disk_gb=a.disk_gb,
        extra_resources=a.unsuffixed_extra,
        required=a.required,
        forbidden=a.forbidden,
        ports=ports,
        group_policy=a.group_policy,
        root_required=tuple(spec.root_required),
        root_forbidden=tuple(spec.root_forbidden),
        member_of=spec.aggregates,
        forbidden_member_of=tuple(spec.forbidden_aggregates),
        in_tree=in_tree,
        limit=limit,
        flavor_groups=a.flavor_groups,
        device_groups=server.device_profile_groups,
    )
    return req, a.notes
