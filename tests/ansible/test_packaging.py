"""What ships: the core's wheel (metadata, py.typed, the license) and the collection tarball (what an
execution environment and Galaxy need, none of the developers' files), installed into a fresh collections
path and documented by ansible-doc from there; every artefact of one version; and the README's install
commands run as a user runs them, in a fresh `git clone` of HEAD (which holds no copy of the core the collection
ships: the build generates it): `make dist` (in a build virtualenv of its own), the tarball install of the
collection into a fresh home and the virtualenv the README's block makes (ansible-core and the collection's
requirements.txt, no minbw package), where a module and a role then work against the embedded Placement; the
install from a checkout (python/build_collection.py, then the tarball it built); and the command line installed
from python/."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import yaml

from tests.support.tour import run_tour, tour

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
spec = importlib.util.spec_from_file_location("build_collection", REPO / "python" / "build_collection.py")
build_collection = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_collection)


def test_wheel_metadata_and_py_typed(wheel):
    assert wheel.name == f"minbw-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(f"minbw-{VERSION}.dist-info/METADATA").decode())
        license_text = z.read(f"minbw-{VERSION}.dist-info/licenses/LICENSE").decode()
    assert "minbw/py.typed" in names
    assert meta["License-Expression"] == "Apache-2.0" and meta.get_all("License-File") == ["LICENSE"]
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert not meta.get_all("Project-URL")  # no public home to name: installed from a checkout or this wheel
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # the expression says it (PEP 639)
    assert meta["Requires-Python"] == ">=3.11" and meta["Summary"] and meta["Author"] == "minbw developers"


def test_collection_tarball_contents_install_and_doc(tmp_path):
    build = tmp_path / "build"
    subprocess.run([sys.executable, str(REPO / "python/build_collection.py"), "--output-path", str(build)],
                   check=True, capture_output=True)
    (tarball,) = build.glob(f"minbw-openstack-{VERSION}.tar.gz")
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    for shipped in ("LICENSE", "README.collection.md", "CHANGELOG.rst", "changelogs/changelog.yaml",
                    "changelogs/config.yaml", "requirements.txt", "bindep.txt", "meta/execution-environment.yml",
                    "meta/runtime.yml", "plugins/modules/port.py", "roles/placement_local/meta/argument_specs.yml",
                    "playbooks/demo.yml", "docs/lifecycle.md", "plugins/module_utils/core/usecases/providers.py"):
        assert shipped in names, shipped
    developers = ("Makefile", "README.md", "pytest.ini", "ansible.cfg", "requirements-test.txt", "tests", "python",
                  "bench", "docs/benchmarks.md", "docs/collection.md", "docs/e2e.md", "docs/tempest.md", ".ansible-lint", ".ansible",
                  ".gitignore", "changelogs/.plugin-cache.yaml", "notes", "docs/site", "build", "dist", "contrib")
    assert not [n for n in names for d in developers if n == d or n.startswith(d + "/")]
    assert manifest["license_file"] == "LICENSE" and manifest["readme"] == "README.collection.md"
    assert not any(manifest[k] for k in ("repository", "documentation", "issues", "homepage"))  # no public home

    # the execution environment definition points at the shipped files
    ee = yaml.safe_load((REPO / "meta/execution-environment.yml").read_text())
    assert ee["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}

    assert manifest["dependencies"] == {"openstack.cloud": ">=2.6.0,<3.0.0"}

    dest = tmp_path / "collections"
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # not the repository's (its collections_path)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest), ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    galaxy_install = [str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(dest), str(tarball)]
    # the dependency must be there: ansible-galaxy --offline does not reach Galaxy and says what is missing
    missing = subprocess.run(galaxy_install, capture_output=True, text=True, env=env)
    assert missing.returncode != 0 and "openstack.cloud:>=2.6.0,<3.0.0" in missing.stderr, missing.stderr
    # with openstack.cloud in the collections path (from PyPI's ansible package), --offline resolves it there
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"), str(dest)], check=True,
                   capture_output=True)
    subprocess.run(galaxy_install, check=True, capture_output=True, env=env)
    listed = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "list", "--format", "json", "-p", str(dest)],
                            check=True, capture_output=True, text=True, env=env).stdout
    versions = {name: info["version"] for path in json.loads(listed).values() for name, info in path.items()}
    assert versions["minbw.openstack"] == VERSION and versions["openstack.cloud"] == "2.6.0"
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


def test_one_version():
    """galaxy.yml, python/pyproject.toml and the core (also as the collection ships it) carry one version."""
    import tomllib
    pyproject = tomllib.loads((REPO / "python/pyproject.toml").read_text())["project"]["version"]
    core = re.search(r'__version__ = "(.*)"', (REPO / "python/minbw/__init__.py").read_text()).group(1)
    shipped = re.search(r'__version__ = "(.*)"', build_collection.shipped_text("__init__.py")).group(1)
    assert VERSION == pyproject == core == shipped, (VERSION, pyproject, core, shipped)


PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - name: The role, from the installed collection
      ansible.builtin.include_role:
        name: minbw.openstack.bandwidth_report
      vars:
        bandwidth_report_agent_configs: {inis}
        bandwidth_report_host: {host}
        bandwidth_report_create_root: true
        bandwidth_report_root_inventories: {{VCPU: 8, MEMORY_MB: 16384, DISK_GB: 100}}
        bandwidth_report_cache: false
    - name: A module, from the installed collection
      minbw.openstack.bandwidth_providers_info:
        hypervisor: {host}
      register: shown
    - name: What it shows
      ansible.builtin.copy:
        content: "{{{{ shown | to_json }}}}"
        dest: {result}
        mode: "0600"
"""


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A virtualenv with ansible-core alone (what a user has before installing the collection)."""
    from importlib.metadata import version
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # by uv, as the set-up's virtualenvs (tests/support/lib/pip_install.sh): the README's own pip installs come later
    subprocess.run(["bash", str(REPO / "tests/support/lib/pip_install.sh"), str(venv), "-q",
                    f"ansible-core=={version('ansible-core')}"], check=True, capture_output=True)
    return venv


def user_env(home: Path, venv: Path, **extra) -> dict:
    """A user's shell: their own home (~/.ansible/collections), the fresh virtualenv first on PATH, no setting of
    this repository (ansible.cfg, OS_*, a PYTHONPATH that reaches its core). Their pip compiles no bytecode at
    install (PIP_COMPILE=0, pip's --no-compile; the README's commands do not ask for it): compiling every file
    installed costs more than the few processes run from those virtualenvs afterwards compile of it in memory
    (shells that set PYTHONDONTWRITEBYTECODE, as this machine's: ansible-core and requirements.txt installed 8.5 ->
    4.1 CPU s; then `import openstack` 0.3 -> 0.7, `ansible-playbook --version` 0.3 -> 0.6)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "OS_", "VIRTUAL_ENV", "PYTHONPATH"))}
    return dict(env, HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
                PIP_CACHE_DIR=str(Path.home() / ".cache/pip"), PIP_COMPILE="0", **extra)


def run_lines(lines: list[str], env: dict, cwd: Path = REPO) -> list[tuple[str, int, str]]:
    results = run_tour(lines, env, bin_dir=Path(env["PATH"].split(os.pathsep)[0]), cwd=cwd)
    wrong = [(line, code, out[-3000:]) for line, code, out in results if code != 0]
    assert not wrong, wrong
    return results


def test_install_as_the_readme_says(fresh_venv, placement_server, tmp_path):
    home = tmp_path / "home"
    env = user_env(home, fresh_venv)
    # a fresh clone of HEAD (commit first: the work tree's changes are not in it): no copy of the core in it
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, capture_output=True)
    assert not (clone / "plugins/module_utils/core").exists()
    # `make dist`: the three artefacts, one version (the build virtualenv is this checkout's, made once)
    dist = tour("dist")
    assert dist == ["make dist"]
    run_lines(dist, dict(os.environ, DIST_VENV=str(REPO / ".state/dist-venv")), cwd=clone)
    assert sorted(p.name for p in (clone / "dist").iterdir()) == sorted(
        [f"minbw-openstack-{VERSION}.tar.gz", f"minbw-{VERSION}-py3-none-any.whl", f"minbw-{VERSION}.tar.gz"])
    with tarfile.open(clone / "dist" / f"minbw-openstack-{VERSION}.tar.gz") as tar:
        assert "plugins/module_utils/core/usecases/providers.py" in tar.getnames()

    # openstack.cloud where ansible-galaxy looks first (Galaxy is not reached from here)
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"),
                    str(home / ".ansible/collections")], check=True, capture_output=True)
    # into a virtualenv the block makes (pip refuses to install outside one on Debian 12 and Ubuntu 24.04)
    install = tour("install-tarball")
    assert install[:3] == ["cd dist", "python3 -m venv ~/.venvs/ansible", ". ~/.venvs/ansible/bin/activate"]
    assert install[3].startswith("pip install 'ansible-core")
    assert install[4] == f"ansible-galaxy collection install minbw-openstack-{VERSION}.tar.gz"
    assert install[5].startswith("pip install -r ~")
    run_lines(install, env, cwd=clone)
    venv = home / ".venvs/ansible"
    python = venv / "bin/python"
    # no core package (in the user's shell: no PYTHONPATH of this checkout)
    assert subprocess.run([str(python), "-c", "import minbw"], capture_output=True, env=env).returncode != 0
    for lib in ("openstack", "keystoneauth1", "os_resource_classes", "ansible"):
        subprocess.run([str(python), "-c", f"import {lib}"], check=True, env=env)

    # a role and a module of the installed collection, against the embedded Placement
    inis = [str(REPO / "docs/examples/openvswitch_agent.ini"), str(REPO / "docs/examples/sriov_agent.ini")]
    result = tmp_path / "shown.json"
    (tmp_path / "play.yml").write_text(PLAY.format(inis=json.dumps(inis), host="packaging0", result=result))
    play = subprocess.run(["ansible-playbook", str(tmp_path / "play.yml")], cwd=tmp_path, capture_output=True,
                          text=True, env=dict(placement_server.env(), **user_env(home, venv)))
    assert play.returncode == 0, play.stdout[-4000:] + play.stderr[-4000:]
    names = {p["name"] for p in json.loads(result.read_text())["providers"]}
    assert names == {"packaging0", "packaging0:Open vSwitch agent", "packaging0:Open vSwitch agent:br-test",
                     "packaging0:Open vSwitch agent:br-ex", "packaging0:NIC Switch agent",
                     "packaging0:NIC Switch agent:ens5"}, names

    # from a checkout: the README's commands as written, with a fresh clone of HEAD where they say (in the user's
    # home), run elsewhere (an empty directory, where the tarball is built), with ansible-core alone installed
    home2 = tmp_path / "home2"
    subprocess.run(["git", "clone", "-q", str(REPO), str(home2 / "src/minbw")], check=True, capture_output=True)
    from_checkout = tour("install-checkout")
    assert from_checkout == ["python3 ~/src/minbw/python/build_collection.py",
                             f"ansible-galaxy collection install minbw-openstack-{VERSION}.tar.gz"]
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"),
                    str(home2 / ".ansible/collections")], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_lines(from_checkout, user_env(home2, fresh_venv), cwd=elsewhere)
    assert (elsewhere / f"minbw-openstack-{VERSION}.tar.gz").is_file()
    assert not (home2 / "src/minbw/plugins/module_utils/core").exists()  # generated apart, the checkout untouched
    installed = home2 / ".ansible/collections/ansible_collections/minbw/openstack"
    assert (installed / "plugins/module_utils/core/usecases/providers.py").is_file()
    assert not (installed / "tests").exists() and not (installed / "python").exists()
    doc = subprocess.run(["ansible-doc", "-t", "module", "minbw.openstack.port"], capture_output=True, text=True,
                         env=user_env(home2, fresh_venv), cwd=elsewhere)
    assert doc.returncode == 0, doc.stderr
    # ansible-galaxy's own install from git would take the repository as git holds it: no core
    assert "does not work" in " ".join((REPO / "README.md").read_text().split()).split("tour: install-checkout")[1]

    # README.collection.md's commands, where the tarball is (no checkout, no ansible.cfg)
    home3 = tmp_path / "home3"
    subprocess.run(["bash", str(REPO / "tests/support/ansible/install_openstack_cloud.sh"),
                    str(home3 / ".ansible/collections")], check=True, capture_output=True)
    shutil.copy(clone / "dist" / f"minbw-openstack-{VERSION}.tar.gz", tmp_path)
    readme = (REPO / "README.collection.md").read_text()
    run_lines(tour("collection-install", readme), user_env(home3, fresh_venv), cwd=tmp_path)
    assert (home3 / ".ansible/collections/ansible_collections/minbw/openstack/MANIFEST.json").is_file()
    assert tour("collection-install-checkout", readme) == from_checkout

    # the command line, from the checkout's python/
    cli = tour("install-cli")
    assert cli == ["pip install ./python", "minbw --version"]
    results = run_lines(cli, env, cwd=clone)
    assert results[1][2].strip() == f"minbw {VERSION}"
