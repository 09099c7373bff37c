"""The README's tour against a whole cloud, as written, on the mini-cloud (Nova and Neutron): every command exits as
its comment announces (0 here: the cloud's guarantee holds), through both doors (minbw and openstack bandwidth)."""
from __future__ import annotations

import json

from tests.support.tour import expected_exit, run_tour, tour


def test_the_cloud_tour_runs_as_written(cloud):
    lines = tour("cloud")
    assert any(line.startswith("openstack bandwidth") for line in lines)
    results = run_tour(lines, cloud.env)
    wrong = [(line, code, out[-2000:]) for line, code, out in results if code != expected_exit(line)]
    assert not wrong, wrong
    audit = json.loads([out for line, _, out in results if line.startswith("openstack bandwidth audit")][0])
    assert audit["ok"] is True and audit["checked"]["providers"] > 0
