"""tests/support/module_forks.py: a module forked from the warm server ends as the same module spawned by Ansible
(its result, a failure's, the clouds.yaml it finds under its own XDG_CONFIG_HOME: openstacksdk's search path), the client exits as its child did
(code, signal), a client killed takes its module with it, and without a server the client runs the module itself."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.support import module_forks
from tests.support.playbook_runner import run_playbook

PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - name: A module that talks to no cloud
      minbw.openstack.agent_config_info:
        agent_configs: ["{ini}"]
        host: devstack0
      register: info
    - name: A module that talks to a cloud that a clouds.yaml of its XDG_CONFIG_HOME names (openstacksdk's search path)
      minbw.openstack.bandwidth_providers_info:
        cloud: minbw-local
      register: providers
      environment:
        XDG_CONFIG_HOME: "{config}"
    - name: One that fails (no such provider)
      minbw.openstack.bandwidth_providers_info:
        cloud: minbw-local
        hypervisor: no-such-host
      register: missing
      ignore_errors: true
      environment:
        XDG_CONFIG_HOME: "{config}"
    - name: The results
      ansible.builtin.set_stats:
        data:
          result: "{{{{ {{'info': info, 'providers': providers, 'missing': missing}} }}}}"
        per_host: false
        aggregate: false
"""


def test_a_forked_module_ends_as_a_spawned_one(placement_server, tmp_path, monkeypatch):
    ini = tmp_path / "ovs.ini"
    ini.write_text("[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1000:1000\n")
    config = tmp_path / "config"
    (config / "openstack").mkdir(parents=True)
    (config / "openstack" / "clouds.yaml").write_text(placement_server.clouds_yaml.read_text())
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(ini=ini, config=config))
    results = {}
    for forked in ("1", "0"):
        monkeypatch.setenv(module_forks.ENABLED, forked)
        run = run_playbook(play, {}, result_file=tmp_path / f"result-{forked}.json",
                           env={k: v for k, v in os.environ.items() if not k.startswith("OS_")})
        assert run.recap["failed"] == 0 and run.recap["ignored"] == 1, run.output
        results[forked] = run.result
    assert results["1"] == results["0"]
    assert results["1"]["missing"]["msg"] == "no resource provider named 'no-such-host'"
    assert not results["1"]["info"]["failed"] and not results["1"]["providers"]["failed"]


def client(*args, **kwargs):
    return subprocess.Popen([module_forks.server()[1], *args], **kwargs)


def test_the_client_exits_as_its_child_and_takes_it_along_when_killed(tmp_path):
    script = tmp_path / "child.py"
    script.write_text("import os, sys, time\n"
                      "print(sys.argv[1:], os.getcwd(), os.environ.get('PROBE'), flush=True)\n"
                      "if sys.argv[1] == 'code': sys.exit(3)\n"
                      "if sys.argv[1] == 'signal': os.kill(os.getpid(), 15)\n"
                      "open(sys.argv[2], 'w').write(str(os.getpid())); time.sleep(120)\n")
    env = dict(os.environ, PROBE="seen")
    done = client(str(script), "code", cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    out, _ = done.communicate(timeout=60)
    assert done.returncode == 3 and out == f"['code'] {tmp_path} seen\n"
    killed = client(str(script), "signal", stdout=subprocess.DEVNULL)
    assert killed.wait(timeout=60) == -signal.SIGTERM
    pid_file = tmp_path / "pid"
    waiting = client(str(script), "wait", str(pid_file), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and waiting.poll() is None
        time.sleep(0.1)
    child = int(pid_file.read_text())
    waiting.kill()  # as Ansible's timeout kills the interpreter it started
    waiting.wait()
    while os.path.exists(f"/proc/{child}"):  # killed and reaped by the server's handler
        assert time.monotonic() < deadline, "the forked child outlived its killed client"
        time.sleep(0.1)


def test_without_a_server_the_client_runs_the_module_itself(tmp_path):
    script = tmp_path / "alone.py"
    script.write_text("import sys; print(sys.executable, sys.argv[1:]); sys.exit(4)\n")
    client_file = module_forks.__file__
    alone = subprocess.run([sys.executable, "-I", "-S", client_file, "--client", str(tmp_path / "no-socket"),
                            str(script), "x"], capture_output=True, text=True, timeout=60)
    assert alone.returncode == 4 and alone.stdout == f"{sys.executable} ['x']\n", alone.stderr
