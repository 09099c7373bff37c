"""OVN parity of the checks on the mini-cloud's ML2/OVN variant (real OVN, Neutron's ML2/OVN with its placement
extension): ``drift show`` without the chassis options compares nothing (Neutron's agent list carries no bandwidth
for OVN chassis) and says so, exit 1, counting the OVN chassis Neutron lists; with ``--ovn-sb-db`` it compares
them. The exporter's drift (``--once``) is a failed report without the options and compares the chassis with
``--ovn-sb-db``."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.support import cli_forks

SIZE = "small=min_bw:egress:1000,min_bw:ingress:1000"


def minbw(cloud, *args: str) -> subprocess.CompletedProcess:
    return cli_forks.run([sys.executable, "-m", "minbw.cli", *args], env=cloud.env, capture_output=True, text=True,
                         timeout=300)


def sample(text: str, series: str) -> float:
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    assert found, f"{series} not in:\n{text}"
    return float(found.group(1))


def test_drift_and_the_exporter_on_ovn_say_what_they_compared(cloud_ovn):
    sb = cloud_ovn.env["MINICLOUD_OVN_SB_DB"]
    nothing = minbw(cloud_ovn, "drift", "show")
    assert nothing.returncode == 1, nothing.stdout + nothing.stderr
    assert "drift compared nothing" in nothing.stderr and "Neutron's agent list shows 2 OVN chassis" in nothing.stderr
    assert "--ovn-sb-db [DB]" in nothing.stderr, nothing.stderr
    compared = minbw(cloud_ovn, "drift", "show", "--ovn-sb-db", sb, "--json")
    assert compared.returncode in (0, 3), compared.stderr
    assert {p["name"].split(":")[0] for p in json.loads(compared.stdout)["providers"]} == {"devstack0", "devstack1"}

    once = minbw(cloud_ovn, "exporter", "--once", "--port-size", SIZE)
    assert once.returncode == 0, once.stderr
    assert sample(once.stdout, 'minbw_report_success{report="drift"}') == 0
    assert "the drift report failed: NothingCompared: drift compared nothing" in once.stderr, once.stderr
    with_sb = minbw(cloud_ovn, "exporter", "--once", "--port-size", SIZE, "--ovn-sb-db", sb)
    assert with_sb.returncode == 0, with_sb.stderr
    assert sample(with_sb.stdout, 'minbw_report_success{report="drift"}') == 1
    assert sample(with_sb.stdout, "minbw_drift_providers") >= 4  # each compute's agent and bridges
