"""What Nova makes of a flavor's ``hw:*``/``os:*`` extra specs and an image's properties, for its Placement query.

Each function reproduces the ``nova.virt.hardware`` function of the same name (nova 34), with Nova's conflict
rules between flavor and image; where Nova raises (FlavorImageConflict, Invalid, ...), these raise RequestError
naming the extra spec or property and the fix. ``image_meta`` is ``nova.objects.ImageMetaProps.from_dict`` for
the properties read here (typed, validated, legacy names). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minbw.errors import RequestError
from minbw.nova import fields
from minbw.nova.inputs import Flavor, Image


def image_meta(image: Image) -> dict[str, Any]:
    """The image's properties as ImageMetaProps types them (nova/objects/image_meta.py ``from_dict``): enums
    checked, architectures canonicalized, booleans parsed, ``trait:NAME=required`` collected in
    ``traits_required``. Properties not read by Nova's query are left as given."""
    raw = image.props
    out: dict[str, Any] = {}
    for legacy, current in fields.LEGACY_PROPERTIES.items():
        if legacy in raw:
            out[current] = raw[legacy]
    if "vmware_adaptertype" in raw:  # _set_attr_from_legacy_names
        out["hw_disk_bus"] = "ide" if raw["vmware_adaptertype"] == "ide" else "scsi"
    out.update((k, v) for k, v in raw.items() if k not in fields.LEGACY_PROPERTIES)
    where = f"image {image.name or image.id}".rstrip() + ": property"
    for key, value in list(out.items()):
        if key in fields.ENUM_PROPERTIES:
            valid = fields.ENUM_PROPERTIES[key]
            if isinstance(value, bool) or str(value) not in valid:
                raise RequestError(
                    f"{where} {key}={value!r} is not one Nova accepts ({', '.join(valid)}): Nova "
                    f"refuses the image. Fix: set {key} to one of those, or remove it."
                )
            out[key] = str(value)
        elif key in fields.ARCH_PROPERTIES:
            canonical = fields.canonical_architecture(value)
            if canonical is None:
                raise RequestError(
                    f"{where} {key}={value!r} is not an architecture Nova knows: Nova refuses the "
                    f"image. Fix: use one of {', '.join(fields.ARCHITECTURE)}."
                )
            out[key] = canonical
        elif key in fields.BOOL_PROPERTIES:
            out[key] = fields.bool_from_string(value)
    # _set_attr_from_trait_names: in the order of the properties
    out["traits_required"] = [
        k.removeprefix("trait:") for k, v in raw.items() if k.startswith("trait:") and str(v) == "required"
    ]
    return out


def _flavor_image(key: str, flavor: Flavor, meta: Mapping, prefix: str = "hw"):
    """_get_flavor_image_meta: the flavor's ``prefix:key`` extra spec and the image's ``prefix_key``."""
    return flavor.specs.get(f"{prefix}:{key}"), meta.get(f"{prefix}_{key}")


def _unique(key: str, flavor: Flavor, meta: Mapping, prefix: str = "hw"):
    """_get_unique_flavor_image_meta: one value from flavor or image; both set and different is a conflict."""
    flavor_value, image_value = _flavor_image(key, flavor, meta, prefix)
    if image_value and flavor_value and image_value != flavor_value:
        raise RequestError(
            f"flavor {flavor.name or flavor.id} has {prefix}:{key}={flavor_value!r} and the image "
            f"{prefix}_{key}={image_value!r}: Nova refuses the conflict (FlavorImageConflict). "
            f"Fix: remove one of them or make them equal."
        )
    return flavor_value or image_value


def _invalid(what: str, value, valid) -> RequestError:
    return RequestError(
        f"{what} {value!r} is not one Nova accepts ({', '.join(valid)}): Nova refuses the "
        f"server (Invalid). Fix: use one of those."
    )


def _conflict(flavor: Flavor, spec: str, flavor_value, prop: str, image_value) -> RequestError:
    return RequestError(
        f"flavor {flavor.name or flavor.id} has {spec}={flavor_value!r} and the image "
        f"{prop}={image_value!r}: Nova refuses the conflict (FlavorImageConflict). Fix: remove "
        f"one of them or make them agree."
    )


def get_packed_virtqueue_constraint(flavor: Flavor, meta: Mapping) -> bool:
    """Whether hw:virtio_packed_ring / hw_virtio_packed_ring asks for a packed virtqueue (a bool). Raises RequestError
    when flavor and image disagree."""
    flavor_str, image_value = _flavor_image("virtio_packed_ring", flavor, meta)
    flavor_value = None if flavor_str is None else fields.bool_from_string(flavor_str)
    if image_value is not None and flavor_value is not None and image_value != flavor_value:
        raise _conflict(flavor, "hw:virtio_packed_ring", flavor_str, "hw_virtio_packed_ring", image_value)
    return bool(flavor_value or image_value)


def get_ephemeral_encryption_constraint(flavor: Flavor, meta: Mapping) -> bool:
    """Whether hw:ephemeral_encryption / hw_ephemeral_encryption asks for encrypted ephemeral disks (a bool). Raises
    RequestError when flavor and image disagree."""
    flavor_str, image_value = _flavor_image("ephemeral_encryption", flavor, meta)
    flavor_value = None if flavor_str is None else fields.bool_from_string(flavor_str)
    if flavor_value is not None and image_value is not None and flavor_value != image_value:
        raise _conflict(flavor, "hw:ephemeral_encryption", flavor_str, "hw_ephemeral_encryption", image_value)
    return bool(flavor_value or image_value)


def get_ephemeral_encryption_format(flavor: Flavor, meta: Mapping) -> str | None:
    """The ephemeral encryption format from flavor or image (None: not set). Raises RequestError when they differ or the
    format is not one Nova accepts."""
    fmt = _unique("ephemeral_encryption_format", flavor, meta)
    if fmt:
        if fmt not in fields.EPHEMERAL_ENCRYPTION_FORMAT:
            raise _invalid(
                "ephemeral encryption format (hw:ephemeral_encryption_format)", fmt, fields.EPHEMERAL_ENCRYPTION_FORMAT
            )
        return fmt
    return None


def get_sound_model(flavor: Flavor, meta: Mapping) -> str | None:
    """The sound model from flavor or image (None: not set). Raises RequestError when they differ or the model is not
    one Nova accepts."""
    model = _unique("sound_model", flavor, meta)
    if model and model not in fields.SOUND_MODEL:
        raise _invalid("sound model (hw:sound_model)", model, fields.SOUND_MODEL)
    return model


def get_vtpm_constraint(flavor: Flavor, meta: Mapping) -> tuple[str, str] | None:
    """(version, model) of the requested vTPM, or None."""
    version = _unique("tpm_version", flavor, meta)
    if version is None:
        return None
    if version not in fields.TPM_VERSION:
        raise _invalid("TPM version (hw:tpm_version)", version, fields.TPM_VERSION)
    model = _unique("tpm_model", flavor, meta)
    if model is None:
        model = "tpm-tis"
    elif model not in fields.TPM_MODEL:
        raise _invalid("TPM model (hw:tpm_model)", model, fields.TPM_MODEL)
    elif model == "tpm-crb" and version != "2.0":
        raise RequestError(
            "TPM model tpm-crb is only valid with TPM version 2.0: Nova refuses the server "
            "(Invalid). Fix: set hw:tpm_version=2.0 or use tpm-tis."
        )
    return version, model


def get_tpm_secret_security_constraint(flavor: Flavor) -> str | None:
    """The flavor's hw:tpm_secret_security as written (None: not set); the image has no say."""
    return flavor.specs.get("hw:tpm_secret_security")


def get_secure_boot_constraint(flavor: Flavor, meta: Mapping) -> str | None:
    """The secure boot policy from os:secure_boot / os_secure_boot (None: not set). Raises RequestError when they differ
    or the policy is not one Nova accepts."""
    policy = _unique("secure_boot", flavor, meta, prefix="os")
    if policy is None:
        return None
    if policy not in fields.SECURE_BOOT:
        raise _invalid("secure boot policy (os:secure_boot)", policy, fields.SECURE_BOOT)
    return policy


def get_maxphysaddr_mode(flavor: Flavor, meta: Mapping) -> str | None:
    """The maxphysaddr mode from flavor or image (None: not set). Raises RequestError when they differ or the mode is
    not one Nova accepts."""
    mode = _unique("maxphysaddr_mode", flavor, meta)
    if mode is None:
        return None
    if mode not in fields.MAXPHYSADDR_MODE:
        raise _invalid("maxphysaddr mode (hw:maxphysaddr_mode)", mode, fields.MAXPHYSADDR_MODE)
    return mode


def get_stateless_firmware_constraint(meta: Mapping) -> bool | None:
    """The image's hw_firmware_stateless (None: not set, or the firmware is not uefi, which Nova ignores with a
    warning)."""
    if meta.get("hw_firmware_stateless") is None:
        return None
    if meta.get("hw_firmware_type") != "uefi":
        return None  # Nova warns and ignores it
    return meta.get("hw_firmware_stateless", False)


def get_pci_numa_policy_constraint(flavor: Flavor, meta: Mapping) -> str | None:
    """The PCI NUMA affinity policy from flavor or image (None: not set). Raises RequestError when they differ or the
    policy is not one Nova accepts."""
    flavor_policy, image_policy = _flavor_image("pci_numa_affinity_policy", flavor, meta)
    if flavor_policy and image_policy and flavor_policy != image_policy:
        raise _conflict(
            flavor, "hw:pci_numa_affinity_policy", flavor_policy, "hw_pci_numa_affinity_policy", image_policy
        )
    policy = flavor_policy or image_policy
    if policy and policy not in fields.PCI_NUMA_AFFINITY_POLICY:
        raise _invalid(
            "PCI NUMA affinity policy (hw:pci_numa_affinity_policy)", policy, fields.PCI_NUMA_AFFINITY_POLICY
        )
    return policy


def mem_encryption_requested(flavor: Flavor, meta: Mapping) -> bool:
    """Whether hw:mem_encryption / hw_mem_encryption asks for it (get_mem_encryption_constraint's first test)."""
    flavor_str, image_value = _flavor_image("mem_encryption", flavor, meta)
    flavor_value = None if flavor_str is None else fields.bool_from_string(flavor_str)
    return bool(flavor_value or image_value)


def get_vpmems(flavor: Flavor) -> list[str]:
    """The flavor's hw:pmem labels, in order (an empty list: none)."""
    info = flavor.specs.get("hw:pmem")
    if not info:
        return []
    return [label.strip() for label in info.split(",") if label.strip()]


def pmem_resource_class(label: str) -> str:
    """os_resource_classes.normalize_name("PMEM_NAMESPACE_" + label), as _translate_vpmems_request names it."""
    import os_resource_classes as orc

    return orc.normalize_name("PMEM_NAMESPACE_" + label)


def get_cpu_policy_constraint(flavor: Flavor, meta: Mapping) -> str | None:
    """The CPU policy, the flavor's before the image's (None: neither sets a valid one). Raises RequestError when the
    flavor's is not one Nova accepts or the image asks for more pinning than the flavor."""
    flavor_policy, image_policy = _flavor_image("cpu_policy", flavor, meta)
    if flavor_policy and flavor_policy not in fields.CPU_POLICY:
        raise _invalid("CPU policy (flavor extra spec hw:cpu_policy)", flavor_policy, fields.CPU_POLICY)
    forbidden = RequestError(
        f"flavor {flavor.name or flavor.id} has hw:cpu_policy={flavor_policy!r} and the image "
        f"hw_cpu_policy={image_policy!r}: Nova refuses an image asking for more pinning than "
        f"the flavor (ImageCPUPinningForbidden). Fix: remove hw_cpu_policy from the image."
    )
    if flavor_policy == "dedicated":
        return flavor_policy
    if flavor_policy == "mixed":
        if image_policy == "dedicated":
            raise forbidden
        return flavor_policy
    if flavor_policy == "shared":
        if image_policy in ("mixed", "dedicated"):
            raise forbidden
        return flavor_policy
    return image_policy if image_policy in fields.CPU_POLICY else None


def get_cpu_thread_policy_constraint(flavor: Flavor, meta: Mapping) -> str | None:
    """The CPU thread policy, the flavor's unless it is unset or ``prefer`` (None: neither sets one). Raises
    RequestError when the flavor's is not one Nova accepts or the image's differs from a flavor's require/isolate."""
    flavor_policy, image_policy = _flavor_image("cpu_thread_policy", flavor, meta)
    if flavor_policy and flavor_policy not in fields.CPU_THREAD_POLICY:
        raise _invalid(
            "CPU thread policy (flavor extra spec hw:cpu_thread_policy)", flavor_policy, fields.CPU_THREAD_POLICY
        )
    if flavor_policy in (None, "prefer"):
        return flavor_policy or image_policy
    if image_policy and image_policy != flavor_policy:
        raise RequestError(
            f"flavor {flavor.name or flavor.id} has hw:cpu_thread_policy={flavor_policy!r} and the "
            f"image hw_cpu_thread_policy={image_policy!r}: Nova refuses it "
            f"(ImageCPUThreadPolicyForbidden). Fix: remove hw_cpu_thread_policy from the image."
        )
    return flavor_policy


def get_emulator_thread_policy_constraint(flavor: Flavor) -> str | None:
    """The flavor's hw:emulator_threads_policy (None: not set). Raises RequestError when it is not one Nova accepts."""
    policy = flavor.specs.get("hw:emulator_threads_policy")
    if not policy:
        return None
    if policy not in fields.EMULATOR_THREADS_POLICY:
        raise _invalid("emulator threads policy (hw:emulator_threads_policy)", policy, fields.EMULATOR_THREADS_POLICY)
    return policy


def parse_cpu_spec(spec: str) -> set[int]:
    """nova.virt.hardware.parse_cpu_spec: "1-4,^3,6" → {1, 2, 4, 6}."""
    ids: set[int] = set()
    rejected: set[int] = set()

    def bad(kind: str, rule: str) -> RequestError:
        """The RequestError (returned, not raised) for a ``kind`` expression ``rule`` of the mask that does not
        parse."""
        return RequestError(
            f"CPU mask {spec!r}: invalid {kind} expression {rule!r}: Nova refuses it (Invalid). "
            f"Fix: write CPU numbers, ranges A-B and exclusions ^N separated by commas."
        )

    for rule in spec.split(","):
        rule = rule.strip()
        if len(rule) < 1:
            continue
        parts = rule.split("-", 1)
        if len(parts) > 1:
            reject = False
            if parts[0] and parts[0][0] == "^":
                reject = True
                parts[0] = str(parts[0][1:])
            try:
                start, end = [int(p.strip()) for p in parts]
            except ValueError:
                raise bad("range", rule) from None
            if start > end:
                raise bad("range", rule)
            (rejected if reject else ids).update(range(start, end + 1))
        elif rule[0] == "^":
            try:
                rejected.add(int(rule[1:].strip()))
            except ValueError:
                raise bad("exclusion", rule) from None
        else:
            try:
                ids.add(int(rule))
            except ValueError:
                raise bad("inclusion", rule) from None
    return ids - rejected


def get_dedicated_cpu_constraint(flavor: Flavor) -> set[int] | None:
    """The dedicated vCPUs of the flavor's hw:cpu_dedicated_mask as a set of ints (None: no mask). Raises RequestError
    when the mask does not parse or names none, all, or more than the flavor's vCPUs."""
    mask = flavor.specs.get("hw:cpu_dedicated_mask")
    if not mask:
        return None
    if mask.strip().startswith("^"):
        pcpus = parse_cpu_spec(f"0-{flavor.vcpus - 1},{mask}")
    else:
        pcpus = parse_cpu_spec(mask)
    cpus = set(range(flavor.vcpus))
    if not pcpus or not cpus - pcpus or not pcpus.issubset(cpus):
        raise RequestError(
            f"flavor {flavor.name or flavor.id}: hw:cpu_dedicated_mask={mask!r} must name some but "
            f"not all of the flavor's {flavor.vcpus} vCPUs (0-{flavor.vcpus - 1}): Nova refuses it "
            f"(InvalidMixedInstanceDedicatedMask). Fix: correct the mask."
        )
    return pcpus


def get_realtime_cpu_constraint(flavor: Flavor, meta: Mapping) -> set[int] | None:
    """The realtime vCPUs as a set of ints (None: hw:cpu_realtime is not true): the image's mask, else the flavor's,
    else all. Raises RequestError when the mask does not parse, names none or more than the flavor's vCPUs, or all
    without hw:emulator_threads_policy."""
    if not fields.bool_from_string(flavor.specs.get("hw:cpu_realtime")):
        return None
    flavor_mask, image_mask = _flavor_image("cpu_realtime_mask", flavor, meta)
    mask = image_mask or flavor_mask
    vcpus = set(range(flavor.vcpus))
    if mask:
        mask = str(mask)
        rt = parse_cpu_spec(f"0-{flavor.vcpus - 1},{mask}") if mask.strip().startswith("^") else parse_cpu_spec(mask)
    else:
        rt = set(vcpus)
    bad = RequestError(
        f"flavor {flavor.name or flavor.id}: the realtime CPU mask (hw:cpu_realtime_mask / "
        f"hw_cpu_realtime_mask {mask!r}) must name some of the flavor's vCPUs, and not all of them "
        f"without hw:emulator_threads_policy: Nova refuses it (RealtimeMaskNotFoundOrInvalid). "
        f"Fix: correct the mask."
    )
    if not rt:
        raise bad
    if vcpus == rt and not get_emulator_thread_policy_constraint(flavor):
        raise bad
    if not rt.issubset(vcpus):
        raise bad
    return rt
