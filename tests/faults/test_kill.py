"""``kill -9`` of ``minbw provider sync`` (three hosts; real processes) at random points: the proxy
SIGKILLs the process at its k-th request to Placement (k seeded), either before forwarding that request
or after Placement applied it (the answer never reaches the dead process). Then the re-run converges,
leaves no stray or half-made provider, and a second re-run makes 0 writes."""
from __future__ import annotations

import json
import random
import subprocess
import sys

from minbw.ops import sync as s
from tests.conftest import MINBW, REPO
from tests.support.faults.proxy import Rule
from tests.faults.test_faults import OVS, SRIOV, desired, root

HOSTS = ("k0", "k1", "k2")
TRIALS = 20  # a fixed number (no time budget): about 1 s each idle, 4 s at load average 28 on 2 cores
SEED = 20261123


def agent_files(tmp_path, hosts=HOSTS) -> list[str]:
    args = []
    for h in hosts:
        for name, text in (("ovs", OVS), ("sriov", SRIOV)):
            f = tmp_path / f"{h}-{name}.ini"
            f.write_text(text.format(host=h))
            args += ["--agent-config", str(f)]
    return args


def drop_agents(direct, roots) -> None:
    """Back to bare compute nodes: every provider but the roots removed (children first)."""
    provs = [p for p in direct.list_providers() if p.uuid not in roots]
    for p in sorted(provs, key=lambda p: p.parent_uuid in roots):  # devices before agents
        direct.delete_provider(p.uuid)


class Forker:
    """tests/support/faults/forker.py: one real process per run, forked from a pre-imported minbw."""

    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.faults.forker"], env=env, cwd=REPO, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run_all(self, runs: list[dict], before=lambda pids: None) -> list[int]:
        """Fork one process per ``{"argv", "out"}``, call ``before(pids)``, start them all at once, wait."""
        self.proc.stdin.write(json.dumps(runs) + "\n")
        self.proc.stdin.flush()
        pids = json.loads(self.proc.stdout.readline())
        before(pids)
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def run(self, argv, before=lambda pid: None) -> int:
        return self.run_all([{"argv": argv}], lambda pids: before(pids[0]))[0]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_kill_9_at_random_points_then_rerun_converges(placement, proxied, tmp_path):
    roots = {root(placement, h) for h in HOSTS}
    want = desired(*HOSTS)
    argv = ["provider", "sync", *agent_files(tmp_path), "-f", "value"]
    proxy = proxied.proxy
    rng = random.Random(SEED)
    forker = Forker(proxied.env())
    try:
        # a clean run: a real subprocess of the CLI, as an operator runs it; it also creates the traits
        first = subprocess.run(MINBW + argv, env=proxied.env(), capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stderr
        drop_agents(placement, roots)
        proxy.clear()
        assert forker.run(argv) == 0
        requests = len(proxy.log)  # what a sync of bare compute nodes sends: the kill lands among them
        outcomes = []
        for trial in range(TRIALS):
            drop_agents(placement, roots)
            proxy.clear()
            k, forward = rng.randint(1, requests), rng.random() < 0.5
            code = forker.run(argv, lambda pid: proxy.add(Rule("*", "", "kill", nth=(k,), pid=pid, forward=forward)))
            assert code == -9, (trial, k, code)
            applied = [(x.method, x.path) for x in proxy.log if x.method != "GET" and x.status is not None]
            outcomes.append((k, forward, len(applied)))
            proxy.clear()
            # the re-run (in process, straight to Placement) ...
            s.sync_providers(placement, want)
            # ... converged: a second re-run plans and makes 0 writes (nothing missing or half-made) ...
            placement.counter.reset()
            plan2, result2 = s.sync_providers(placement, want)
            assert plan2.ops == () and result2 is None and placement.counter.writes == 0, (trial, k, forward)
            # ... and nothing stray
            assert {p.uuid for p in placement.list_providers()} == {p.uuid for p in want.providers} | roots
    finally:
        forker.close()
    assert len(outcomes) == TRIALS, outcomes
    # killed at different points, some right after Placement applied a write whose answer was lost
    assert len({o[2] for o in outcomes}) >= 4 and any(o[1] and o[2] for o in outcomes), outcomes
    print("kill -9 trials (k-th request, forwarded, writes applied before the kill):", outcomes)
