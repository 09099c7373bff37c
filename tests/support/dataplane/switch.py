"""Open vSwitch and OVN northbound and southbound databases of a test's own, from Debian's packages (openvswitch-switch,
ovn-central), every file under one directory; the packaged services are never used.

- :class:`OvsdbServer`: an ovsdb-server on a schema (the vswitch one, or OVN's northbound or southbound one), on a
  unix socket.
- :class:`Switch`: that server on the vswitch schema and an ovs-vswitchd on the userspace datapath
  (``--disable-system``: no kernel module here) in a network namespace of its own, where a TAP device is the
  physical bridge's NIC (TAP devices and HTB qdiscs work on these machines; dummy and veth links do not). Its
  bridges are the OVS agent's: br-int for the VMs' ports, and the physical bridges (by default br-phy, for
  physnet0), each with a NIC of its own (``t0``, ``t1``, ...), patched to br-int as the agent patches them
  (``int-BRIDGE``, ``phy-BRIDGE``). Needs root.

Missing binaries are installed the way ``make cloud-install`` installs them (tests/support/minicloud/cloud.sh
install-packages); :func:`unavailable` says why they cannot be had, for a test to skip with.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VSWITCH_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
NB_SCHEMA = Path("/usr/share/ovn/ovn-nb.ovsschema")
SB_SCHEMA = Path("/usr/share/ovn/ovn-sb.ovsschema")
BINARIES = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-vswitchd", "ovn-controller", "nsenter")
NIC = "t0"  # the first physical bridge's NIC
PHYSNET = "physnet0"
_serial = itertools.count()


def unavailable(vswitchd: bool = True) -> str | None:
    """Why the daemons cannot be run here (None: they can), after installing the Debian packages if missing."""
    def missing():
        return [b for b in BINARIES if not shutil.which(b)] + [str(s) for s in (VSWITCH_SCHEMA, NB_SCHEMA,
                                                                                        SB_SCHEMA) if not s.exists()]
    if missing() and os.geteuid() == 0:
        subprocess.run(["bash", str(REPO / "tests" / "support" / "minicloud" / "cloud.sh"), "install-packages"],
                       capture_output=True, timeout=900)
    if missing():
        return f"not installed, and cloud.sh install-packages could not install them: {', '.join(missing())}"
    if vswitchd and os.geteuid() != 0:
        return "ovs-vswitchd in a network namespace of its own, with a TAP device, needs root"
    return None


class OvsdbServer:
    """An ovsdb-server on ``schema``, its database, sockets and log under ``directory``."""

    def __init__(self, directory: Path, schema: Path, name: str = "db"):
        self.directory, self.schema, self.name = Path(directory), schema, name
        self.socket = self.directory / f"{name}.sock"
        self.remote = f"unix:{self.socket}"
        self.process: subprocess.Popen | None = None

    def start(self) -> OvsdbServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        db = self.directory / f"{self.name}.db"
        subprocess.run(["ovsdb-tool", "create", str(db), str(self.schema)], check=True, capture_output=True)
        self.process = subprocess.Popen(
            ["ovsdb-server", str(db), f"--remote=punix:{self.socket}", f"--unixctl={self.directory / self.name}.ctl",
             f"--log-file={self.directory / self.name}.log"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(self.socket.exists, f"ovsdb-server's socket {self.socket}", self.process)
        return self

    def stop(self) -> None:
        _end(self.process)

    def __enter__(self) -> OvsdbServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class Switch:
    """ovsdb-server and ovs-vswitchd (userspace datapath) with the OVS agent's bridges, in a namespace of its own."""

    def __init__(self, directory: Path, physical_bridges: Sequence[str] = ("br-phy",)):
        self.directory = Path(directory)
        self.physical_bridges = tuple(physical_bridges)
        self.nics = {b: f"t{i}" for i, b in enumerate(self.physical_bridges)}  # bridge -> its NIC (a TAP)
        self.db = OvsdbServer(self.directory, VSWITCH_SCHEMA)
        self.remote = self.db.remote
        self.netns = f"minbw-dp-{os.getpid()}-{next(_serial)}"
        self.vswitchd: subprocess.Popen | None = None

    def start(self) -> Switch:
        from pyroute2 import IPRoute, netns
        self.db.start()
        self.vsctl("--no-wait", "init")
        netns.create(self.netns)
        with IPRoute(netns=self.netns, flags=0) as ipr:
            ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            for nic in self.nics.values():
                ipr.link("add", ifname=nic, kind="tuntap", mode="tap")
                ipr.link("set", index=ipr.link_lookup(ifname=nic)[0], state="up")
        self.vswitchd = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.netns}", "ovs-vswitchd", self.remote, "--disable-system",
             f"--unixctl={self.directory}/vswitchd.ctl", f"--log-file={self.directory}/vswitchd.log"],
            env={**os.environ, "OVS_RUNDIR": str(self.directory)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        _wait((self.directory / "vswitchd.ctl").exists, "ovs-vswitchd's control socket", self.vswitchd)
        # the OVS agent's bridges (bridge_mappings = physnet0:br-phy by default), on the userspace datapath
        self.vsctl("add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev")
        for bridge, nic in self.nics.items():
            self.vsctl("add-br", bridge, "--", "set", "Bridge", bridge, "datapath_type=netdev",
                       "--", "add-port", bridge, nic,
                       "--", "add-port", "br-int", f"int-{bridge}", "--", "set", "Interface", f"int-{bridge}",
                       "type=patch", f"options:peer=phy-{bridge}",
                       "--", "add-port", bridge, f"phy-{bridge}", "--", "set", "Interface", f"phy-{bridge}",
                       "type=patch", f"options:peer=int-{bridge}")
        return self

    def plug(self, name: str, port_id: str, ofport: int) -> None:
        """A VM's port on br-int as os-vif plugs it (``external_ids:iface-id``), at a fixed ofport."""
        self.vsctl("add-port", "br-int", name, "--", "set", "Interface", name, "type=internal",
                   f"ofport_request={ofport}", f"external_ids:iface-id={port_id}", "external_ids:iface-status=active")

    def vsctl(self, *args: str) -> None:
        """ovs-vsctl to write (its output is never read); without --no-wait it waits for ovs-vswitchd."""
        subprocess.run(["ovs-vsctl", f"--db={self.remote}", "--timeout=20", *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)

    def stop(self) -> None:
        from pyroute2 import netns
        _end(self.vswitchd)
        self.db.stop()
        if self.netns in netns.listnetns():
            netns.remove(self.netns)

    def __enter__(self) -> Switch:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def write_northbound(remote: str, switch: str, ports: dict[str, dict]) -> None:
    """Logical switch ``switch`` and its ports ``{name: columns}`` written into the northbound database at ``remote``
    through ovsdbapp's own OVN northbound API (as Neutron writes them), created or updated."""
    from ovsdbapp.backend.ovs_idl import connection
    from ovsdbapp.schema.ovn_northbound import impl_idl
    conn = connection.Connection(connection.OvsdbIdl.from_server(remote, "OVN_Northbound"), 10)
    # ovsdbapp keeps a backend's connection on its class (the first one made): a class of this call's own
    api = type("NorthboundOfOneCall", (impl_idl.OvnNbApiIdlImpl,), {"_ovsdb_connection": None})(conn)
    try:
        with api.transaction(check_error=True) as txn:
            txn.add(api.ls_add(switch, may_exist=True))
            for name, columns in ports.items():
                txn.add(api.lsp_add(switch, name, may_exist=True))
                if columns:
                    txn.add(api.db_set("Logical_Switch_Port", name, *columns.items()))
    finally:
        conn.stop()


def write_southbound(remote: str, ports: dict[str, dict]) -> None:
    """A datapath and its ``Port_Binding`` rows ``{logical port: options}`` written into the southbound database at
    ``remote`` through ovsdbapp's own OVN southbound API (what northd writes: ``options:qdisc_queue_id`` among them)."""
    from ovsdbapp.backend.ovs_idl import connection
    from ovsdbapp.schema.ovn_southbound import impl_idl
    conn = connection.Connection(connection.OvsdbIdl.from_server(remote, "OVN_Southbound"), 10)
    api = type("SouthboundOfOneCall", (impl_idl.OvnSbApiIdlImpl,), {"_ovsdb_connection": None})(conn)
    try:
        with api.transaction(check_error=True) as txn:
            datapath = txn.add(api.db_create_row("Datapath_Binding", tunnel_key=1))
            for key, (name, options) in enumerate(sorted(ports.items()), start=1):
                txn.add(api.db_create("Port_Binding", logical_port=name, datapath=datapath, tunnel_key=key,
                                      options=options))
    finally:
        conn.stop()


def _wait(ready, what: str, process: subprocess.Popen, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {process.returncode}")
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not there after {timeout} s")
        time.sleep(0.05)


def _end(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
