"""openstack.cloud's common options in minbw's modules: one module_defaults for both collections (a playbook
against the embedded Placement, the SDK log it asked for), and the option names and defaults themselves
(the modules' argument specs, validated by Ansible's own validator)."""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from tests.support.playbook_runner import run_playbook

# conftest's session fixture installs the collection here (ansible.cfg's collections_path).
COLLECTIONS = Path(sys.executable).parent.parent / "collections"


def collection_module(name: str):
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))
    return importlib.import_module(f"ansible_collections.minbw.openstack.plugins.{name}")


def test_one_module_defaults_with_sdk_log(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file, sdk_log = tmp_path / "result.json", tmp_path / "sdk.log"
    r = playbook("openstack_cloud_options.yml", dict(port=port, state_dir=str(state_dir), sdk_log=str(sdk_log),
                                                     result_file=str(result_file)))
    assert not r.failed and r.recap["ignored"] == 2, r.output
    res = json.loads(result_file.read_text())
    assert res["info"]["providers"] == [] and res["candidates"]["count"] == 0
    assert res["move"]["failed"] and res["move"]["msg"].startswith("wait=false: server_move always waits"), res["move"]
    # openstack.cloud.server is in the group: the task's group defaults named the cloud it looked for
    assert res["server"]["failed"] and "minbw-nowhere" in res["server"]["msg"], res["server"]
    # sdk_log_level DEBUG: keystoneauth's request lines for both modules' calls, to this Placement
    log = sdk_log.read_text()
    for path in ("resource_providers", "allocation_candidates?resources=VCPU%3A1"):
        assert f"GET call to placement for http://127.0.0.1:{port}/{path} used request id" in log, log[-2000:]


def test_common_options_as_openstack_cloud_names_them():
    base = collection_module("module_utils.base")
    got = ArgumentSpecValidator(base.AUTH_ARGUMENT_SPEC).validate({"cloud": "c"})
    assert not got.error_messages
    # openstack.cloud 2.5's openstack_full_argument_spec defaults (module_utils/openstack.py)
    p = got.validated_parameters
    assert (p["wait"], p["timeout"], p["sdk_log_path"], p["sdk_log_level"], p["interface"]) == (
        True, 180, None, "INFO", "public")
    bad = ArgumentSpecValidator(base.AUTH_ARGUMENT_SPEC).validate({"sdk_log_level": "WARNING"})
    assert bad.error_messages == ["value of sdk_log_level must be one of: INFO, DEBUG, got: WARNING"]


@pytest.mark.parametrize("params, expected", [
    ({"sdk_log_path": None, "sdk_log_level": "DEBUG"}, None),
    ({"sdk_log_path": "/tmp/sdk.log", "sdk_log_level": "INFO"}, dict(debug=False, http_debug=False, path="/tmp/sdk.log")),
    ({"sdk_log_path": "/tmp/sdk.log", "sdk_log_level": "DEBUG"}, dict(debug=True, http_debug=True, path="/tmp/sdk.log")),
])
def test_sdk_logging_as_openstack_cloud_sets_it(params, expected):
    assert collection_module("module_utils.base").sdk_logging_kwargs(params) == expected


def test_port_takes_openstack_cloud_port_names():
    base, port = collection_module("module_utils.base"), collection_module("modules.port")
    spec = dict(base.AUTH_ARGUMENT_SPEC, **port.ARGUMENT_SPEC)
    got = ArgumentSpecValidator(spec).validate({
        "name": "port-direct-qos", "binding_vnic_type": "direct",
        "fixed_ips": [{"subnet_id": "subnet0", "ip_address": "10.0.4.20"}]})
    assert not got.error_messages
    p = got.validated_parameters
    assert p["vnic_type"] == "direct"
    assert p["fixed_ips"][0]["subnet"] == "subnet0" and p["fixed_ips"][0]["ip_address"] == "10.0.4.20"
    # the use case maps the fixed IP entry by the module's own name (no Neutron lookup for an entry without a subnet)
    from minbw.usecases.port import fixed_ip
    assert fixed_ip(None, {"subnet": None, "ip_address": "10.0.4.20"}) == {"ip_address": "10.0.4.20"}


def test_module_runs_reuse_the_sdk_entry_point_cache(placement_server, tmp_path):
    """keystoneauth1 finds the auth plugin through stevedore, whose entry-point cache is keyed on sys.path, and
    each module run has its own payload on sys.path: without module_utils.base.connect every run read every
    installed distribution's entry points again and left one more cache file. Three runs, one file."""
    if sys.executable.startswith("/tmp"):  # stevedore's own rule (stevedore/_cache.py): it writes no cache then
        pytest.skip("stevedore keeps no entry-point cache for a Python under /tmp (this venv's is)")
    book = tmp_path / "three.yml"
    task = {"minbw.openstack.bandwidth_capacity_info": {"cloud": "minbw-local", "resources": {"VCPU": 1}}}
    book.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [task] * 3}]))
    cache = tmp_path / "cache"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), OS_CLIENT_CONFIG_FILE=str(placement_server.clouds_yaml))
    r = run_playbook(book, {}, env=env)
    assert not r.failed and r.recap["ok"] == 3, r.output
    assert len(list((cache / "python-entrypoints").iterdir())) == 1
