"""The README's tour against a whole cloud, as written, on the mini-cloud (Nova and Neutron): every command exits as
its comment announces (0 here: the cloud's guarantee holds), through both doors (minbw and openstack bandwidth)."""
from __future__ import annotations

import json

from tests.support.tour import expected_exit, run_tour, tour


def test_the_cloud_tour_runs_as_written(cloud, demo):
    """``demo``: the mini-cloud's network e2e-net0 (physnet0), flavor e2e-tiny and image e2e-image the tour uses."""
    lines = tour("cloud")
    assert any(line.startswith("openstack bandwidth") for line in lines)
    try:
        results = run_tour(lines, cloud.env)
    finally:  # whatever happened, devstack0's nova-compute serves again
        (service,) = list(demo.conn.compute.services(binary="nova-compute", host="devstack0"))
        if service.status == "disabled":
            demo.conn.compute.enable_service(service, "devstack0", "nova-compute")
    wrong = [(line, code, out[-2000:]) for line, code, out in results if code != expected_exit(line)]
    assert not wrong, wrong
    audit = json.loads([out for line, _, out in results if line.startswith("openstack bandwidth audit")][0])
    assert audit["ok"] is True and audit["checked"]["providers"] > 0
    counted = next(out for line, _, out in results if line.startswith("minbw capacity show"))
    assert "devstack0" in counted and "COMPUTE_STATUS_DISABLED" in counted and "compute_status_filter" in counted, \
        counted
    assert counted.split()[2] == "0", counted  # host, physnet, fits
    scraped = next(out for line, _, out in results if line.startswith("minbw exporter"))
    assert 'host="devstack0"' in scraped and float(scraped.split()[-1]) > 0, scraped
