#!/usr/bin/env python3
"""The mini-cloud's Nova services (nova-conductor, nova-scheduler, each host's nova-compute) forked from one process
that imported Nova once (runs in .venv-cloud), instead of a fresh Python importing Nova and oslo for each start.

    nova_service.py serve SOCKET --config-file nova.conf   the fork server (cloud.sh starts it as `nova-forks`);
                                                           says "ready" on its standard output once it listens;
                                                           its client: ../forks.py start SOCKET PIDFILE
                                                           nova_service.py run SERVICE ARGS...
    nova_service.py run SERVICE ARGS...                    SERVICE in this process (MINICLOUD_FORKS=0, or no server)

SERVICE is nova-conductor, nova-scheduler or nova-compute (the latter through this file's wrapper of the fake
driver: ``compute``). The server does what the services' console scripts do before their imports (nova/cmd/*.py's
first line: ``monkey_patch.patch(backend='threading')``, which reads ``concurrency_backend`` from the
--config-file given to the server: the one nova.conf every service reads), then imports the three entry points.
Each child starts its own session (as cloud.sh's ``start`` does with setsid, so that ``stop`` kills its process
group), checks that its own arguments and environment make the same patching decision, takes its request's
streams, directory and environment (tests/support/forks.py: the same request and child as the tests' fork servers),
and runs the console script's ``main`` with its own argv; its parent is then init, as with ``setsid CMD &``, and
its command line (setproctitle) the one it would have had without the server.
"""
from __future__ import annotations

import os
import sys

SERVICES = ("nova-conductor", "nova-scheduler", "nova-compute")


def compute() -> int | None:
    """nova-compute with the mini-cloud's fake driver adjustments (cloud.sh's start_nova_compute):
    (1) the fake driver's node gets a stable identity, as nova's own FakeDriverWithoutFakeNodes does (FakeDriver
        names its node with a per-process uuidsentinel and writes no compute_id, so a second start of the same host
        is refused); the identity goes to [DEFAULT] state_path/compute_id (one state_path per compute);
    (2) with the PCI fake driver (MINICLOUD_SRIOV_COMPUTE=1), answers the two sysfs look-ups that nova's own
        FakeDriverWithPciResourcesConfigFixture mocks and reports real vendor/product ids;
    (3) MINICLOUD_OS_VIF=1: the fake driver's os-vif variant (os_vif_driver.py in MINICLOUD_SUPPORT)."""
    from nova.cmd import compute as compute_cmd  # noqa: I001 - first: its first line is nova's monkey patching
    import nova.virt.node
    from nova.virt import fake

    sriov = os.environ.get("MINICLOUD_SRIOV_COMPUTE") == "1"
    if sriov:
        import nova.pci.utils as pu
        from oslo_serialization import jsonutils

        pu.get_mac_by_pci_address = lambda *a, **k: "52:54:00:1e:59:c6"
        pu.get_vf_num_by_pci_address = lambda *a, **k: 1
        # The fake driver reports vendor_id/product_id "fake-vendor_id"/"fake-product_id"; nova's pci_devices
        # columns are VARCHAR(4): fine on sqlite (nova's functional tests), rejected by MariaDB in strict mode.
        # Report Intel 82599 ids instead (PF 10fb, VF 10ed).
        _orig = fake.FakeDriverWithPciResources.get_available_resource

        def _gar(self, nodename):
            r = _orig(self, nodename)
            devs = jsonutils.loads(r["pci_passthrough_devices"])
            for d in devs:
                d["vendor_id"] = "8086"
                d["product_id"] = "10fb" if d["dev_type"] == "type-PF" else "10ed"
            r["pci_passthrough_devices"] = jsonutils.dumps(devs)
            return r

        fake.FakeDriverWithPciResources.get_available_resource = _gar
    cls = fake.FakeLiveMigrateDriverWithPciResources if sriov else fake.FakeLiveMigrateDriver
    _resources = cls.get_available_resource

    def _stable_resources(self, nodename):
        r = _resources(self, nodename)
        if r:
            r["uuid"] = nova.virt.node.get_local_node_uuid()
        return r

    cls.get_available_resource = _stable_resources
    cls.get_nodenames_by_uuid = fake.FakeDriverWithoutFakeNodes.get_nodenames_by_uuid
    if os.environ.get("MINICLOUD_OS_VIF") == "1":  # compute_driver = fake.<cls>OsVif
        sys.path.insert(0, os.environ["MINICLOUD_SUPPORT"])
        import os_vif_driver

        setattr(fake, cls.__name__ + "OsVif", os_vif_driver.with_os_vif(cls))
    return compute_cmd.main()


def main_of(service: str):
    if service == "nova-compute":
        return compute
    if service == "nova-conductor":
        from nova.cmd import conductor

        return conductor.main
    if service == "nova-scheduler":
        from nova.cmd import scheduler

        return scheduler.main
    raise SystemExit(f"nova_service.py: no service {service!r} (one of {', '.join(SERVICES)})")


def run(service: str, args: list[str]) -> None:
    """SERVICE in this process, as its console script runs it (sys.argv[0] is the service's name)."""
    sys.argv = [service, *args]
    sys.exit(main_of(service)())


def patching() -> tuple[str, str]:
    """What nova's monkey_patch.patch decides from: OS_NOVA_DISABLE_EVENTLET_PATCHING and, when it is unset,
    concurrency_backend of the --config-file/--config-dir in sys.argv."""
    from nova import monkey_patch

    env = os.environ.get("OS_NOVA_DISABLE_EVENTLET_PATCHING", "").lower()
    return env, monkey_patch._get_concurrency_from_config() if env == "" else ""


def serve(path: str, args: list[str]) -> None:
    # as the console scripts before anything else: patched (or eventlet poisoned) from the server's nova.conf
    sys.argv = ["nova-forks", *args]
    from nova import monkey_patch

    monkey_patch.patch(backend="threading")
    decided = patching()
    import nova.virt.fake  # nova-compute's driver and what it imports
    import nova.virt.node  # noqa: F401
    from nova.cmd import compute, conductor, scheduler  # noqa: F401 - the three entry points

    support = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, support)  # forks.py, then out of the path again: what the children import lazily is as before
    import forks

    sys.path.remove(support)

    def work(request: dict) -> None:  # in a session of its own, titled as its command (forks.serve's detach)
        _script, _run, service, *rest = request["argv"]  # this file's `run SERVICE ARGS`, as without the server
        sys.argv = [service, *rest]
        if patching() != decided:
            raise SystemExit(f"{service}: its arguments or environment patch Nova otherwise than the fork server's "
                             f"({patching()} != {decided}): start it with MINICLOUD_FORKS=0")
        sys.exit(main_of(service)())

    forks.serve(path, work, detach=True)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "serve":
        serve(argv[1], argv[2:])
        return 0
    if len(argv) >= 2 and argv[0] == "run":
        run(argv[1], argv[2:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    # as the console scripts: this file's directory is not on the services' path (os_vif_driver.py: MINICLOUD_SUPPORT)
    del sys.path[0]
    sys.exit(main(sys.argv[1:]))
