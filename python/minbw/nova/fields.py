"""Nova's vocabulary, as the request filters and ``ResourceRequest`` read it: the valid values of the image
properties and flavor extra specs they look at, the traits they add, and oslo's boolean parsing.

Values copied from nova 34 (``nova/objects/fields.py``, ``nova/virt/hardware.py``) and os-traits 3.9;
tests/unit/nova/test_scheduler.py compares them with Nova's and os-traits' own. Pure: the standard library and
minbw.model only.
"""

from __future__ import annotations

from minbw.model.providers import COMPUTE_NODE, OWNER_NOVA  # noqa: F401 - the traits on every compute node root  # pylint: disable=unused-import

# nova/objects/fields.py: the enums the image properties below are typed with (ImageMetaProps refuses
# any other value) and the flavor extra specs are checked against (nova/virt/hardware.py)
DISK_BUS = ("fdc", "ide", "sata", "scsi", "usb", "virtio", "xen", "lxc", "uml")
VIDEO_MODEL = ("cirrus", "qxl", "vga", "vmvga", "xen", "virtio", "gop", "none", "bochs")
VIF_MODEL = (
    "virtio",
    "ne2k_pci",
    "pcnet",
    "rtl8139",
    "e1000",
    "e1000e",
    "netfront",
    "spapr-vlan",
    "lan9118",
    "sriov",
    "vmxnet",
    "vmxnet3",
    "igb",
)
ARCHITECTURE = (
    "alpha",
    "armv6",
    "armv7l",
    "armv7b",
    "aarch64",
    "cris",
    "i686",
    "ia64",
    "lm32",
    "m68k",
    "microblaze",
    "microblazeel",
    "mips",
    "mipsel",
    "mips64",
    "mips64el",
    "openrisc",
    "parisc",
    "parisc64",
    "ppc",
    "ppcle",
    "ppc64",
    "ppc64le",
    "ppcemb",
    "s390",
    "s390x",
    "sh4",
    "sh4eb",
    "sparc",
    "sparc64",
    "unicore32",
    "x86_64",
    "xtensa",
    "xtensaeb",
)
VIOMMU_MODEL = ("intel", "smmuv3", "virtio", "auto")
SOUND_MODEL = ("sb16", "es1370", "pcspk", "ac97", "ich6", "ich9", "usb", "virtio")
TPM_VERSION = ("1.2", "2.0")
TPM_MODEL = ("tpm-tis", "tpm-crb")
EPHEMERAL_ENCRYPTION_FORMAT = ("plain", "luks", "luksv2")  # BlockDeviceEncryptionFormatType
SECURE_BOOT = ("required", "disabled", "optional")
MAXPHYSADDR_MODE = ("passthrough", "emulate")
PCI_NUMA_AFFINITY_POLICY = ("required", "legacy", "preferred", "socket")
CPU_POLICY = ("dedicated", "shared", "mixed")
CPU_THREAD_POLICY = ("prefer", "isolate", "require")
EMULATOR_THREADS_POLICY = ("share", "isolate")
FIRMWARE_TYPE = ("uefi", "bios")

# The image properties that ImageMetaProps types with one of the enums above (or as a boolean): the ones
# the request filters and ResourceRequest read. Nova refuses an image whose value is not one of them.
ENUM_PROPERTIES = {
    "hw_cdrom_bus": DISK_BUS,
    "hw_disk_bus": DISK_BUS,
    "hw_video_model": VIDEO_MODEL,
    "hw_vif_model": VIF_MODEL,
    "hw_viommu_model": VIOMMU_MODEL,
    "hw_sound_model": SOUND_MODEL,
    "hw_tpm_version": TPM_VERSION,
    "hw_tpm_model": TPM_MODEL,
    "hw_ephemeral_encryption_format": EPHEMERAL_ENCRYPTION_FORMAT,
    "os_secure_boot": SECURE_BOOT,
    "hw_maxphysaddr_mode": MAXPHYSADDR_MODE,
    "hw_firmware_type": FIRMWARE_TYPE,
    "hw_pci_numa_affinity_policy": PCI_NUMA_AFFINITY_POLICY,
    "hw_cpu_policy": CPU_POLICY,
    "hw_cpu_thread_policy": CPU_THREAD_POLICY,
}
ARCH_PROPERTIES = ("hw_architecture", "hw_emulation_architecture")  # ArchitectureField: canonicalized
BOOL_PROPERTIES = (
    "hw_virtio_packed_ring",
    "hw_ephemeral_encryption",
    "hw_firmware_stateless",
    "hw_mem_encryption",
)  # FlexibleBooleanField
# ImageMetaProps._legacy_property_map, the entries for properties read here (the current name wins)
LEGACY_PROPERTIES = {"architecture": "hw_architecture"}

# os-traits 3.9: the traits of the families request_filter.py computes a name in (it adds the trait only
# when os_traits has the name: ``hasattr(os_traits, name)``)
COMPUTED_TRAITS = frozenset(
    {
        "COMPUTE_STORAGE_BUS_FDC",
        "COMPUTE_STORAGE_BUS_IDE",
        "COMPUTE_STORAGE_BUS_LXC",
        "COMPUTE_STORAGE_BUS_SATA",
        "COMPUTE_STORAGE_BUS_SCSI",
        "COMPUTE_STORAGE_BUS_UML",
        "COMPUTE_STORAGE_BUS_USB",
        "COMPUTE_STORAGE_BUS_VIRTIO",
        "COMPUTE_STORAGE_BUS_XEN",
        "COMPUTE_GRAPHICS_MODEL_BOCHS",
        "COMPUTE_GRAPHICS_MODEL_CIRRUS",
        "COMPUTE_GRAPHICS_MODEL_GOP",
        "COMPUTE_GRAPHICS_MODEL_NONE",
        "COMPUTE_GRAPHICS_MODEL_QXL",
        "COMPUTE_GRAPHICS_MODEL_VGA",
        "COMPUTE_GRAPHICS_MODEL_VIRTIO",
        "COMPUTE_GRAPHICS_MODEL_VMVGA",
        "COMPUTE_GRAPHICS_MODEL_XEN",
        "COMPUTE_NET_VIF_MODEL_E1000",
        "COMPUTE_NET_VIF_MODEL_E1000E",
        "COMPUTE_NET_VIF_MODEL_IGB",
        "COMPUTE_NET_VIF_MODEL_LAN9118",
        "COMPUTE_NET_VIF_MODEL_NE2K_PCI",
        "COMPUTE_NET_VIF_MODEL_NETFRONT",
        "COMPUTE_NET_VIF_MODEL_PCNET",
        "COMPUTE_NET_VIF_MODEL_RTL8139",
        "COMPUTE_NET_VIF_MODEL_SPAPR_VLAN",
        "COMPUTE_NET_VIF_MODEL_SRIOV",
        "COMPUTE_NET_VIF_MODEL_VIRTIO",
        "COMPUTE_NET_VIF_MODEL_VMXNET",
        "COMPUTE_NET_VIF_MODEL_VMXNET3",
        "HW_ARCH_AARCH64",
        "HW_ARCH_ALPHA",
        "HW_ARCH_ARMV6",
        "HW_ARCH_ARMV7",
        "HW_ARCH_ARMV7B",
        "HW_ARCH_CRIS",
        "HW_ARCH_I686",
        "HW_ARCH_IA64",
        "HW_ARCH_LM32",
        "HW_ARCH_M68K",
        "HW_ARCH_MICROBLAZE",
        "HW_ARCH_MICROBLAZEEL",
        "HW_ARCH_MIPS",
        "HW_ARCH_MIPS64",
        "HW_ARCH_MIPS64EL",
        "HW_ARCH_MIPSEL",
        "HW_ARCH_OPENRISC",
        "HW_ARCH_PARISC",
        "HW_ARCH_PARISC64",
        "HW_ARCH_PPC",
        "HW_ARCH_PPC64",
        "HW_ARCH_PPC64LE",
        "HW_ARCH_PPCEMB",
        "HW_ARCH_PPCLE",
        "HW_ARCH_S390",
        "HW_ARCH_S390X",
        "HW_ARCH_SH4",
        "HW_ARCH_SH4EB",
        "HW_ARCH_SPARC",
        "HW_ARCH_SPARC64",
        "HW_ARCH_UNICORE32",
        "HW_ARCH_X86_64",
        "HW_ARCH_XTENSA",
        "HW_ARCH_XTENSAEB",
        "COMPUTE_ARCH_AARCH64",
        "COMPUTE_ARCH_MIPSEL",
        "COMPUTE_ARCH_PPC64LE",
        "COMPUTE_ARCH_RISCV64",
        "COMPUTE_ARCH_S390X",
        "COMPUTE_ARCH_X86_64",
        "COMPUTE_VIOMMU_MODEL_AUTO",
        "COMPUTE_VIOMMU_MODEL_INTEL",
        "COMPUTE_VIOMMU_MODEL_SMMUV3",
        "COMPUTE_VIOMMU_MODEL_VIRTIO",
        "COMPUTE_IMAGE_TYPE_AKI",
        "COMPUTE_IMAGE_TYPE_AMI",
        "COMPUTE_IMAGE_TYPE_ARI",
        "COMPUTE_IMAGE_TYPE_ISO",
        "COMPUTE_IMAGE_TYPE_PLOOP",
        "COMPUTE_IMAGE_TYPE_QCOW2",
        "COMPUTE_IMAGE_TYPE_RAW",
        "COMPUTE_IMAGE_TYPE_VDI",
        "COMPUTE_IMAGE_TYPE_VHD",
        "COMPUTE_IMAGE_TYPE_VHDX",
        "COMPUTE_IMAGE_TYPE_VMDK",
    }
)
# the prefixes of the families above (the test compares each family with os_traits.get_traits(prefix))
COMPUTED_TRAIT_PREFIXES = (
    "COMPUTE_STORAGE_BUS_",
    "COMPUTE_GRAPHICS_MODEL_",
    "COMPUTE_NET_VIF_MODEL_",
    "HW_ARCH_",
    "COMPUTE_ARCH_",
    "COMPUTE_VIOMMU_",
    "COMPUTE_IMAGE_TYPE_",
)

# the traits the filters and ResourceRequest add by name (os_traits constants)
COMPUTE_STATUS_DISABLED = "COMPUTE_STATUS_DISABLED"
COMPUTE_ACCELERATORS = "COMPUTE_ACCELERATORS"
COMPUTE_NET_VIRTIO_PACKED = "COMPUTE_NET_VIRTIO_PACKED"
COMPUTE_REMOTE_MANAGED_PORTS = "COMPUTE_REMOTE_MANAGED_PORTS"
COMPUTE_EPHEMERAL_ENCRYPTION = "COMPUTE_EPHEMERAL_ENCRYPTION"
COMPUTE_SOUND_MODEL_VIRTIO = "COMPUTE_SOUND_MODEL_VIRTIO"
TPM_SECRET_SECURITY = {
    "user": "COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER",
    "host": "COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST",
    "deployment": "COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT",
}
COMPUTE_SECURITY_TPM_TIS = "COMPUTE_SECURITY_TPM_TIS"
COMPUTE_SECURITY_TPM_CRB = "COMPUTE_SECURITY_TPM_CRB"
COMPUTE_SECURITY_TPM_1_2 = "COMPUTE_SECURITY_TPM_1_2"
COMPUTE_SECURITY_TPM_2_0 = "COMPUTE_SECURITY_TPM_2_0"
COMPUTE_SECURITY_UEFI_SECURE_BOOT = "COMPUTE_SECURITY_UEFI_SECURE_BOOT"
COMPUTE_ADDRESS_SPACE_PASSTHROUGH = "COMPUTE_ADDRESS_SPACE_PASSTHROUGH"
COMPUTE_ADDRESS_SPACE_EMULATED = "COMPUTE_ADDRESS_SPACE_EMULATED"
COMPUTE_SECURITY_STATELESS_FIRMWARE = "COMPUTE_SECURITY_STATELESS_FIRMWARE"
COMPUTE_SOCKET_PCI_NUMA_AFFINITY = "COMPUTE_SOCKET_PCI_NUMA_AFFINITY"
HW_CPU_HYPERTHREADING = "HW_CPU_HYPERTHREADING"
NAMED_TRAITS = frozenset(
    {
        COMPUTE_STATUS_DISABLED,
        OWNER_NOVA,
        COMPUTE_ACCELERATORS,
        COMPUTE_NET_VIRTIO_PACKED,
        COMPUTE_REMOTE_MANAGED_PORTS,
        COMPUTE_EPHEMERAL_ENCRYPTION,
        COMPUTE_SOUND_MODEL_VIRTIO,
        *TPM_SECRET_SECURITY.values(),
        COMPUTE_SECURITY_TPM_TIS,
        COMPUTE_SECURITY_TPM_CRB,
        COMPUTE_SECURITY_TPM_1_2,
        COMPUTE_SECURITY_TPM_2_0,
        COMPUTE_SECURITY_UEFI_SECURE_BOOT,
        COMPUTE_ADDRESS_SPACE_PASSTHROUGH,
        COMPUTE_ADDRESS_SPACE_EMULATED,
        COMPUTE_SECURITY_STATELESS_FIRMWARE,
        COMPUTE_SOCKET_PCI_NUMA_AFFINITY,
        HW_CPU_HYPERTHREADING,
        *(f"COMPUTE_EPHEMERAL_ENCRYPTION_{f.upper()}" for f in EPHEMERAL_ENCRYPTION_FORMAT),
    }
)

# nova/network/model.py
VNIC_TYPES = (
    "normal",
    "direct",
    "macvtap",
    "direct-physical",
    "baremetal",
    "virtio-forwarder",
    "vdpa",
    "accelerator-direct",
    "accelerator-direct-physical",
    "remote-managed",
)
VNIC_TYPE_REMOTE_MANAGED = "remote-managed"
VNIC_TYPES_ACCELERATOR = ("accelerator-direct", "accelerator-direct-physical")

# oslo_utils.strutils
TRUE_STRINGS = ("1", "t", "true", "on", "y", "yes")
FALSE_STRINGS = ("0", "f", "false", "off", "n", "no")


def bool_from_string(subject, default: bool = False) -> bool:
    """oslo_utils.strutils.bool_from_string (strict=False): what Nova makes of a boolean extra spec or image
    property; anything unrecognised is ``default``."""
    if isinstance(subject, bool):
        return subject
    lowered = str(subject).strip().lower()
    if lowered in TRUE_STRINGS:
        return True
    if lowered in FALSE_STRINGS:
        return False
    return default


def canonical_architecture(name: object) -> str | None:
    """nova.objects.fields.Architecture.canonicalize; None when Nova refuses the name."""
    new = str(name).lower()
    if new in ("i386", "i486", "i586", "x86_32", "x86_32p"):
        new = "i686"
    if new == "amd64":
        new = "x86_64"
    return new if new in ARCHITECTURE else None
