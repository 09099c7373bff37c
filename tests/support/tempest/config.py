"""Prepare the running mini-cloud for tempest's QoS-placement scenario tests and write their tempest.conf.

    python tests/support/tempest/config.py WORKSPACE      (the cloud: MINICLOUD_STATE, default .state/minicloud)

The cloud must run with Neutron's placement plugin off, both computes in service and Neutron's router plugin
(``MINICLOUD_PLACEMENT_PLUGIN=0 MINICLOUD_COMPUTES=2 MINICLOUD_SPARE_COMPUTE=0 MINICLOUD_L3=1``). Then, in order:

1. each host's OVS agent reads openvswitch_agent.ini beside this file (what tempest's tests allocate: br-test with
   1 Gbit/s each way, 1000 kpps of packet processing without direction for ``qos_min_bw_and_pps``): the fixture
   cloud_tempest starts the cloud with it; a cloud started otherwise gets it written into its inis, its agents
   restarted;
2. minbw's provider sync (``minbw.ops.sync.sync_providers``) reports both hosts' bandwidth and packet-rate
   providers: nothing else does, the placement plugin is off;
3. an image, a flavor, and an external flat network (tempest's scenario helper connects every network it makes to a
   router with a gateway there) are made once;
4. WORKSPACE/etc/tempest.conf is written: admin credentials, those ids, physnet0 and its VLAN base id, both
   computes, every move the fake driver does (cold and live migration, resize).

Prints the tempest.conf path; exits 1 saying what is missing when the cloud is not of that variant.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

from tests.support.minicloud.envfile import read_env

REPO = Path(__file__).resolve().parents[3]
CLOUD_SH = REPO / "tests" / "support" / "minicloud" / "cloud.sh"
PHYSNET = "physnet0"
SEGMENTATION_BASE = 150  # physnet0's VLAN range is 100:200; the pps tests take BASE + 1
OVS_INI = Path(__file__).resolve().parent / "openvswitch_agent.ini"
IMAGE = "tempest-image"
FLAVOR = "tempest-tiny"
FLAVOR_ALT = "tempest-tiny-alt"
PUBLIC_NET = "tempest-public"
VARIANT = {
    "MINICLOUD_PLACEMENT_PLUGIN": "0",
    "MINICLOUD_COMPUTES": "2",
    "MINICLOUD_SPARE_COMPUTE": "0",
    "MINICLOUD_L3": "1",
    "MINICLOUD_OVN": "0",
}


def cloud_env(state: Path) -> dict[str, str]:
    """The running cloud's ``env`` file as a dict; raises SystemExit naming the file when there is none."""
    path = state / "env"
    if not path.is_file():
        raise SystemExit(
            f"no mini-cloud at {state} ({path} missing): start tempest's variant (tests/e2e/conftest.py, cloud_tempest)"
        )
    return read_env(path)


def check_variant(env: dict[str, str]) -> None:
    """Raises SystemExit naming each MINICLOUD_* setting of the running cloud that differs from VARIANT."""
    wrong = [f"{k}={env.get(k)!r} (needs {v})" for k, v in VARIANT.items() if env.get(k, "0") != v]
    if wrong:
        raise SystemExit(
            "the mini-cloud is not tempest's variant: "
            + ", ".join(wrong)
            + "; start the cloud with "
            + " ".join(f"{k}={v}" for k, v in VARIANT.items())
        )


def ovs_ini() -> str:
    """The OVS agent ini each host's emulator reads for tempest (openvswitch_agent.ini beside this file: the default
    cloud's mappings, more bandwidth, packet rate). The fixture cloud_tempest starts the cloud with it already."""
    return OVS_INI.read_text()


def agent_inis(env: dict[str, str]) -> dict[str, tuple[Path, Path]]:
    """host -> (its OVS agent ini, its SR-IOV agent ini), as the running cloud's env names them."""
    return {
        env["MINICLOUD_HYPERVISOR"]: (Path(env["MINICLOUD_OVS_INI"]), Path(env["MINICLOUD_SRIOV_INI"])),
        env["MINICLOUD_HYPERVISOR_1"]: (Path(env["MINICLOUD_OVS_INI_1"]), Path(env["MINICLOUD_SRIOV_INI_1"])),
    }


def configure_agents(env: dict[str, str], inis: dict[str, tuple[Path, Path]]) -> None:
    """Write ovs_ini() for each host whose OVS agent ini differs (a cloud started without it) and restart that host's
    agent emulators; nothing when each host reads it already."""
    for host, (ovs, _sriov) in inis.items():
        if ovs.is_file() and ovs.read_text() == ovs_ini():
            continue
        ovs.write_text(ovs_ini())
        subprocess.run(
            ["bash", str(CLOUD_SH), "restart-agents", host],
            env=dict(os.environ, **env),
            check=True,
            stdout=subprocess.DEVNULL,
        )


def sync(conn, inis: dict[str, tuple[Path, Path]]) -> int:
    """minbw's provider sync of every host's agents; returns the number of Placement writes it made."""
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops.sync import sync_providers
    from minbw.placement.client import Placement

    agents = [load_agent_ini(p.read_text(), source=str(p), host=host) for host, pair in inis.items() for p in pair]
    _plan, applied = sync_providers(Placement(conn), desired_state(agents))
    return applied.writes if applied is not None else 0  # None: nothing to write


def resources(conn) -> dict[str, str]:
    """The image, the two flavors and the external network tempest.conf names (made when missing): name -> id."""
    image = conn.image.find_image(IMAGE) or conn.image.create_image(
        name=IMAGE, data=b"tempest image\n", disk_format="raw", container_format="bare", visibility="public", wait=True
    )
    flavor = conn.compute.find_flavor(FLAVOR) or conn.compute.create_flavor(name=FLAVOR, ram=256, vcpus=1, disk=1)
    alt = conn.compute.find_flavor(FLAVOR_ALT) or conn.compute.create_flavor(name=FLAVOR_ALT, ram=256, vcpus=1, disk=2)
    public = conn.network.find_network(PUBLIC_NET)
    if public is None:
        public = conn.network.create_network(
            name=PUBLIC_NET, is_router_external=True, provider_network_type="flat", provider_physical_network="public"
        )
        conn.network.create_subnet(
            name=PUBLIC_NET, network_id=public.id, ip_version=4, cidr="172.24.4.0/24", enable_dhcp=False
        )
    return {"image": image.id, "flavor": flavor.id, "flavor_alt": alt.id, "public_network": public.id}


def tempest_conf(env: dict[str, str], ids: dict[str, str], workspace: Path) -> str:
    """tempest.conf's text for this cloud (admin from its clouds.yaml's password)."""
    password = re.search(r"password: (\S+)", Path(env["OS_CLIENT_CONFIG_FILE"]).read_text()).group(1)
    keystone = env["MINICLOUD_KEYSTONE_URL"]
    return f"""[DEFAULT]
log_dir = {workspace}/logs
log_file = tempest.log
debug = false

[auth]
admin_username = admin
admin_password = {password}
admin_project_name = admin
admin_domain_name = Default
use_dynamic_credentials = true
# tempest's own per-project network needs a router with a gateway for every project: the tests make their own
create_isolated_networks = false

[identity]
uri_v3 = {keystone}
auth_version = v3
region = RegionOne
disable_ssl_certificate_validation = true

[identity-feature-enabled]
api_v2 = false

[compute]
image_ref = {ids["image"]}
image_ref_alt = {ids["image"]}
flavor_ref = {ids["flavor"]}
flavor_ref_alt = {ids["flavor_alt"]}
min_compute_nodes = 2
max_microversion = latest
build_timeout = 120
build_interval = 1

[compute-feature-enabled]
cold_migration = true
live_migration = true
block_migration_for_live_migration = true
resize = true
console_output = false
vnc_console = false
serial_console = false
spice_console = false
interface_attach = true

[network]
public_network_id = {ids["public_network"]}
floating_network_name = {PUBLIC_NET}
project_networks_reachable = false
build_timeout = 120
build_interval = 1

[network-feature-enabled]
api_extensions = all
available_features = all
qos_placement_physnet = {PHYSNET}
provider_net_base_segmentation_id = {SEGMENTATION_BASE}
qos_min_bw_and_pps = true
port_security = true

[placement]
min_microversion = 1.0
max_microversion = latest

[image]
image_path =

[validation]
run_validation = false

[service_available]
nova = true
neutron = true
glance = true
cinder = false
swift = false
horizon = false
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    workspace = Path(argv[0]).resolve()
    state = Path(os.environ.get("MINICLOUD_STATE") or REPO / ".state" / "minicloud")
    env = cloud_env(state)
    check_variant(env)
    import openstack.config
    import openstack.connection

    warnings.filterwarnings("ignore")
    cfg = openstack.config.OpenStackConfig(config_files=[env["OS_CLIENT_CONFIG_FILE"]])
    conn = openstack.connection.Connection(config=cfg.get_one(cloud="minicloud"))
    inis = agent_inis(env)
    configure_agents(env, inis)
    writes = sync(conn, inis)
    ids = resources(conn)
    (workspace / "etc").mkdir(parents=True, exist_ok=True)
    (workspace / "logs").mkdir(parents=True, exist_ok=True)
    conf = workspace / "etc" / "tempest.conf"
    conf.write_text(tempest_conf(env, ids, workspace))
    sys.stderr.write(f"minbw provider sync: {writes} Placement writes\n")
    print(conf)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
