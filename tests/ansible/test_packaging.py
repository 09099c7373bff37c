"""What ships: the core's wheel (metadata, py.typed, the license) and the collection tarball (what an
execution environment and Galaxy need, none of the developers' files), installed into a fresh collections
path and documented by ansible-doc from there."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_wheel_metadata_and_py_typed(tmp_path):
    # From a copy: setuptools writes build/ and *.egg-info next to pyproject.toml (the copy also follows
    # python/LICENSE, a symlink). pip builds in an isolated environment with the setuptools that
    # [build-system] asks for (PEP 639 support).
    source = tmp_path / "python"
    shutil.copytree(REPO / "python", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([str(BIN / "python"), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("minbw-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read("minbw-0.1.0.dist-info/METADATA").decode())
        license_text = z.read("minbw-0.1.0.dist-info/licenses/LICENSE").decode()
    assert "minbw/py.typed" in names
    assert meta["License-Expression"] == "Apache-2.0" and meta.get_all("License-File") == ["LICENSE"]
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Repository", "Documentation", "Issues"}
    assert all(u.startswith("https://") for u in urls.values())
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # the expression says it (PEP 639)
    assert meta["Requires-Python"] == ">=3.11" and meta["Summary"] and meta["Author"] == "minbw developers"


def test_collection_tarball_contents_install_and_doc(tmp_path):
    build = tmp_path / "build"
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(build), str(REPO)],
                   check=True, capture_output=True)
    (tarball,) = build.glob("minbw-openstack-0.1.0.tar.gz")
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    for shipped in ("LICENSE", "README.collection.md", "CHANGELOG.rst", "changelogs/changelog.yaml",
                    "changelogs/config.yaml", "requirements.txt", "bindep.txt", "meta/execution-environment.yml",
                    "meta/runtime.yml", "plugins/modules/port.py", "roles/placement_local/meta/argument_specs.yml",
                    "playbooks/demo.yml", "docs/lifecycle.md"):
        assert shipped in names, shipped
    developers = ("Makefile", "README.md", "pytest.ini", "ansible.cfg", "requirements-test.txt", "tests", "python",
                  "bench", "docs/benchmarks.md", "docs/collection.md", "docs/e2e.md", ".ansible-lint", ".ansible",
                  ".gitignore", "changelogs/.plugin-cache.yaml", "notes")
    assert not [n for n in names for d in developers if n == d or n.startswith(d + "/")]
    assert manifest["license_file"] == "LICENSE" and manifest["readme"] == "README.collection.md"
    assert all(manifest[k].startswith("https://") for k in ("repository", "documentation", "issues"))

    # the execution environment definition points at the shipped files
    ee = yaml.safe_load((REPO / "meta/execution-environment.yml").read_text())
    assert ee["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}

    assert manifest["dependencies"] == {"openstack.cloud": ">=2.0.0,<3.0.0"}

    dest = tmp_path / "collections"
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # not the repository's (its collections_path)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest), ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    galaxy_install = [str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(dest), str(tarball)]
    # the dependency must be there: ansible-galaxy --offline does not reach Galaxy and says what is missing
    missing = subprocess.run(galaxy_install, capture_output=True, text=True, env=env)
    assert missing.returncode != 0 and "openstack.cloud:>=2.0.0,<3.0.0" in missing.stderr, missing.stderr
    # with openstack.cloud in the collections path (from PyPI's ansible package), --offline resolves it there
    subprocess.run(["bash", str(REPO / "tests/ansible/install_openstack_cloud.sh"), str(dest)], check=True,
                   capture_output=True)
    subprocess.run(galaxy_install, check=True, capture_output=True, env=env)
    listed = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "list", "--format", "json", "-p", str(dest)],
                            check=True, capture_output=True, text=True, env=env).stdout
    versions = {name: info["version"] for path in json.loads(listed).values() for name, info in path.items()}
    assert versions["minbw.openstack"] == "0.1.0" and versions["openstack.cloud"].startswith("2.")
    installed = dest / "ansible_collections/minbw/openstack"
    assert (installed / "LICENSE").is_file() and not (installed / "Makefile").exists()
    doc = json.loads(subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", "module", "minbw.openstack.port"],
                                    check=True, capture_output=True, text=True, env=env).stdout)
    port = doc["minbw.openstack.port"]["doc"]
    assert port["filename"].startswith(str(installed))
    assert port["options"]["vnic_type"]["aliases"] == ["binding_vnic_type"]
    assert {"wait", "timeout", "sdk_log_path", "sdk_log_level"} <= set(port["options"])

    # the shipped playbook and role resolve openstack.cloud's modules from the same path (a module that cannot
    # be resolved fails the syntax check)
    check = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "minbw.openstack.end_to_end"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    role = json.loads(subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", "role", "minbw.openstack.bandwidth_server"],
                                     check=True, capture_output=True, text=True, env=env).stdout)
    assert role["minbw.openstack.bandwidth_server"]["path"].startswith(str(installed.parent))
