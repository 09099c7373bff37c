"""Bad input at volume, through the modules: generated argument sets for the modules, run in-process
(``main()`` under ansible-core's ``patch_module_args``) against the embedded real Placement. Every one
ends in exit_json/fail_json (never an uncaught exception), a failure's msg names the option and has no
traceback, secrets are never echoed, and nothing is written to Placement. Also: every secret-like option
of every module is ``no_log``, and the modules verify TLS by default."""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import REPO
from tests.functional.test_bad_input_cli import OVS, Sent, tls_server  # noqa: F401 - a fixture

VOLUME = settings(max_examples=250, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SECRET = "s3cr3t-Pa55word"
SECRET_NAMES = re.compile(r"pass(word)?|token|secret|(^|_)key$|credential", re.I)


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """The collection, staged with its core generated (python/build_collection.py --stage), importable as
    ansible_collections.minbw.openstack."""
    root = tmp_path_factory.mktemp("collections")
    subprocess.run([sys.executable, str(REPO / "python" / "build_collection.py"), "--stage",
                    str(root / "ansible_collections" / "minbw" / "openstack")], check=True, capture_output=True)
    sys.path.insert(0, str(root))
    yield
    sys.path.remove(str(root))


def run_module(name: str, args: dict) -> tuple[dict, int]:
    from ansible.module_utils.testing import patch_module_args
    module = importlib.import_module(f"ansible_collections.minbw.openstack.plugins.modules.{name}")
    out = io.StringIO()
    with Sent() as sent, patch_module_args(args), contextlib.redirect_stdout(out):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(out.getvalue()), sent.writes


@pytest.fixture(scope="module")
def cloud(placement_server):
    url = placement_server.url
    return {"auth_type": "admin_token", "auth": {"endpoint": url, "token": "admin"},
            "placement_endpoint_override": url}


bad_scalars = st.sampled_from([None, "", "x", -1, 1.5, [], {}, ["a"], {"a": 1}, "VCPU:1", True])
bad_uuids = st.sampled_from(["x", "", "not-a-uuid", 5])


@st.composite
def module_cases(draw, cloud, tmp):
    name = draw(st.sampled_from(["bandwidth_providers", "allocation", "allocation_candidates_info",
                                 "bandwidth_providers_info", "agent_config", "port_resource_request_info"]))
    base = {"cloud": cloud} if name != "agent_config" else {}
    if name == "bandwidth_providers":
        agent = {"agent_type": draw(st.sampled_from(["openvswitch", "sriov", "linuxbridge", ""])),
                 "host": draw(st.sampled_from(["devstack0", ""])),
                 draw(st.sampled_from(["bridge_mappings", "resource_provider_bandwidths",
                                       "resource_provider_inventory_defaults", "nosuch"])): draw(bad_scalars)}
        args = draw(st.sampled_from([{"agents": [agent]}, {"agent_configs": [str(tmp / "missing.ini")]},
                                     {"agent_configs": [str(tmp / "bad.ini")]}, {"agents": "x"},
                                     {"agents": [agent], "root_inventories": draw(bad_scalars)}]))
    elif name in ("allocation", "allocation_candidates_info"):
        args = {draw(st.sampled_from(["resources", "required", "port_requests", "limit", "group_policy",
                                      "in_tree", "separation"])): draw(bad_scalars)}
        if name == "allocation":
            args.update(consumer=draw(bad_uuids), project_id="p", user_id="u")
    elif name == "bandwidth_providers_info":
        args = {draw(st.sampled_from(["hypervisor", "nosuch", "cloud"])): draw(bad_scalars)}
    elif name == "agent_config":
        args = {"path": str(tmp / draw(st.sampled_from(["ovs.ini", "missing.ini", "bad.ini"]))),
                "agent_type": draw(st.sampled_from(["openvswitch", "sriov", "x"])),
                # (a str option takes what Ansible converts to a string, e.g. ['a'] -> "['a']")
                draw(st.sampled_from(["bridge_mappings", "resource_provider_bandwidths",
                                      "resource_provider_inventory_defaults"])): draw(bad_scalars)}
    else:
        args = {"port_id": draw(bad_uuids), "rules": draw(st.sampled_from([[{"type": "minimum_bandwidth"}],
                                                                           "x", [{"min_kbps": -1}], [1]])),
                "vnic_type": draw(st.sampled_from(["normal", "bogus", ""]))}
    return name, {**base, **args, "_ansible_check_mode": draw(st.booleans())}


COUNT = {"failed": 0, "ok": 0}


@VOLUME
@given(data=st.data())
def test_generated_module_arguments_fail_cleanly_and_write_nothing(collection, cloud, tmp_path_factory, data):
    tmp = tmp_path_factory.getbasetemp() / "modargs"
    if not tmp.exists():
        tmp.mkdir()
        (tmp / "ovs.ini").write_text(OVS)
        (tmp / "bad.ini").write_text(OVS.replace("br-test:1000:1000", "br-test:x"))
    name, args = data.draw(module_cases(cloud, tmp))
    result, writes = run_module(name, args)
    text = json.dumps(result)
    assert "Traceback" not in result.get("msg", "") and "Traceback" not in result.get("module_stderr", "")
    assert SECRET not in text
    if result.get("failed"):
        COUNT["failed"] += 1
        assert result["msg"].strip(), result
        assert writes == 0, (name, args, result)
        # no files left changed either: bad values never reach the file
        assert (tmp / "ovs.ini").read_text() == OVS
    else:
        COUNT["ok"] += 1


def test_generated_module_arguments_were_mostly_refused():
    assert COUNT["failed"] > 150 and COUNT["ok"] > 0, COUNT


def _specs():
    """Every argument spec the modules build (dict literals of main() and the shared specs), walked from
    the source: option name -> its spec dict, with the file it is in."""
    files = sorted((REPO / "plugins" / "modules").glob("*.py")) + sorted((REPO / "plugins" / "module_utils").glob("*.py"))
    for path in files:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and isinstance(node.value, ast.Call) and \
                    getattr(node.value.func, "id", None) == "dict":
                kw = {k.arg: k.value for k in node.value.keywords}
                if "type" in kw:
                    yield path.name, node.arg, kw


def test_every_secret_like_option_is_no_log():
    specs = list(_specs())
    assert len(specs) > 100  # the walk found the modules' options
    secret = [(f, name, kw) for f, name, kw in specs if SECRET_NAMES.search(name) or name == "auth"]
    assert {name for _, name, _ in secret} >= {"auth", "client_key"}
    for f, name, kw in secret:
        no_log = kw.get("no_log")
        assert isinstance(no_log, ast.Constant) and no_log.value is True, f"{f}: option {name} needs no_log=True"


def test_secrets_in_cloud_dicts_are_never_echoed(collection, placement_server):
    """A cloud config dict (cloud, service_cloud) carries a password: a failure never shows it."""
    url = placement_server.url
    result, writes = run_module("bandwidth_providers_info", {"cloud": {
        "auth": {"auth_url": url, "username": "u", "password": SECRET, "project_name": "p",
                 "user_domain_name": "Default", "project_domain_name": "Default"}}})
    assert result["failed"] and SECRET not in json.dumps(result) and writes == 0, result
    assert url in result["msg"] and "Fix:" in result["msg"], result["msg"]


def test_module_untrusted_certificate(collection, tls_server):
    url, cert = tls_server
    cloud = {"auth_type": "admin_token", "auth": {"endpoint": url, "token": "admin"},
             "placement_endpoint_override": url}
    result, _ = run_module("bandwidth_providers_info", {"cloud": cloud})
    assert result["failed"] and "certificate could not be verified" in result["msg"], result
    assert "ca_cert" in result["msg"] and "validate_certs: false" in result["msg"], result["msg"]
    with_ca, _ = run_module("bandwidth_providers_info", {"cloud": dict(cloud, cacert=str(cert))})
    assert "certificate could not be verified" not in with_ca.get("msg", ""), with_ca
    # the modules leave verification to openstacksdk's default (on) unless validate_certs says otherwise
    from ansible_collections.minbw.openstack.plugins.module_utils.base import AUTH_ARGUMENT_SPEC
    assert AUTH_ARGUMENT_SPEC["validate_certs"].get("default") is None
