"""The end-to-end suite's mini-cloud: real Keystone, Placement, Neutron, Nova and Glance (tests/support/minicloud).

One cloud runs at a time (fixed ports). The suite cold-starts it once, as configured by default (Neutron's
placement plugin on); the tests that use ``cloud_plugin_off`` (plugin off, nova-compute reporting SR-IOV PFs) run
last, on the same MariaDB and RabbitMQ: ``cloud.sh up`` with that mode is a warm start (services restarted, databases
restored from the snapshot the cold start took; tests/support/minicloud/README.md). A cloud that cannot start fails the
tests with cloud.sh's output (which carries the failing service's log); nothing is skipped. A module never starts a
cloud of its own (tests/unit/test_shared_fixtures.py): a new variant is a fixture here.

The default cloud has two computes, devstack0 and devstack1, but devstack1 starts as a spare (nova-compute up,
mapped and disabled, no agents, so no bandwidth): the single-host tests see one host with bandwidth, as they were
written for. ``cloud_two_hosts`` brings devstack1 into service (``cloud.sh activate-spare``) for the tests of
moves between hosts; those run after the single-host tests and before the plugin-off ones, on the same cloud.
``cloud_three_hosts`` (devstack0, devstack1, devstack2, all in service, nova-compute with SR-IOV PFs, packet rate on
each OVS agent: a drain with a choice of destinations) is a warm start of its own, after the two-host tests.

The ML2/OVN variant (``cloud_ovn_plugin_off``, then ``cloud_ovn``: tests/support/minicloud/ovn.sh) is one more cold
start, last: two computes with ovn-controller each, Neutron's placement plugin off first, then turned on by
restarting neutron-server only (``cloud.sh neutron-placement 1``), not by a new cloud.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from tests.support.minicloud.envfile import read_env
from tests.support.playbook_runner import Run, run_playbook

REPO = Path(__file__).resolve().parents[2]
CLOUD_SH = REPO / "tests" / "support" / "minicloud" / "cloud.sh"
# cloud.sh's state (MINICLOUD_STATE: another lane's cloud, tests/support/run_suites.py)
STATE = Path(os.environ.get("MINICLOUD_STATE") or REPO / ".state" / "minicloud")
HYPERVISOR = "devstack0"
PLUGIN_OFF = "cloud_plugin_off"
TWO_HOSTS = "cloud_two_hosts"
THREE_HOSTS = "cloud_three_hosts"
TEMPEST = "cloud_tempest"
OVN_OFF = "cloud_ovn_plugin_off"
OVN_ON = "cloud_ovn"


def pytest_collection_modifyitems(items):
    # the second cold start happens once, after every test of the default cloud; on the default cloud, the
    # tests that bring the spare devstack1 into service come after the single-host ones; tempest's variant (a warm
    # start: both computes, placement plugin off, router plugin) after those, then the three-host cloud (a warm
    # start), before the plugin-off one
    def order(item):
        names = getattr(item, "fixturenames", ())
        ovn = OVN_OFF in names or OVN_ON in names
        return ovn, PLUGIN_OFF in names, THREE_HOSTS in names, TEMPEST in names, TWO_HOSTS in names, OVN_ON in names
    items.sort(key=order)
    here = Path(__file__).resolve().parent
    for item in items:  # this hook sees the whole session's items: mark only the e2e ones
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.cloud)


class MiniCloud:
    """The running mini-cloud: its environment, connections, and the ini files its agent emulators read."""

    def __init__(self, mode: dict):
        self.mode = mode
        self.env = {**os.environ, **mode, **read_env(STATE / "env")}  # the file's values over the mode's
        self.ovs_ini = Path(self.env["MINICLOUD_OVS_INI"])
        self.sriov_ini = Path(self.env["MINICLOUD_SRIOV_INI"])
        self.spare_active = False

    def cloud_sh(self, *args: str, timeout: int = 300) -> str:
        """Run ``cloud.sh ARGS`` against this cloud; fail the test with its output when it fails."""
        proc = subprocess.run(["bash", str(CLOUD_SH), *args], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        if proc.returncode != 0:
            pytest.fail(f"cloud.sh {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n"
                        f"{proc.stderr[-8000:]}", pytrace=False)
        return proc.stdout + proc.stderr

    def connect(self, options: dict | None = None, **auth):
        """The admin's connection, or with ``auth`` another user's; ``options``: more Connection settings
        for that user (e.g. ``network_endpoint_override``)."""
        import openstack
        from openstack import connection
        warnings.filterwarnings("ignore")
        if auth:  # another user of the same cloud (e.g. a service user)
            return connection.Connection(auth=dict(auth_url=self.env["MINICLOUD_KEYSTONE_URL"], user_domain_name="Default",
                                                   project_domain_name="Default", **auth),
                                         auth_type="password", region_name="RegionOne", **(options or {}))
        import openstack.config
        cfg = openstack.config.OpenStackConfig(config_files=[self.env["OS_CLIENT_CONFIG_FILE"]])
        return openstack.connection.Connection(config=cfg.get_one(cloud="minicloud"))


class CloudManager:
    def __init__(self):
        self.current: MiniCloud | None = None
        self.timings: dict[str, float] = {}

    def ensure(self, *, two_hosts: bool = False, before_spare=None, **mode) -> MiniCloud:
        """The cloud of ``mode``; ``two_hosts``: with devstack1 in service. ``before_spare(cloud)``: called just
        before devstack1 comes into service here (e.g. to write its agents' ini, read when they first start)."""
        mode = {"MINICLOUD_PLACEMENT_PLUGIN": "1", "MINICLOUD_SRIOV_COMPUTE": "0", "MINICLOUD_COMPUTES": "2",
                "MINICLOUD_SPARE_COMPUTE": "1", **mode}
        if self.current is None and os.environ.get("MINICLOUD_REUSE") == "1" and (STATE / "env").exists():
            # a developer's running cloud (`cloud.sh up`, with the same mode): adopted, never stopped
            self.current = MiniCloud(mode)
            self.current.spare_active = os.environ.get("MINICLOUD_REUSE_SPARE") == "active"
            self.reused = True
        current = self.current
        if current is not None and _only_the_plugin_differs(current.mode, mode):
            # the OVN variant turns Neutron's placement plugin on or off by restarting neutron-server alone
            t = time.monotonic()
            current.cloud_sh("neutron-placement", mode["MINICLOUD_PLACEMENT_PLUGIN"])
            self.timings[f"neutron-placement {mode['MINICLOUD_PLACEMENT_PLUGIN']}"] = time.monotonic() - t
            current.mode = mode
            current.env.update(mode)
            return current
        # a spare brought into service cannot be taken out again (Neutron keeps its providers): single-host
        # tests after it would need a new cloud (the test order avoids that)
        if current is not None and current.mode == mode and (two_hosts or not current.spare_active):
            if two_hosts and not current.spare_active:
                if before_spare is not None:
                    before_spare(current)
                t = time.monotonic()
                current.cloud_sh("activate-spare")
                self.timings["activate-spare"] = time.monotonic() - t
                current.spare_active = True
            return current
        # another variant: `cloud.sh up` again, which stops the running cloud's services and, its MariaDB and
        # RabbitMQ still running, restores the databases from the snapshot the first start took (a warm start)
        t = time.monotonic()
        proc = subprocess.run(["bash", str(CLOUD_SH), "up"], cwd=REPO, env=dict(os.environ, **mode),
                              capture_output=True, text=True, timeout=900, check=False)
        kind = "warm" if "warm start:" in proc.stderr else "cold"
        self.timings[f"up ({kind}) " + ",".join(f"{k}={v}" for k, v in mode.items())] = time.monotonic() - t
        if proc.returncode != 0:
            subprocess.run(["bash", str(CLOUD_SH), "down"], cwd=REPO, capture_output=True, check=False)
            pytest.fail(f"the mini-cloud did not start (cloud.sh up exit {proc.returncode}):\n"
                        f"{proc.stdout[-4000:]}\n{proc.stderr[-12000:]}", pytrace=False)
        self.current = MiniCloud(mode)
        return self.ensure(two_hosts=two_hosts, before_spare=before_spare, **mode) if two_hosts else self.current

    def down(self) -> None:
        if self.current is not None and not getattr(self, "reused", False):
            subprocess.run(["bash", str(CLOUD_SH), "down"], cwd=REPO, capture_output=True, check=False, timeout=300)
            self.current = None


def _only_the_plugin_differs(running: dict, wanted: dict) -> bool:
    plugin = "MINICLOUD_PLACEMENT_PLUGIN"
    return (running.get("MINICLOUD_OVN") == wanted.get("MINICLOUD_OVN") == "1" and running != wanted
            and {k: v for k, v in running.items() if k != plugin} == {k: v for k, v in wanted.items() if k != plugin})


@pytest.fixture(scope="session")
def cloud_manager():
    manager = CloudManager()
    yield manager
    manager.down()
    sys.stderr.write(f"\nmini-cloud starts: {json.dumps({k: round(v, 1) for k, v in manager.timings.items()})}\n")


@pytest.fixture(scope="session")
def installed_collection(tmp_path_factory) -> Path:
    """The collection built from this tree into a private path, out of reach of concurrent re-installs."""
    dest = tmp_path_factory.mktemp("collections")
    subprocess.run(["bash", str(REPO / "tests" / "support" / "ansible" / "install_collection.sh"), str(dest)], check=True,
                   capture_output=True)
    return dest


@pytest.fixture
def cloud(cloud_manager) -> MiniCloud:
    """The default mini-cloud: Neutron's placement plugin reports the bandwidth providers."""
    return cloud_manager.ensure()


@pytest.fixture
def cloud_two_hosts(cloud_manager) -> MiniCloud:
    """The default mini-cloud with devstack1 in service too: two computes with the same bandwidth, for moves."""
    return cloud_manager.ensure(two_hosts=True)


# the three-host cloud's OVS agents: br-test's bandwidth per host (each destination half of devstack0's) and packet
# rate (any direction)
THREE_HOSTS_BR_TEST = {"devstack0": 1500, "devstack1": 750, "devstack2": 750}
THREE_HOSTS_KPPS = 1000


def three_hosts_ovs_inis() -> dict[str, str]:
    """The three-host cloud's OVS agent inis written beside its state (``up`` wipes the state dir, not these), as
    the cloud's mode: MINICLOUD_OVS_INI, MINICLOUD_OVS_INI_1, MINICLOUD_OVS_INI_2."""
    mode = {}
    for n, (host, kbps) in enumerate(THREE_HOSTS_BR_TEST.items()):
        ini = STATE.parent / f"{STATE.name}-three-hosts" / host / "openvswitch_agent.ini"
        ini.parent.mkdir(parents=True, exist_ok=True)
        ini.write_text(f"[ovs]\nbridge_mappings = physnet0:br-test,public:br-ex\n"
                       f"resource_provider_bandwidths = br-test:{kbps}:{kbps},br-ex::1\n"
                       f"resource_provider_packet_processing_without_direction = :{THREE_HOSTS_KPPS}\n"
                       "[agent]\nextensions = qos\n[securitygroup]\nfirewall_driver = noop\n")
        mode["MINICLOUD_OVS_INI" + (f"_{n}" if n else "")] = str(ini)
    return mode


@pytest.fixture
def cloud_three_hosts(cloud_manager) -> MiniCloud:
    """Three computes in service, devstack0, devstack1 and devstack2 (a drain has a choice of destinations):
    nova-compute with SR-IOV PFs (one VF on <host>-ens1, physnet0), each OVS agent with br-test
    (THREE_HOSTS_BR_TEST kbps each way) and THREE_HOSTS_KPPS kpps of packet rate in any direction."""
    return cloud_manager.ensure(MINICLOUD_SRIOV_COMPUTE="1", MINICLOUD_COMPUTES="3", MINICLOUD_SPARE_COMPUTE="0",
                                **three_hosts_ovs_inis())


@pytest.fixture
def cloud_plugin_off(cloud_manager) -> MiniCloud:
    """Neutron's placement plugin off (nothing reports bandwidth providers), nova-compute with SR-IOV PFs (one
    compute, as before the second one existed). devstack0's OVS agent is the real neutron-openvswitch-agent on an
    Open vSwitch of its own, and nova-compute plugs the VIFs through os-vif (tests/support/minicloud/ovs_agent.sh;
    ``MINICLOUD_OVS_DB`` and ``MINICLOUD_OVS_NETNS`` in the cloud's env: its database and network namespace)."""
    return cloud_manager.ensure(MINICLOUD_PLACEMENT_PLUGIN="0", MINICLOUD_SRIOV_COMPUTE="1", MINICLOUD_COMPUTES="1",
                                MINICLOUD_SPARE_COMPUTE="0", MINICLOUD_REAL_OVS_AGENT=HYPERVISOR)


@pytest.fixture
def cloud_tempest(cloud_manager) -> MiniCloud:
    """tempest's QoS-placement scenario tests' cloud (tests/support/tempest): Neutron's placement plugin off (minbw's
    sync reports the providers), devstack0 and devstack1 both in service from the start, their OVS agents with the
    bandwidth and packet rate tempest's tests allocate, and Neutron's router plugin (tempest connects each network
    it makes to a router)."""
    ini = str(REPO / "tests" / "support" / "tempest" / "openvswitch_agent.ini")  # more bandwidth, packet rate
    return cloud_manager.ensure(MINICLOUD_PLACEMENT_PLUGIN="0", MINICLOUD_SPARE_COMPUTE="0", MINICLOUD_L3="1",
                                MINICLOUD_OVS_INI=ini, MINICLOUD_OVS_INI_1=ini)


OVN_MODE = dict(MINICLOUD_OVN="1", MINICLOUD_SRIOV_COMPUTE="0", MINICLOUD_COMPUTES="2", MINICLOUD_SPARE_COMPUTE="0")


@pytest.fixture
def cloud_ovn_plugin_off(cloud_manager) -> MiniCloud:
    """ML2/OVN with two computes (devstack0, devstack1: ovn-controller each, bandwidth in their chassis
    options), Neutron's placement plugin off: nothing reports the bandwidth providers."""
    return cloud_manager.ensure(MINICLOUD_PLACEMENT_PLUGIN="0", **OVN_MODE)


@pytest.fixture
def cloud_ovn(cloud_manager) -> MiniCloud:
    """ML2/OVN with Neutron's placement plugin on: its OVN extension reports the chassis options."""
    return cloud_manager.ensure(MINICLOUD_PLACEMENT_PLUGIN="1", **OVN_MODE)


class Demo:
    """Seed 003's fixtures in a cloud (network, subnet, flavor, image), and clean-up of what tests make."""

    def __init__(self, conn):
        self.conn = conn
        self.servers: list = []
        self.ports: list = []
        self.policies: list = []
        self.networks: list = []
        net = conn.network.find_network("e2e-net0")
        if net is None:
            net = conn.network.create_network(name="e2e-net0", provider_network_type="vlan",
                                              provider_physical_network="physnet0", provider_segmentation_id=101)
            conn.network.create_subnet(name="e2e-subnet0", network_id=net.id, ip_version=4, cidr="10.0.5.0/24")
        self.net = net
        self.flavor = conn.compute.find_flavor("e2e-tiny") or conn.compute.create_flavor(
            name="e2e-tiny", ram=256, vcpus=1, disk=1)
        self.image = conn.image.find_image("e2e-image") or conn.image.create_image(
            name="e2e-image", data=b"e2e image\n", disk_format="raw", container_format="bare", wait=True)

    def policy(self, name, bw=(), pps=()):
        """A policy with minimum_bandwidth rules ``bw`` and minimum_packet_rate rules ``pps`` ((direction, value))."""
        pol = self.conn.network.create_qos_policy(name=name)
        self.policies.append(pol)
        for direction, kbps in bw:
            self.conn.network.create_qos_minimum_bandwidth_rule(pol, min_kbps=kbps, direction=direction)
        for direction, kpps in pps:
            self.conn.network.create_qos_minimum_packet_rate_rule(pol, min_kpps=kpps, direction=direction)
        return self.conn.network.get_qos_policy(pol.id)

    def port(self, name, policy=None, vnic_type="normal", network=None):
        port = self.conn.network.create_port(name=name, network_id=(network or self.net).id,
                                             qos_policy_id=policy.id if policy else None, binding_vnic_type=vnic_type)
        self.ports.append(port)
        return port

    def boot(self, name, ports, wait=True, host=None, availability_zone=None):
        """``host``: the compute host to boot on (compute API 2.74+, still checked by the scheduler)."""
        extra = {"host": host} if host else {}
        if availability_zone:
            extra["availability_zone"] = availability_zone
        server = self.conn.compute.create_server(name=name, flavor_id=self.flavor.id, image_id=self.image.id,
                                                 networks=[{"port": p.id} for p in ports], **extra)
        self.servers.append(server)
        if wait:
            return self.wait_active(server)  # the server as its last poll read it (GET /servers/ID): in full
        return self.conn.compute.get_server(server.id)

    def wait_active(self, server):
        """The server once ACTIVE (polled every 0.5 s, openstacksdk's 2 s: a boot takes 3-7 s); a server that goes
        to ERROR fails the test with Nova's fault and the Nova log lines that name the instance, which say why
        (a reschedule, a binding that failed, no valid host), as the test's output would not otherwise."""
        from openstack import exceptions
        try:
            return self.conn.compute.wait_for_server(server, status="ACTIVE", failures=["ERROR"], interval=0.5,
                                                     wait=180)
        except exceptions.ResourceFailure:
            fault = getattr(self.conn.compute.get_server(server.id), "fault", None)
            pytest.fail(f"server {server.id} went to ERROR: fault {fault}\n{nova_log_lines(server.id)}",
                        pytrace=False)

    def cleanup(self):
        for s in self.servers:
            self.conn.compute.delete_server(s, ignore_missing=True)
        for s in self.servers:
            self.conn.compute.wait_for_delete(s, interval=0.5, wait=120)
        for p in self.ports:
            self.conn.network.delete_port(p, ignore_missing=True)
        for p in self.policies:
            self.conn.network.delete_qos_policy(p, ignore_missing=True)
        for n in self.networks:
            self.conn.network.delete_network(n, ignore_missing=True)


def nova_log_lines(instance: str, limit: int = 40) -> str:
    """The WARNING/ERROR lines of the mini-cloud's Nova logs that name ``instance``, and of Neutron's for the
    same seconds' bindings (the last ``limit`` of each file)."""
    out = []
    for log in sorted((STATE / "log").glob("nova-*.log")) + [STATE / "log" / "neutron-rpc.log"]:
        if not log.is_file():
            continue
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if (" ERROR " in line or " WARNING " in line) and (instance in line or log.name.startswith("neutron"))]
        out += [f"== {log.name}"] + [line[:600] for line in lines[-limit:]] if lines else []
    return "\n".join(out)


@pytest.fixture
def demo(cloud):
    d = Demo(cloud.connect())
    yield d
    d.cleanup()


@pytest.fixture
def demo_two_hosts(cloud_two_hosts):
    d = Demo(cloud_two_hosts.connect())
    yield d
    d.cleanup()


@pytest.fixture
def demo_three_hosts(cloud_three_hosts):
    d = Demo(cloud_three_hosts.connect())
    yield d
    d.cleanup()


@pytest.fixture
def demo_plugin_off(cloud_plugin_off):
    d = Demo(cloud_plugin_off.connect())
    yield d
    d.cleanup()


@pytest.fixture
def demo_ovn_plugin_off(cloud_ovn_plugin_off):
    d = Demo(cloud_ovn_plugin_off.connect())
    yield d
    d.cleanup()


@pytest.fixture
def demo_ovn(cloud_ovn):
    d = Demo(cloud_ovn.connect())
    yield d
    d.cleanup()


@pytest.fixture
def playbook(cloud_manager, installed_collection, tmp_path):
    """``playbook(path, extra_vars, check=False, diff=False)`` against the running mini-cloud; the playbook
    may write ``result_file`` (an extra var given to it)."""
    def run(path, extra_vars: dict, check: bool = False, diff: bool = False) -> Run:
        env = dict(cloud_manager.current.env, ANSIBLE_COLLECTIONS_PATH=str(installed_collection))
        return run_playbook(path, extra_vars, check=check, diff=diff, env=env,
                            result_file=tmp_path / f"result-{time.monotonic_ns()}.json")
    return run
