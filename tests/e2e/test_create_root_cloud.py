"""``minbw provider sync --create-root`` beside the real Nova 34 (minbw.nova.compute_root), on the default cloud's
spare compute devstack1 (nova-compute up, disabled, no agents, so nothing of Neutron's under its root), its
nova-compute stopped while its root is replaced and started again to see what it makes of the new one:

1. the root a ``--create-root`` made before it read Nova (another UUID than the compute node's, the name the same):
   nova-compute's start gets Placement's 409 "Conflicting resource provider name" and cannot report the node; a sync
   names the root as not Nova's;
2. that root deleted, ``--create-root`` refuses where Nova cannot be read (a user with the ``service`` role, which
   may read Placement but, by Nova's default policy, not list its computes: 403) and a host Nova does not know (the
   module ``bandwidth_providers`` likewise, the same request, and plans the root when told), and refuses
   ``--root-inventory`` on the compute node's root: one line each with the fix, nothing written. It creates the
   root with the compute node's UUID (the hypervisor's id in Nova's API); with ``--ignore-nova-compute`` the
   inventory given is set;
3. nova-compute's start adopts that root without a 409 and replaces the inventory given with its driver's;
4. the agent providers removed (``--absent``) while nova-compute runs: its cached tree still lists them and each
   update of the node fails (``ResourceProviderAllocationRetrievalFailed``, a build is rescheduled) until it
   restarts; the sync warns of it.

At the end the agent providers are removed again with nova-compute stopped, so that its start reads its tree
afresh; devstack1's root is left as nova-compute made it, so the tests that bring the spare into service later
find it as before.

While the test runs, devstack1's nova-compute updates its resources every ``PERIOD`` seconds instead of Nova's
default 60 (``update_resources_interval`` in its override file, ``MINICLOUD_NOVA_COMPUTE_CONF_1``, put back as it was
at the end), and its periodic tasks start as it starts (``periodic_fuzzy_delay`` 0, not a random 0-60 s later): step
4 waits for that periodic update, twice, and each update is seen in the log."""
from __future__ import annotations

import contextlib
import json
import subprocess
import time
import types
import uuid
from pathlib import Path

from tests.conftest import MINBW
from tests.support import cli_forks

HERE = Path(__file__).resolve().parent
HOST = "devstack1"
CONFLICT = "Conflicting resource provider name"
OVS = f"[DEFAULT]\nhost = {HOST}\n[ovs]\nbridge_mappings = physnet0:br-root\n" \
      "resource_provider_bandwidths = br-root:1000:1000\n"
NOT_IN_NOVA = "devstack9"  # a host Nova knows nothing of
PERIOD = 5  # devstack1's update_resources_interval during the test (Nova's default: 60)
WAIT = 60  # step 4's waits' bound: a few periods, and nova-compute slow on a loaded machine
# nova-compute's resource update, at its start and periodically, logs this line before it writes to Placement (and
# an error right after it when that fails): once it is seen a third time, the first two updates have ended
UPDATED = f"Final resource view: name={HOST} "


def _sync(cloud, ini: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--no-cache", *args],
                         env=cloud.env, capture_output=True, text=True, timeout=300)


@contextlib.contextmanager
def _service_user(cloud, tmp_path: Path):
    """A user with the ``service`` role (as Neutron's and Nova's service users have) on a project of its own: an
    object with ``env`` for the minbw CLI as that user."""
    identity = cloud.connect().identity
    name, password = f"minbw-root-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    project = identity.create_project(name=name, domain_id="default")
    user = identity.create_user(name=name, password=password, domain_id="default", default_project_id=project.id)
    try:
        identity.assign_project_role_to_user(project, user, identity.find_role("service", ignore_missing=False))
        clouds = tmp_path / "service-clouds.yaml"
        clouds.write_text(json.dumps({"clouds": {"service": {
            "auth": {"auth_url": cloud.env["MINICLOUD_KEYSTONE_URL"], "username": name, "password": password,
                     "project_name": name, "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": "RegionOne"}}}))
        yield types.SimpleNamespace(env=dict(cloud.env, OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="service"))
    finally:
        identity.delete_user(user)
        identity.delete_project(project)


def _tree(conn) -> dict[str, str]:
    return {p.name: p.id for p in conn.placement.resource_providers()}


def _inventory(conn, rp: str) -> dict[str, int]:
    return {i.resource_class: i.total for i in conn.placement.resource_provider_inventories(rp)}


def _wait(what, check, timeout: float = 90):
    """Until ``check()`` is true (nova-compute's first resource update runs a moment after its service reports)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not seen in {timeout} s: {what}"
        time.sleep(1)


def _updates(log: Path, offset: int) -> int:
    """How many of nova-compute's resource updates began writing to Placement since ``offset`` of its log."""
    return _since(log, offset).count(UPDATED)


def test_create_root_takes_the_compute_nodes_uuid_and_nova_compute_adopts_it(cloud, playbook, tmp_path):
    conn = cloud.connect()
    node = next(h.id for h in conn.compute.hypervisors() if h.name == HOST)  # the compute node's UUID
    log = Path(cloud.env["MINICLOUD_LOG_DIR"], f"nova-compute-{HOST}.log")
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS)
    assert _tree(conn)[HOST] == node
    driver = _inventory(conn, node)  # what nova-compute reports for the node (the fake driver's)
    cloud.cloud_sh("stop-compute", HOST)
    stopped = True
    # its starts in the test: resource updates every PERIOD s from its start on (no random delay of its periodic
    # tasks: Nova's default delays them 0-60 s, which step 4's waits paid twice), logged (UPDATED is a debug line)
    # (its override file, put back before the last start)
    conf = Path(cloud.env["MINICLOUD_NOVA_COMPUTE_CONF_1"])
    kept = conf.read_text()
    conf.write_text(kept + f"\n[DEFAULT]\nupdate_resources_interval = {PERIOD}\nperiodic_fuzzy_delay = 0\n"
                           "debug = True\n")
    try:
        # 1. a root of the node's name with another UUID, as --create-root made before it read Nova
        conn.placement.delete_resource_provider(node)
        other = str(uuid.uuid4())
        conn.placement.create_resource_provider(name=HOST, uuid=other)
        seen = log.stat().st_size
        cloud.cloud_sh("start-compute", HOST)
        stopped = False
        _wait("nova-compute's 409", lambda: CONFLICT in _since(log, seen))
        assert _tree(conn)[HOST] == other and _inventory(conn, other) == {}  # it could not report the node
        out = _sync(cloud, ini, "--dry-run", "--create-root")
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"root provider {HOST} ({other}) is not Nova's compute node {HOST} ({node})" in out.stderr
        cloud.cloud_sh("stop-compute", HOST)
        stopped = True
        conn.placement.delete_resource_provider(other)

        # 2. refusals: one line each with the fix, exit 1, nothing written
        before = _tree(conn)
        bad = tmp_path / "elsewhere.ini"
        bad.write_text(OVS.replace(HOST, NOT_IN_NOVA))
        with _service_user(cloud, tmp_path) as service:  # may read Placement, not list Nova's computes
            as_service = _sync(service, ini, "--create-root")
        for out, why in (
                (as_service, f"no root provider named '{HOST}' in Placement, and Nova's services and compute nodes "
                             f"not readable (403), so whether nova-compute makes this root cannot be told"),
                (_sync(cloud, bad, "--create-root"), f"no compute node of that name in Nova, and no nova-compute "
                                                     f"service on {NOT_IN_NOVA}"),
                (_sync(cloud, ini, "--create-root", "--root-inventory", "VCPU=8"),
                 f"--root-inventory given for the root of '{HOST}' ({node}), which is the compute node's in Nova")):
            assert out.returncode == 1, out.stdout + out.stderr
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and why in lines[0] and "Fix: " in lines[0], out.stderr
            assert _tree(conn) == before
        # the module, the same request: refused (its msg the same line, the fix apart), told: planned only
        run = playbook(HERE / "playbooks" / "create_root.yml", {"agent_config": str(bad)})
        refused, told = run.result["refused"], run.result["told"]
        assert refused["failed"] and refused["hypervisor"] == NOT_IN_NOVA and "\n" not in refused["msg"], refused
        assert refused["msg"].endswith(f"Fix: {refused['fix']}.") and "ignore_nova_compute" in refused["fix"]
        assert [(op["action"], op["name"]) for op in told["ops"] if op["action"] == "create_root"] == [
            ("create_root", NOT_IN_NOVA)] and told["changed"], told
        assert _tree(conn) == before
        # the root created is the compute node's; told, the inventory given is set on it
        out = _sync(cloud, ini, "--create-root", "--root-inventory", "VCPU=8", "--ignore-nova-compute", "--json")
        assert out.returncode == 0, out.stdout + out.stderr
        created = [op for op in json.loads(out.stdout)["ops"] if op["action"] == "create_root"]
        assert [(op["name"], op["uuid"]) for op in created] == [(HOST, node)]
        tree = _tree(conn)
        assert tree[HOST] == node and f"{HOST}:Open vSwitch agent:br-root" in tree
        assert _inventory(conn, node) == {"VCPU": 8}

        # 3. nova-compute adopts the root: no 409, its driver's inventory replaces the one given
        seen = log.stat().st_size
        cloud.cloud_sh("start-compute", HOST)
        stopped = False
        _wait("nova-compute's inventory on the root", lambda: _inventory(conn, node) == driver)
        assert CONFLICT not in _since(log, seen)
        assert _tree(conn)[HOST] == node
        out = _sync(cloud, ini, "--json")  # the agent's providers stay under it: nothing to write
        assert out.returncode == 0 and json.loads(out.stdout)["writes"] == 0, out.stdout + out.stderr

        # 4. the agent's providers removed while nova-compute runs: its cached tree still lists them, and its next
        #    update of the node (the periodic one here; a build's claim alike: CI, stop 50) fails on the first
        #    removed provider it reads. The sync says so; restarted, nova-compute reads the tree afresh and its
        #    updates pass.
        removed = [rp for name, rp in _tree(conn).items() if name.startswith(f"{HOST}:")]  # the agent's, br-root's
        assert len(removed) == 2
        seen = log.stat().st_size
        out = _sync(cloud, ini, "--absent")
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"a nova-compute running on {HOST} keeps them in its cached provider tree" in out.stderr, out.stderr
        failed = [f"Failed to retrieve allocations for resource provider {rp}" for rp in removed]
        _wait("nova-compute's periodic update failing on a removed provider",
              lambda: any(f in _since(log, seen) for f in failed), timeout=WAIT)
        cloud.cloud_sh("stop-compute", HOST)
        stopped = True
        seen = log.stat().st_size
        cloud.cloud_sh("start-compute", HOST)
        stopped = False
        # its start's update and a periodic one ended (a third began), as the 75 s on Nova's 60 s period waited for
        _wait("nova-compute's start's update and a periodic one", lambda: _updates(log, seen) >= 3, timeout=WAIT)
        assert not [f for f in failed if f in _since(log, seen)], _since(log, seen)[-3000:]
    finally:
        if not stopped:  # removed with nova-compute stopped, its start reads the tree afresh (step 4)
            cloud.cloud_sh("stop-compute", HOST)
            stopped = True
        _sync(cloud, ini, "--absent")
        wrong = _tree(conn).get(HOST)
        if wrong not in (None, node):  # a failure left the root of another UUID: nova-compute's start needs it gone
            conn.placement.delete_resource_provider(wrong)
        conf.write_text(kept)  # Nova's default period again for the tests after this one
        cloud.cloud_sh("start-compute", HOST)  # it makes its root again where the test left none
    _wait("devstack1's root as nova-compute makes it", lambda: _tree(conn).get(HOST) == node
          and _inventory(conn, node) == driver)
    assert not [n for n in _tree(conn) if n.startswith(f"{HOST}:")]


def _since(log: Path, offset: int) -> str:
    with log.open(errors="replace") as f:
        f.seek(offset)
        return f.read()
