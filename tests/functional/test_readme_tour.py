"""The README's tour on the embedded Placement, as a new user runs it: in the virtualenv README.md's install block
makes (tests/support/tour.py's ``tour_venv``: the block as written, in a home of its own, nothing of the developers'
``.venv`` on PATH), every command in order, as written; each exits as its comment announces (0 unless it says
otherwise)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.support.tour import README, expected_exit, run_tour, tour, tour_venv, user_env

STATE = "/tmp/pl"  # the tour's own paths, as written


@pytest.fixture(scope="module")
def venv():
    """(the install block's virtualenv, its home); made once per pyproject.toml and block (``make tour-venv``)."""
    return tour_venv()


def _stop(venv: os.PathLike):
    subprocess.run([str(venv / "bin/minbw"), "placement", "stop", "--state-dir", STATE], capture_output=True,
                   timeout=120)
    shutil.rmtree(STATE, ignore_errors=True)


@pytest.fixture
def fresh(venv):
    _stop(venv[0])
    shutil.rmtree(venv[1] / ".cache" / "minbw", ignore_errors=True)  # the provider cache of an earlier run
    yield
    _stop(venv[0])


def test_the_install_block_made_a_users_venv(venv):
    """Only what the block installs: minbw's dependencies and extras, none of the developers' test tools."""
    python = venv[0] / "bin/python"
    have = subprocess.run([str(python), "-c", "import minbw, placement, matplotlib, prometheus_client, openstackclient;"
                           "print(minbw.__file__)"], capture_output=True, text=True)
    assert have.returncode == 0, have.stderr
    assert have.stdout.startswith(str(venv[0])), have.stdout  # installed from python/, not the checkout's sources
    for absent in ("pytest", "neutron_lib"):
        assert subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True).returncode != 0, absent


def test_the_tour_runs_as_written(venv, fresh):
    lines = tour("embedded")
    assert lines[0].startswith("minbw placement serve") and lines[-1].startswith("minbw placement stop")
    bin_dir, home = venv[0] / "bin", venv[1]
    # the user's shell after the install block: its virtualenv active; only what the tour exports of OS_*
    env = dict(user_env(home), VIRTUAL_ENV=str(venv[0]), PATH=f"{bin_dir}{os.pathsep}{user_env(home)['PATH']}")
    results = run_tour(lines, env, own_path=True)
    wrong = [(line, code, out[-2000:]) for line, code, out in results if code != expected_exit(line)]
    assert not wrong, wrong
    # what the tour shows is what it says
    assert "unchanged: consumer 7b1f3a86-2c1d-4a8e-9f21-5d0c3b6e4a10 already holds this claim" in \
        [out for line, _, out in results if "again: unchanged" in line][0]
    assert "No valid host" in [out for line, _, out in results if "exit 4" in line][0]
    assert "set inventories of devstack1" in [out for line, _, out in results if "corrects a root" in line][0]
    assert [out for line, _, out in results if line.startswith("openstack bandwidth")][0].splitlines() == [
        "devstack1", "devstack1:Open vSwitch agent", "devstack1:Open vSwitch agent:br-ex",
        "devstack1:Open vSwitch agent:br-test"]
    moved = next(out for line, _, out in results if line.startswith("minbw allocation migrate --consumer"))
    assert "moved consumer 7b1f3a86-2c1d-4a8e-9f21-5d0c3b6e4a10 from devstack0 → devstack1" in moved
    assert os.path.getsize("/tmp/capacity.png") > 1000


def test_a_wrong_exit_fails_the_tour():
    """The runner can fail: an unannounced non-zero exit and an announced one that does not come are both seen."""
    text = "<!-- tour: t -->\n```\nfalse\ntrue   # exit 3: announced, but it exits 0\nexit_code=4   # not a command that fails\n```\n"
    lines = tour("t", text)
    results = run_tour(lines, dict(os.environ))
    assert [(code, expected_exit(line)) for line, code, _ in results] == [(1, 0), (0, 3), (0, 0)]
    assert README.exists()
