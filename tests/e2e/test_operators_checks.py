"""docs/operators.md's checks, run as written: those for Open vSwitch and SR-IOV on the mini-cloud (its compute
devstack0 and the ini files its agents read), those for ML2/OVN on its OVN variant (the real southbound database,
read with ovn-sbctl as the guide's SBCTL says). Every command exits 0 and prints what the guide shows (the lines
shown, in order; `...` stands for lines left out, and runs of spaces count as one).

The helpers here also run docs/troubleshooting.md (tests/e2e/test_troubleshooting.py): a command there may announce
another exit code (``# exit 4: ...``), and ``<...>`` in a line shown stands for one word that differs from run to
run (an id, a generation)."""
from __future__ import annotations

import re
from pathlib import Path

from tests.support.tour import expected_exit, run_tour

REPO = Path(__file__).resolve().parents[2]
OPERATORS = REPO / "docs" / "operators.md"
PLACEHOLDER = re.compile(r"<[^<>]+>")


def checks(text: str, name: str = "after the rollout", kind: str = "checks") -> list[tuple[str, list[str]]]:
    """(command, the output shown) of each ``$ `` line of the console blocks between the markers
    ``<!-- KIND: NAME -->`` and ``<!-- KIND: end -->``."""
    section = re.search(rf"<!-- {kind}: {re.escape(name)} -->(.*?)<!-- {kind}: end -->", text, re.S)
    assert section, f"no {kind} section {name!r}"
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section.group(1), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def _pattern(line: str) -> re.Pattern:
    return re.compile(r"\S+".join(re.escape(part) for part in PLACEHOLDER.split(" ".join(line.split()))))


def shows(expected: list[str], output: str) -> bool:
    """Whether ``output`` has the ``expected`` lines in order (``...`` skips any number of lines, ``<...>`` is any
    one word)."""
    want = [_pattern(line) for line in expected if line.strip() != "..."]
    i = 0
    for line in output.splitlines():
        if i < len(want) and want[i].fullmatch(" ".join(line.split())):
            i += 1
    return i == len(want)


def run_checks(found: list[tuple[str, list[str]]], env: dict) -> None:
    """Run the commands in one bash; each exits 0 (or as its comment announces) and shows what is shown."""
    results = run_tour([c for c, _ in found], env)
    wrong = [(command, code, out[-3000:]) for (command, expected), (_, code, out) in zip(found, results)
             if code != expected_exit(command) or not shows(expected, out)]
    assert not wrong, wrong


def test_the_checks_run_as_written_and_print_what_the_guide_shows(cloud):
    found = checks(OPERATORS.read_text())
    assert [c.split()[0:3] for c, _ in found] == [
        ["openstack", "extension", "show"], ["AGENT=$(openstack", "network", "agent"],
        ["openstack", "network", "agent"], ["openstack", "network", "agent"], ["minbw", "drift", "show"],
        ["minbw", "provider", "list"], ["minbw", "capacity", "show"]]
    run_checks(found, dict(cloud.env, HOST="devstack0", OVS_INI=str(cloud.ovs_ini), SRIOV_INI=str(cloud.sriov_ini)))


def test_the_ovn_checks_run_as_written_and_print_what_the_guide_shows(cloud_ovn):
    found = checks(OPERATORS.read_text(), "ovn")
    assert [c.split()[0:3] for c, _ in found] == [
        ["openstack", "extension", "show"], ["CHASSIS=$($SBCTL", "--bare", "--columns=name"],
        ["$SBCTL", "get", "Chassis"], ["$SBCTL", "get", "Chassis"], ["openstack", "network", "agent"],
        ["minbw", "drift", "show"], ["minbw", "provider", "list"], ["minbw", "capacity", "show"]]
    # SBCTL as the guide gives it for a southbound reached over TCP
    run_checks(found, dict(cloud_ovn.env, HOST="devstack0",
                           SBCTL=f"ovn-sbctl --db={cloud_ovn.env['MINICLOUD_OVN_SB_DB']}"))


def test_the_matcher_can_fail():
    assert shows(["a", "...", "c"], "a\nb\nc\n") and shows(["a  |  b"], "a | b")
    assert not shows(["c", "a"], "a\nb\nc\n") and not shows(["x"], "a\n")
    assert shows(['"id": "<group id>",', "...", "c"], '"id": "63fd-1",\nb\nc\n')
    assert not shows(['"id": "<group id>",'], '"id": "a b",\n') and not shows(["a.b"], "axb\n")
