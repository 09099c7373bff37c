"""``minbw doctor`` on the mini-cloud (real Keystone, Placement, Neutron, Nova): the checks an operator runs before
enabling guarantees read what each service shows. The default cloud: Neutron's QoS extensions, its OVS and SR-IOV
agents alive with the qos extension and reporting bandwidth, Neutron's placement plugin writing the providers
(their ``resources_synced``), Nova's API at 2.72 or later and its nova-compute services up, every one at
service version 73 (Nova 34). With Neutron's placement plugin off (test_plugin_off.py's cloud): minbw's sync
writes them."""
from __future__ import annotations

import json
import sys

from tests.support import cli_forks


def _doctor(env) -> tuple[int, dict]:
    out = cli_forks.run([sys.executable, "-m", "minbw.cli", "doctor", "--json"], env=env, capture_output=True,
                        text=True, timeout=300)
    assert out.returncode in (0, 3), out.stdout + out.stderr
    shown = json.loads(out.stdout)
    assert (out.returncode == 3) == (shown["status"] in ("warn", "fail")), shown
    return out.returncode, {c["name"]: c for c in shown["checks"]}


def test_doctor_reads_each_service(cloud):
    _, checks = _doctor(cloud.env)
    ok = {name for name, c in checks.items() if c["status"] == "ok"}
    assert {"placement microversion", "neutron extension qos", "neutron extension port-resource-request",
            "neutron extension port-resource-request-groups", "agents reporting bandwidth", "agents alive",
            "agents' qos extension", "compute microversion", "nova-compute services",
            "nova-compute versions"} <= ok, {n: (c["status"], c["detail"]) for n, c in checks.items()}
    assert "Neutron's placement plugin writes the providers" in checks["provider writer"]["detail"], checks
    assert "service version 73" in checks["nova-compute versions"]["detail"]
