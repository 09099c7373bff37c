"""docs/operators.md's checks after the rollout, run as written on the mini-cloud (its compute devstack0 and the ini
files its agents read): every command exits 0 and prints what the guide shows (the lines shown, in order; `...`
stands for lines left out, and runs of spaces count as one)."""
from __future__ import annotations

import re
from pathlib import Path

from tests.support.tour import run_tour

REPO = Path(__file__).resolve().parents[2]
OPERATORS = REPO / "docs" / "operators.md"


def checks(text: str) -> list[tuple[str, list[str]]]:
    """(command, the output shown) of each ``$ `` line of the console blocks between the checks markers."""
    section = re.search(r"<!-- checks: after the rollout -->(.*?)<!-- checks: end -->", text, re.S)
    assert section, "docs/operators.md has no checks section"
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section.group(1), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def _normal(line: str) -> str:
    return " ".join(line.split())


def shows(expected: list[str], output: str) -> bool:
    """Whether ``output`` has the ``expected`` lines in order (``...`` skips any number of lines)."""
    lines = [_normal(line) for line in output.splitlines()]
    want = [_normal(line) for line in expected if line.strip() != "..."]
    i = 0
    for line in lines:
        if i < len(want) and line == want[i]:
            i += 1
    return i == len(want)


def test_the_checks_run_as_written_and_print_what_the_guide_shows(cloud):
    found = checks(OPERATORS.read_text())
    assert [c.split()[0:2] for c, _ in found] == [["openstack", "extension"], ["AGENT=$(openstack", "network"],
                                                  ["openstack", "network"], ["minbw", "drift"],
                                                  ["minbw", "providers"], ["minbw", "capacity"]]
    env = dict(cloud.env, HOST="devstack0", OVS_INI=str(cloud.ovs_ini), SRIOV_INI=str(cloud.sriov_ini))
    results = run_tour([c for c, _ in found], env)
    wrong = [(command, code, out[-3000:]) for (command, expected), (_, code, out) in zip(found, results)
             if code != 0 or not shows(expected, out)]
    assert not wrong, wrong


def test_the_matcher_can_fail():
    assert shows(["a", "...", "c"], "a\nb\nc\n") and shows(["a  |  b"], "a | b")
    assert not shows(["c", "a"], "a\nb\nc\n") and not shows(["x"], "a\n")
