"""tests/support/cli_forks.py: a `minbw` command forked from the warm server answers as the same command run as a
process of its own (``python -m minbw.cli``): the same exit code, output and error, with the caller's environment,
working directory and timeout."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import MINBW, free_port, wipe
from tests.support import cli_forks

OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:1000:1000
"""
PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"


def both(args, env, **kwargs):
    forked = cli_forks.run(MINBW + args, env=env, capture_output=True, text=True, timeout=120, **kwargs)
    alone = subprocess.run(MINBW + args, env=env, capture_output=True, text=True, timeout=120, check=False, **kwargs)
    return forked, alone


@pytest.mark.parametrize("args", [
    ["--version"],  # cliff's App.NAME, taken from sys.argv[0] when cliff is imported
    ["no-such-command"],
    ["provider", "sync", "--workers", "99"],  # a usage error: 2
    ["request", "show", "--port-id", PORT, "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000"],
    ["provider", "sync", "--agent-config", "openvswitch_agent.ini", "--dry-run", "--json"],  # relative to the cwd
    ["provider", "sync", "--agent-config", "missing.ini"],
    ["--os-cloud", "no-such-cloud", "usage", "show"],
])
def test_a_forked_command_answers_as_the_process(placement, placement_server, tmp_path, monkeypatch, args):
    (tmp_path / "openvswitch_agent.ini").write_text(OVS)
    monkeypatch.chdir(tmp_path)
    forked, alone = both(args, placement_server.env())
    assert (forked.returncode, forked.stdout, forked.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert forked.args == MINBW + args


def test_a_write_answers_as_the_process(placement, placement_server, tmp_path, monkeypatch):
    (tmp_path / "openvswitch_agent.ini").write_text(OVS)
    monkeypatch.chdir(tmp_path)
    args = MINBW + ["provider", "sync", "--agent-config", "openvswitch_agent.ini", "--create-root", "--no-cache",
                    "-f", "value", "-c", "write"]
    forked = cli_forks.run(args, env=placement_server.env(), capture_output=True, text=True, timeout=120)
    made = {p.name for p in placement.list_providers()}
    wipe(placement)
    alone = subprocess.run(args, env=placement_server.env(), capture_output=True, text=True, timeout=120, check=False)

    def providers(out):  # the traits a run made stay (wipe removes the providers), so the second makes none
        return [line for line in out.splitlines() if not line.startswith("create trait")]
    assert (forked.returncode, providers(forked.stdout), forked.stderr) == (alone.returncode, providers(alone.stdout), alone.stderr)
    assert "create provider devstack0:Open vSwitch agent:br-test" in forked.stdout
    assert made == {p.name for p in placement.list_providers()} and "devstack0" in made


def test_clouds_yaml_is_found_where_the_caller_runs(placement_server, tmp_path, monkeypatch):
    """openstacksdk computes its clouds.yaml search path (the working directory first, then ~/.config/openstack)
    when it is imported, which the server did in its own directory and home: a forked command finds the caller's
    files, as the process does (tests/support/forks.py, IMPORT_TIME)."""
    (tmp_path / "clouds.yaml").write_text(placement_server.clouds_yaml.read_text())
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in placement_server.env().items() if k not in ("OS_CLIENT_CONFIG_FILE", "OS_CLOUD")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"))
    forked, alone = both(["--os-cloud", "minbw-local", "usage", "show", "-f", "value"], env)
    assert alone.returncode == 0, alone.stderr
    assert (forked.returncode, forked.stdout, forked.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_the_environment_is_the_callers(placement_server):
    env = {**placement_server.env(), "OS_PLACEMENT_API_VERSION": "one"}
    forked, alone = both(["usage", "show"], env)
    assert forked.returncode == alone.returncode == 2, forked.stderr
    # the usage lists the auth plugins in an order of each process's own (stevedore's entry points): its last line
    assert forked.stderr.splitlines()[-1] == alone.stderr.splitlines()[-1]
    assert "got 'one'" in forked.stderr and "OS_PLACEMENT_API_VERSION" not in cli_forks.os.environ


def test_a_timeout_kills_the_command(placement_server):
    args = MINBW + ["exporter", "--no-neutron", "--listen-port", str(free_port())]
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        cli_forks.run(args, env=placement_server.env(), capture_output=True, text=True, timeout=3)
    assert expired.value.cmd == args and expired.value.timeout == 3


def test_other_command_lines_are_run_as_processes(tmp_path):
    done = cli_forks.run([sys.executable, "-c", "import os; print(os.getppid())"], capture_output=True, text=True)
    assert done.returncode == 0 and int(done.stdout) == cli_forks.os.getpid()
    assert not cli_forks.is_minbw(["minbw", "--help"]) and cli_forks.is_minbw(MINBW + ["--help"])
