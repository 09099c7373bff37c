"""openstack.cloud with the openstacksdk minbw installs (docs: README.collection.md, "Requirements"): 2.6.0, the
newest on PyPI (ansible 14.5.0's copy, unchanged) and the lowest galaxy.yml accepts, runs against the embedded
Placement; 2.5.0 (ansible 12.3.0's copy) fails before it connects, with openstacksdk 4.15 and later, because it
reads ``openstack.version``, which ``import openstack`` no longer imports (the reproduction of that upstream
quirk), and runs where openstacksdk is older (4.14, what README.collection.md tells users who keep 2.5.0)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
VENV_COLLECTIONS = BIN.parent / "collections"  # install_openstack_cloud.sh's default, ansible.cfg's path


def trait(collections: Path, name: str, placement_server, tmp_path: Path,
          python: Path = Path(sys.executable)) -> subprocess.CompletedProcess:
    """``openstack.cloud.trait`` (Placement's traits: it needs no other service) creating ``name``, the module run
    by ``python`` (the implicit localhost's interpreter is ansible's own unless the variable says otherwise)."""
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(placement_server.env(), ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false")
    return subprocess.run([str(BIN / "ansible"), "localhost", "-m", "openstack.cloud.trait", "-a",
                           f"id={name} state=present", "-e", f"ansible_python_interpreter={python}"],
                          capture_output=True, text=True, env=env, check=False)


def installed_version(collections: Path) -> str:
    manifest = collections / "ansible_collections/openstack/cloud/MANIFEST.json"
    return json.loads(manifest.read_text())["collection_info"]["version"]


def sdk_at_least(major: int, minor: int) -> bool:
    return tuple(int(x) for x in version("openstacksdk").split(".")[:2]) >= (major, minor)


def test_galaxy_yml_asks_for_the_release_that_is_tested():
    deps = yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"]
    assert deps == {"openstack.cloud": ">=2.6.0,<3.0.0"}
    assert installed_version(VENV_COLLECTIONS) == "2.6.0"


def test_2_6_0_runs_unchanged(placement_server, tmp_path):
    run = trait(VENV_COLLECTIONS, "CUSTOM_MINBW_OPENSTACK_CLOUD_2_6", placement_server, tmp_path)
    assert run.returncode == 0 and "CHANGED" in run.stdout, run.stdout + run.stderr
    assert placement_server.connect().placement.get_trait("CUSTOM_MINBW_OPENSTACK_CLOUD_2_6")


def install_2_5_0(dest: Path) -> Path:
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"), str(dest)], check=True,
                   capture_output=True, env=dict(os.environ, MINBW_OPENSTACK_CLOUD_FROM="ansible==12.3.0"))
    assert installed_version(dest) == "2.5.0"
    return dest


def test_2_5_0_fails_with_openstacksdk_4_15_and_later(placement_server, tmp_path):
    assert sdk_at_least(4, 15), version("openstacksdk")
    old = install_2_5_0(tmp_path / "collections")
    run = trait(old, "CUSTOM_MINBW_OPENSTACK_CLOUD_2_5", placement_server, tmp_path)
    assert run.returncode != 0, run.stdout
    assert "module 'openstack' has no attribute 'version'" in run.stdout + run.stderr, run.stdout + run.stderr
    # it failed before it reached Placement
    traits = {t.name for t in placement_server.connect().placement.traits(name="startswith:CUSTOM_MINBW_OPENSTACK")}
    assert "CUSTOM_MINBW_OPENSTACK_CLOUD_2_5" not in traits


def test_2_5_0_runs_with_openstacksdk_4_14(placement_server, tmp_path):
    """What README.collection.md tells users who keep openstack.cloud 2.5.0: openstacksdk below 4.15."""
    old = install_2_5_0(tmp_path / "collections")
    # no pip in it: uv installs (tests/support/lib/pip_install.sh, as the set-up's virtualenvs: the same registry)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv/bin/python"
    subprocess.run(["bash", str(REPO / "tests/support/lib/pip_install.sh"), str(tmp_path / "venv"), "-q",
                    "openstacksdk>=4.0,<4.15"], check=True, capture_output=True)
    sdk = subprocess.run([str(python), "-c", "import openstack.version; print(openstack.version.__version__)"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert sdk.startswith("4.14."), sdk
    run = trait(old, "CUSTOM_MINBW_OPENSTACK_CLOUD_2_5_SDK_4_14", placement_server, tmp_path, python=python)
    assert run.returncode == 0 and "CHANGED" in run.stdout, run.stdout + run.stderr
    assert placement_server.connect().placement.get_trait("CUSTOM_MINBW_OPENSTACK_CLOUD_2_5_SDK_4_14")
