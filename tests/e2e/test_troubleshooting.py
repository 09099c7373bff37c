"""docs/troubleshooting.md, walked as written on the mini-cloud: a server whose QoS port asks more bandwidth than any
host has, and a port on a physnet no host reports, each boot ending in NoValidHost; then the page's commands, in
order, with the page's SERVER, PORT, FLAVOR and HOST. Each exits as the page says (0, or the code its ``# exit N:``
comment announces) and prints the lines the page shows, in order (``...`` stands for lines left out, runs of spaces
count as one, and ``<...>`` for one word that differs from run to run: an id, a generation)."""
from __future__ import annotations

from pathlib import Path

from tests.e2e.test_operators_checks import checks, run_checks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def walk(name: str) -> list[tuple[str, list[str]]]:
    """The page's commands between ``<!-- walk: NAME -->`` and ``<!-- walk: end -->``, with the output shown."""
    return checks(PAGE.read_text(), name, kind="walk")


def no_valid_host(demo, name: str, port):
    conn = demo.conn
    server = conn.compute.create_server(name=name, flavor_id=demo.flavor.id, image_id=demo.image.id,
                                        networks=[{"port": port.id}])
    demo.servers.append(server)
    server = conn.compute.wait_for_server(server, status="ERROR", failures=["ACTIVE"], interval=0.5, wait=180)
    assert server.fault["message"].startswith("No valid host was found"), server.fault
    return server


def test_the_page_walks_a_port_asking_more_than_any_host_has(demo, cloud):
    policy = demo.policy("e2e-ts-big", bw=[("egress", 200000), ("ingress", 1000)])
    port = demo.port("e2e-ts-big-port", policy)
    server = no_valid_host(demo, "e2e-ts-big", port)
    assert [c.split()[0:3] for c, _ in walk("no valid host")] == [
        ["openstack", "server", "show"], ["openstack", "server", "show"], ["openstack", "port", "show"],
        ["minbw", "request", "show"], ["minbw", "request", "show"], ["minbw", "candidate", "list"], ["minbw", "candidate", "list"],
        ["minbw", "drift", "show"], ["AGENT=$(openstack", "network", "agent"], ["openstack", "network", "agent"],
        ["minbw", "usage", "show"], ["minbw", "capacity", "show"]]
    run_checks(walk("no valid host"), dict(cloud.env, SERVER=server.id, PORT=port.id, FLAVOR=demo.flavor.name,
                                           HOST="devstack0"))


def test_the_page_walks_a_physnet_no_host_reports(demo, cloud):
    conn = demo.conn
    net = conn.network.create_network(name="e2e-ts-physnet9", provider_network_type="flat",
                                      provider_physical_network="physnet9")
    demo.networks.append(net)
    conn.network.create_subnet(name="e2e-ts-physnet9", network_id=net.id, ip_version=4, cidr="10.0.9.0/24")
    port = demo.port("e2e-ts-physnet9-port", demo.policy("e2e-ts-small", bw=[("egress", 100)]), network=net)
    server = no_valid_host(demo, "e2e-ts-physnet9", port)
    run_checks(walk("physnet"), dict(cloud.env, SERVER=server.id, PORT=port.id, FLAVOR=demo.flavor.name,
                                     HOST="devstack0"))

