"""What moves a resource provider's generation in the real (embedded) Placement: the reproducer of
docs/placement-generations.md, run as the page shows it, against stock openstack-placement 16.0.0, where
``DELETE /allocations/{consumer}`` frees the usage and leaves the generation where it was, and so does a ``PUT
/allocations/{consumer}`` that moves the consumer to another provider on the provider it leaves (exit 1), while
freeing with ``PUT /allocations/{consumer}`` and empty allocations moves it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import doc_commands

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "placement-generations.md"
STEP = re.compile(r"^  (?P<what>\S.*?)\s+generation (?P<generation>\d+), usage (?P<usage>\d+)$", re.M)


def test_the_documented_reproducer_reproduces_on_stock_placement(placement, placement_server):
    commands = doc_commands(DOC, "## Reproduce it")
    assert commands == [f"python3 patches/placement/reproduce_delete_generation.py --os-cloud {placement_server.cloud}"]
    # what `export OS_CLIENT_CONFIG_FILE=...` sets, for this test's server; python3: the venv's (openstacksdk)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "OS_CLIENT_CONFIG_FILE": str(placement_server.clouds_yaml)}
    env.pop("OS_CLOUD", None)
    r = subprocess.run(["bash", "-c", commands[0]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    print(r.stdout + r.stderr)
    assert r.returncode == 1, r.stdout + r.stderr
    steps = [(m["what"], int(m["generation"]), int(m["usage"])) for m in STEP.finditer(r.stdout)]
    assert [what for what, _, _ in steps] == [
        "PUT /resource_providers/{uuid}/inventories (8 units)",
        "PUT /allocations/{consumer 1} (2 units)", "DELETE /allocations/{consumer 1}",
        "PUT /allocations/{consumer 2} (2 units)", "PUT /allocations/{consumer 2} {} (consumer generation 1)",
        "PUT /allocations/{consumer 3} (2 units)", "provider 2, before the move",
        "PUT /allocations/{consumer 3} (2 units on provider 2)", "provider 2, after the move"]
    ((_, g_inv, _), (_, g_claim, u_claim), (_, g_delete, u_delete), (_, g_claim2, u_claim2), (_, g_put, u_put),
     (_, g_claim3, u_claim3), (_, g2_before, u2_before), (_, g_move, u_move), (_, g2_after, u2_after)) = steps
    # the DELETE freed the usage and left the generation where the claim put it ...
    assert (u_claim, u_delete) == (2, 0) and g_delete == g_claim == g_inv + 1
    # ... while every other write moved it by one, freeing with PUT {} included
    assert (u_claim2, u_put) == (2, 0) and (g_claim2, g_put) == (g_delete + 1, g_delete + 2)
    # the move freed the usage of the provider it left and left its generation where the claim put it, while the
    # provider it moved to, a new one, moved from its inventory's 1 to 2
    assert (u_claim3, u_move) == (2, 0) and g_move == g_claim3 == g_put + 1
    assert (g2_before, u2_before, g2_after, u2_after) == (1, 0, 2, 2)
    assert r.stdout.splitlines()[-2:] == [
        f"DELETE freed 2 units and left the generation at {g_claim}; PUT {{}} freed 2 units and moved it from "
        f"{g_claim2} to {g_put}: reproduced",
        f"the move freed 2 units and left the generation at {g_move} (provider 2's moved from 1 to 2): reproduced"]
    # cleaned up: neither provider (Placement deletes none holding allocations), no class
    assert not [p for p in placement.list_providers() if p.name.startswith("delete-generation-repro-")]
    classes = placement.request("get", "/resource_classes", "1.28")["resource_classes"]
    assert "CUSTOM_DELETE_GENERATION_REPRO" not in {c["name"] for c in classes}
