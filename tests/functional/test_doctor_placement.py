"""``minbw doctor`` on the embedded Placement, a cloud of Placement alone: Placement's microversion checked, Neutron
and Nova skipped naming why, what no API shows listed with where to look; exit 0 (nothing warns or fails). The
checks against Neutron and Nova: tests/e2e/test_doctor_cloud.py."""
from __future__ import annotations

import json

from tests.conftest import MINBW
from tests.support import cli_forks


def test_doctor_on_placement_alone(placement, placement_server):
    out = cli_forks.run(MINBW + ["doctor", "--json"], env=placement_server.env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    checks = {c["name"]: c for c in shown["checks"]}
    assert shown["status"] == "ok"
    assert checks["placement microversion"]["status"] == "ok"
    assert checks["Neutron"]["status"] == "skip" and "no network service" in checks["Neutron"]["detail"]
    assert checks["Nova"]["status"] == "skip"
    assert "placement.conf" in checks["placement allocation_conflict_retry_count"]["fix"]
    pinned = cli_forks.run(MINBW + ["--os-placement-api-version", "1.36", "doctor", "-f", "value", "-c", "check",
                                     "-c", "status"], env=placement_server.env(), capture_output=True, text=True,
                            timeout=120)
    assert pinned.returncode == 0, pinned.stderr
    assert "placement microversion ok" in pinned.stdout  # the server's own: a pin caps minbw, not Placement
