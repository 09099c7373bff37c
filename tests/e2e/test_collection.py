"""The collection against the real cloud, through ansible-playbook: qos_policy and port (check mode, real run,
idempotency, diff), server_bandwidth_info (a server that holds its guarantee and one whose port was really
tampered with), and seed 003's playbook with the bandwidth_server role (vm0 on br-test, vm1 NoValidHost with our
diagnosis, release after deletion)."""
from __future__ import annotations

from pathlib import Path

from minbw.ops import claims
from minbw.placement.client import Placement

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
BR_EX = "193134fd-464c-5545-9d20-df7d58c0166f"
BW = [{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000},
      {"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": 1000}]


def step(playbook, changed, check=False, **extra):
    run = playbook(HERE / "playbooks" / "qos_port.yml", dict(extra), check=check, diff=True)
    assert not run.failed, run.output
    assert run.changed is changed, run.output
    return run


def test_qos_policy_and_port_modules(playbook, demo):
    conn = demo.conn
    base = dict(policy_name="e2e-qp", port_name="e2e-port", network="e2e-net0", vnic_type="normal",
                qos_policy="e2e-qp", rules=BW)
    try:
        run = step(playbook, True, check=True, **base)
        assert conn.network.find_qos_policy("e2e-qp") is None and conn.network.find_port("e2e-port") is None
        assert run.result["port"].get("skipped")  # its policy does not exist yet
        predicted = run.result["policy"]["policy"]
        assert [(r["direction"], r["min_kbps"], r["id"]) for r in predicted["rules"]] == [
            ("egress", 1000, None), ("ingress", 1000, None)]
        assert "--- before" in run.output and "+++ after" in run.output

        run = step(playbook, True, **base)
        policy = conn.network.find_qos_policy("e2e-qp")
        port = conn.network.find_port("e2e-port")
        assert port.qos_policy_id == policy.id
        assert run.result["port"]["resource_request"] == port.resource_request
        info = run.result["request_info"]  # port_resource_request_info with port: Neutron's and ours agree
        assert info["matches_neutron"] is True and info["neutron_resource_request"] == port.resource_request
        assert info["resource_request"] == port.resource_request and info["mode"] == "neutron"
        groups = port.resource_request["request_groups"]
        assert groups[0]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
        rule_ids = {r["direction"]: r["id"] for r in policy.rules}

        step(playbook, False, check=True, **base)
        run = step(playbook, False, **base)
        assert run.result["policy"]["changes"] == []

        # a value changes: updated in place, ids and so the group id stay
        more = dict(base, rules=[dict(BW[0], min_kbps=1200), BW[1]])
        run = step(playbook, True, check=True, **more)
        assert run.result["policy"]["changes"] == [{"action": "update_rule", "rule_type": "minimum_bandwidth",
                                                    "rule_id": rule_ids["egress"], "values": {"min_kbps": 1200}}]
        step(playbook, True, **more)
        policy = conn.network.find_qos_policy("e2e-qp")
        assert {r["direction"]: r["id"] for r in policy.rules} == rule_ids
        assert conn.network.get_port(port.id).resource_request["request_groups"][0]["id"] == groups[0]["id"]

        # a rule goes, a packet-rate rule comes: new rule ids, new group ids
        other = dict(base, rules=[BW[1], {"type": "minimum_packet_rate", "direction": "any", "min_kpps": 10}])
        run = step(playbook, True, **other)
        assert [c["action"] for c in run.result["policy"]["changes"]] == ["delete_rule", "create_rule"]
        rr = conn.network.get_port(port.id).resource_request
        assert run.result["request_info"]["matches_neutron"] is True  # with a packet-rate group too
        assert {tuple(sorted(g["resources"])) for g in rr["request_groups"]} == {
            ("NET_BW_IGR_KILOBIT_PER_SEC",), ("NET_PACKET_RATE_KILOPACKET_PER_SEC",)}
        step(playbook, False, **other)

        # the port loses its policy (qos_policy omitted): no resource_request any more
        run = step(playbook, True, **dict(other, qos_policy=None))
        assert conn.network.get_port(port.id).qos_policy_id is None
        assert run.result["port"]["resource_request"] is None
        step(playbook, False, **dict(other, qos_policy=None))

        # both go, in check mode first
        step(playbook, True, check=True, state="absent", **other)
        assert conn.network.find_port("e2e-port") is not None
        step(playbook, True, state="absent", **other)
        assert conn.network.find_port("e2e-port") is None and conn.network.find_qos_policy("e2e-qp") is None
        step(playbook, False, state="absent", **other)
    finally:
        conn.network.delete_port(conn.network.find_port("e2e-port") or "-", ignore_missing=True)
        conn.network.delete_qos_policy(conn.network.find_qos_policy("e2e-qp") or "-", ignore_missing=True)


def info(playbook, server):
    run = playbook(HERE / "playbooks" / "server_info.yml", {"server": server})
    assert not run.failed and not run.changed, run.output
    return run.result


def test_server_bandwidth_info_reports_what_is_wrong(playbook, demo, cloud):
    conn = demo.conn
    port = demo.port("e2e-info", demo.policy("e2e-info", bw=[("egress", 400), ("ingress", 400)]))
    server = demo.boot("e2e-info", [port])
    result = info(playbook, "e2e-info")
    assert result["ok"] is True and result["problems"] == [], result
    group = port.resource_request["request_groups"][0]["id"]
    assert result["groups"] == {group: {"provider": BR_TEST, "provider_name": "devstack0:Open vSwitch agent:br-test"}}
    assert result["ports"][0]["request_source"] == "neutron"

    # Nova's service user rewrites the port's binding allocation to another provider, through Neutron's API
    nova = cloud.connect(username="nova", password="minicloud-secret", project_name="service")
    nova.network.update_port(port.id, binding_profile={"allocation": {group: BR_EX}})
    result = info(playbook, server.id)
    assert result["ok"] is False
    assert result["problems"] == [
        f"port e2e-info ({port.id}): binding:profile.allocation is {{'{group}': '{BR_EX}'}}, but the server's "
        f"allocation maps its request group(s) to {{'{group}': '{BR_TEST}'}}"]

    # the allocation loses its bandwidth (a real PUT /allocations with the consumer generation)
    nova.network.update_port(port.id, binding_profile={"allocation": {group: BR_TEST}})
    api = Placement(conn)
    current = api.get_allocations(server.id)
    flavor_only = {rp: a for rp, a in current["allocations"].items() if rp != BR_TEST}
    api.put_allocations(server.id, {"allocations": flavor_only, "consumer_generation": current["consumer_generation"],
                                            "project_id": current["project_id"], "user_id": current["user_id"]})
    result = info(playbook, server.id)
    assert result["ok"] is False
    assert len(result["problems"]) == 1 and "do not satisfy its request" in result["problems"][0], result
    assert group in result["problems"][0]


def test_end_to_end_playbook_with_the_bandwidth_server_role(playbook, cloud):
    run = playbook(REPO / "playbooks" / "end_to_end.yml", {"end_to_end_result_file": "{{ result_file }}"})
    assert not run.failed, run.output
    res = run.result
    vm0 = res["booted"]["servers"]["vm0"]
    assert vm0["ok"] is True and list(vm0["groups"].values())[0]["provider"] == BR_TEST
    vm1 = res["booted"]["no_valid_host"]["vm1"]
    assert "No valid host was found" in vm1["msg"]
    bw = [e for e in vm1["diagnosis"] if e["group"]]
    assert len(bw) == 1 and bw[0]["fits_alone"] is False
    assert bw[0]["problems"] == [
        f"{rc}: needs 1000, the largest free amount is 500 on devstack0:Open vSwitch agent:br-test "
        f"(capacity 1500, used 1000)" for rc in ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")]
    for name in ("vm0", "vm1"):
        release = res["deleted"]["servers"][name]
        assert release["allocations"] == {} and release["problems"] == []
        assert all("allocation" not in p for p in release["binding_profiles"].values())
    after = {p["uuid"]: p for p in res["providers_after"]}
    assert after[BR_TEST]["usages"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 0, "NET_BW_IGR_KILOBIT_PER_SEC": 0}
    ports = {p["name"]: p for p in res["ports"]}
    assert set(ports) == {"port-normal-qos", "port-normal-qos-2"}
