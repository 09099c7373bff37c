"""An execution environment with the collection (README.collection.md, "An execution environment"): the
collection's meta/execution-environment.yml is valid for ansible-builder 3; the README's definition and command,
as written beside the tarball, make a build context; the steps its Containerfile runs before the image's pip
install (ansible-galaxy from the context's requirements.yml, then ansible-builder's own introspect.py over the
installed collections) run here, and the Python requirements they produce resolve from PyPI into a fresh virtualenv
(`pip install --dry-run`: the resolver's answer, nothing installed). The image itself is not built: this machine
has no container engine and reaches no container registry for the base image."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from ansible_builder.ee_schema import validate_schema

from tests.support.tour import run_tour, tour

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
README = REPO / "README.collection.md"
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]


def test_the_collections_metadata_is_an_ansible_builder_3_definition():
    meta = yaml.safe_load((REPO / "meta/execution-environment.yml").read_text())
    validate_schema(meta)  # raises on an invalid definition
    assert meta["version"] == 3
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}


def test_the_readmes_definition_builds_a_context_whose_requirements_resolve(tmp_path):
    definition = re.search(r"<!-- execution-environment -->\s*```yaml\n(.*?)```", README.read_text(), re.S).group(1)
    validate_schema(yaml.safe_load(definition))
    subprocess.run([sys.executable, str(REPO / "python/build_collection.py"), "--output-path", str(tmp_path)],
                   check=True, capture_output=True)
    assert (tmp_path / f"minbw-openstack-{VERSION}.tar.gz").is_file()
    (tmp_path / "execution-environment.yml").write_text(definition)
    (create,) = tour("execution-environment", README.read_text())
    assert create.startswith("ansible-builder create")
    ((_, code, out),) = run_tour([create], dict(os.environ), cwd=tmp_path)
    assert code == 0, out

    build = tmp_path / "context" / "_build"
    (containerfile,) = [p for p in (tmp_path / "context").glob("*file") if p.name in ("Containerfile", "Dockerfile")]
    steps = containerfile.read_text()
    galaxy = 'ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml'
    assert galaxy in steps and "introspect.py introspect" in steps and "FROM $EE_BASE_IMAGE" in steps
    assert (build / f"minbw-openstack-{VERSION}.tar.gz").is_file()

    # the galaxy stage (openstack.cloud, which it would fetch from Galaxy, is there already) ...
    collections = tmp_path / "collections"
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"), str(collections)], check=True,
                   capture_output=True)
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                    "--collections-path", str(collections)], cwd=build, check=True, capture_output=True,
                   # only this path: a minbw.openstack in ~/.ansible/collections would make galaxy skip the install
                   env=dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"),
                            ANSIBLE_COLLECTIONS_PATH=str(collections)))
    # the collection as built, its core generated in
    assert (collections / "ansible_collections/minbw/openstack/plugins/module_utils/core/usecases/providers.py").is_file()
    # ... and the builder stage's introspection, with the context's own script
    subprocess.run([sys.executable, str(build / "scripts/introspect.py"), "introspect",
                    f"--write-pip={tmp_path / 'requirements.txt'}", f"--write-bindep={tmp_path / 'bindep.txt'}",
                    str(collections)], check=True, capture_output=True)
    python = (tmp_path / "requirements.txt").read_text()
    assert "openstacksdk>=4.0  # from collection minbw.openstack" in python
    assert "os-resource-classes>=1.1  # from collection minbw.openstack" in python
    assert "minbw " not in python and "minbw>" not in python  # the core is inside the collection
    assert "python3 [platform:dpkg platform:rpm]  # from collection minbw.openstack" in \
        (tmp_path / "bindep.txt").read_text()

    # what the image's pip would install, resolved from PyPI into a fresh virtualenv
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ansible = re.search(r'ARG ANSIBLE_INSTALL_REFS="(.*)"', steps).group(1).split()
    resolved = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--dry-run", "--quiet", "--report",
                               str(tmp_path / "report.json"), "-r", str(tmp_path / "requirements.txt"), *ansible],
                              capture_output=True, text=True)
    assert resolved.returncode == 0, resolved.stderr[-3000:]
    names = {item["metadata"]["name"].lower() for item in json.loads((tmp_path / "report.json").read_text())["install"]}
    assert {"openstacksdk", "keystoneauth1", "os-resource-classes", "requests", "ansible-core", "ansible-runner"} <= names
    assert "minbw" not in names
