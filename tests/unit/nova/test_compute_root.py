"""Unit tables for minbw.nova.compute_root: which root ``provider sync --create-root`` may make for a hypervisor
from what Nova knows of it, and when ``--root-inventory`` is refused; every case, and how make_plan applies them
(a refused root writes nothing; with several configurations only that hypervisor's are skipped).

What Nova itself does with such a root (409 for a name taken by another UUID, a root of its node's UUID adopted,
its inventory replaced) is shown on the real Nova 34 by tests/e2e/test_create_root_cloud.py."""
from __future__ import annotations

import pytest

from minbw.errors import PlanError, RootRefused
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.nova.compute_root import NovaComputes, check_root_inventory, root_of
from minbw.plan.providers import make_plan, root_uuid
from tests.unit.plan.test_providers import OVS, ROOT, observed

NODE = "0d1c8a5e-4a8f-4c55-9b6e-3f1f0a7b9c11"
OTHER = "7f2e9b3c-1d4a-4e6f-8a5b-2c3d4e5f6a7b"


def refused(*args, **kwargs) -> RootRefused:
    with pytest.raises(RootRefused) as err:
        root_of(*args, **kwargs)
    return err.value


@pytest.mark.parametrize("hosts", [(), ("devstack0",), ("agent-host",)])
def test_without_nova_the_root_is_minbws_own(hosts):
    assert root_of("devstack0", hosts, None) is None
    assert root_of("devstack0", hosts, None, ignore=True) is None


@pytest.mark.parametrize("ignore", [False, True])
def test_a_compute_node_nova_knows_gives_the_root_its_uuid(ignore):
    nova = NovaComputes({"devstack0": (NODE,), "devstack1": (OTHER,)}, frozenset({"devstack0", "devstack1"}))
    assert root_of("devstack0", ("devstack0",), nova, ignore=ignore) == NODE
    # the node is found by the hypervisor's name (what nova-compute names its root), whatever the agents' host
    assert root_of("devstack1", ("agent-host",), nova, ignore=ignore) == OTHER


@pytest.mark.parametrize("ignore", [False, True])
def test_two_compute_nodes_of_the_name_are_refused_even_when_told(ignore):
    e = refused("devstack0", (), NovaComputes({"devstack0": (NODE, OTHER)}, frozenset({"devstack0"})), ignore=ignore)
    assert e.hypervisor == "devstack0"
    assert f"Nova has 2 compute nodes named 'devstack0' ({NODE}, {OTHER})" in str(e)
    assert "openstack compute service delete" in e.fix


@pytest.mark.parametrize("nova, hosts, why, fix", [
    # Nova unreadable: whether nova-compute makes the root cannot be told
    (NovaComputes(unread="Nova's services and compute nodes not readable (403)"), (),
     "in Placement, and Nova's services and compute nodes not readable (403), so whether nova-compute makes this "
     "root cannot be told", "use credentials that may list"),
    # a nova-compute service on the hypervisor, its node not made yet (or named otherwise)
    (NovaComputes({"devstack1": (OTHER,)}, frozenset({"devstack0", "devstack1"})), (),
     "but nova-compute runs on devstack0", "wait until 'openstack hypervisor list' shows devstack0"),
    # ... or on the agents' host that names the hypervisor
    (NovaComputes({}, frozenset({"agent-host"})), ("agent-host",),
     "but nova-compute runs on agent-host", "wait until 'openstack hypervisor list' shows devstack0"),
    # Nova knows nothing of the host (not started there yet, or a network node)
    (NovaComputes({"devstack1": (OTHER,)}, frozenset({"devstack1"})), ("agent-host",),
     "no nova-compute service on agent-host, devstack0", "leave this host's agents out"),
])
def test_a_root_nova_compute_may_make_is_refused_unless_told(nova, hosts, why, fix):
    e = refused("devstack0", hosts, nova)
    assert (e.hypervisor, why in str(e), fix in e.fix) == ("devstack0", True, True), str(e)
    assert "--ignore-nova-compute" in e.fix
    assert "\n" not in str(e) and str(e).endswith(f"Fix: {e.fix}.")  # one line: what, why, the fix
    assert e.to_dict() == {"msg": str(e), "hypervisor": "devstack0", "fix": e.fix}
    assert root_of("devstack0", hosts, nova, ignore=True) is None  # told: minbw's own root


@pytest.mark.parametrize("nova, uuid, ignore, refuse", [
    (None, NODE, False, False),  # no Nova: the root is minbw's
    (NovaComputes({"devstack0": (NODE,)}), NODE, False, True),  # nova-compute's root: it replaces the inventory
    (NovaComputes({"devstack0": (NODE,)}), NODE, True, False),  # told
    (NovaComputes({"devstack0": (NODE,)}), OTHER, False, False),  # a root that is not a node's
    (NovaComputes({"devstack1": (NODE,)}), NODE, False, True),  # a node's, whatever its name
    (NovaComputes(unread="not readable (403)"), NODE, False, False),  # nothing known to be nova-compute's
])
def test_root_inventories_are_refused_on_a_compute_nodes_root(nova, uuid, ignore, refuse):
    if not refuse:
        assert check_root_inventory("devstack0", uuid, nova, ignore=ignore) is None
        return
    with pytest.raises(RootRefused) as err:
        check_root_inventory("devstack0", uuid, nova, ignore=ignore)
    assert f"the root of 'devstack0' ({uuid}), which is the compute node's in Nova" in str(err.value)
    assert "resource_provider_association_refresh" in str(err.value) and "\n" not in str(err.value)


def _desired(*hosts, isolate=False):
    return desired_state([load_agent_ini(OVS, source=f"{h}.ini", host=h) for h in hosts], isolate=isolate)


NOVA = NovaComputes({"devstack0": (NODE,)}, frozenset({"devstack0"}))


def test_the_plan_creates_the_root_with_the_compute_nodes_uuid():
    plan = make_plan(_desired("devstack0"), observed(roots=False), create_root=True, nova=NOVA)
    assert [(o.action, o.uuid) for o in plan.ops if o.name == "devstack0"] == [("create_root", NODE),
                                                                               ("set_traits", NODE)]
    assert {o.parent_uuid for o in plan.ops if o.action == "create_provider"} >= {NODE}  # the agent under it
    # without Nova, or told to ignore it where Nova knows nothing: minbw's own, derived from the name
    for nova, ignore in ((None, False), (NovaComputes(), True)):
        plan = make_plan(_desired("devstack0"), observed(roots=False), create_root=True, nova=nova,
                         ignore_nova_compute=ignore)
        assert plan.ops[0].uuid == root_uuid("devstack0")


def test_a_refused_root_plans_nothing_and_root_inventories_on_novas_root_neither():
    with pytest.raises(RootRefused) as err:
        make_plan(_desired("devstack0"), observed(roots=False), create_root=True, nova=NovaComputes())
    assert "no nova-compute service on devstack0" in str(err.value)
    for root in (False, True):  # a root to create, or the existing one, that is the compute node's
        nova = NovaComputes({"devstack0": (ROOT.uuid,)}, frozenset({"devstack0"}))
        with pytest.raises(RootRefused):
            make_plan(_desired("devstack0"), observed(roots=root), create_root=True, nova=nova,
                      root_inventories={"VCPU": {"total": 8}})
        plan = make_plan(_desired("devstack0"), observed(roots=root), create_root=True, nova=nova,
                         root_inventories={"VCPU": {"total": 8}}, ignore_nova_compute=True)
        assert "VCPU" in dict(next(o for o in plan.ops if o.action in ("create_root", "set_inventories")).inventories)


def test_with_several_configurations_a_refused_root_skips_its_hypervisor_only():
    desired = _desired("devstack0", "devstack1", isolate=True)  # as provider sync reads several files
    plan = make_plan(desired, observed(roots=True), create_root=True, nova=NOVA)
    assert [h for h, _why in plan.skipped] == ["devstack1"]
    assert "no nova-compute service on devstack1" in plan.skipped[0][1]
    assert not [o for o in plan.ops if o.action == "create_root"]
    with pytest.raises(PlanError, match="nothing to sync: .*devstack0.*devstack1"):  # none left: nothing at all
        make_plan(desired, observed(roots=False), create_root=True, nova=NovaComputes())


def test_a_root_of_the_nodes_name_with_another_uuid_is_named():
    nova = NovaComputes({"devstack0": (OTHER,)}, frozenset({"devstack0"}))
    plan = make_plan(_desired("devstack0"), observed(), nova=nova)
    assert [w for w in plan.warnings if "is not Nova's compute node devstack0" in w] == [
        f"root provider devstack0 ({ROOT.uuid}) is not Nova's compute node devstack0 ({OTHER}): nova-compute cannot "
        f"create its own root (Placement refuses the name: 409) and reports nothing for it (a root made by hand, or "
        f"by create_root before it read Nova). Fix: once nothing is allocated in that tree, remove it (provider sync "
        f"--absent, then 'openstack resource provider delete {ROOT.uuid}'); nova-compute creates its root at its "
        f"next update, and a sync puts the agents' providers under it"]
    nova = NovaComputes({"devstack0": (ROOT.uuid,)}, frozenset({"devstack0"}))  # the root is the node's
    assert not [w for w in make_plan(_desired("devstack0"), observed(), nova=nova).warnings if "not Nova's" in w]
