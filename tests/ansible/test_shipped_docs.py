"""The documentation that ships with the collection: README.collection.md lists what the collection holds (generated,
so an omission fails here), every link and every path it names resolves inside the tarball or is an absolute URL
(or, in backquotes, a file of a checkout's code, tests or results),
and the documentation site builds (docs/site/build.sh: antsibull-docs lint-collection-docs, then antsibull-docs and
Sphinx with warnings as errors) with a page for every module, role, filter and guide. And what the docs state
about the collection holds for the files that decide it: the modules need requirements.txt alone (they import
the shipped core, never the ``minbw`` package), only the roles that run the command line need it, no install asks
PyPI for minbw, the openstack.cloud release stated is the one the tests install, README.collection.md's
compatibility table matches the versions the tests pin, and every ``page.md#anchor`` link finds its heading."""
from __future__ import annotations

import fnmatch
import html as entities
import importlib.util
import json
import re
import subprocess
import sys
import tarfile
import tomllib
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
spec = importlib.util.spec_from_file_location("collection_readme", REPO / "docs" / "site" / "collection_readme.py")
collection_readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(collection_readme)

# a path in backquotes that starts with one of these names is a path of this repository
TOP_LEVEL = {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`([^`\s]+)`")
# the repository's code, tests and results, which never ship: a shipped doc names them in backquotes as files of a
# checkout of the repository (README.collection.md, "Compatibility", says so; minbw has no public home to link to)
CHECKOUT_ONLY = ("python/", "tests/", "bench/", "contrib/", "patches/")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> set[str]:
    """Every file and directory of the collection tarball (python/build_collection.py's)."""
    out = tmp_path_factory.mktemp("build")
    subprocess.run([sys.executable, str(REPO / "python/build_collection.py"), "--output-path", str(out)],
                   check=True, capture_output=True)
    (tarball,) = out.glob("minbw-openstack-*.tar.gz")
    with tarfile.open(tarball) as tar:
        names = {n.removeprefix("./") for n in tar.getnames()}
    return names | {str(parent) for n in names for parent in PurePosixPath(n).parents if str(parent) != "."}


def references(text: str) -> list[tuple[str, str]]:
    """(kind, target) of the links of a Markdown text, and of the repository paths it names in backquotes,
    outside fenced code blocks."""
    prose = FENCE.sub("", text)
    out = [("link", m.group(1)) for m in LINK.finditer(prose)]
    out += [("path", m.group(1)) for m in CODE.finditer(LINK.sub("", prose))  # a link's text is not named twice
            if "/" in m.group(1) and m.group(1).split("/")[0] in TOP_LEVEL]
    return out


def problems(doc: str, text: str, shipped: set[str]) -> list[str]:
    """What in ``doc`` (a shipped file's path) points outside the tarball."""
    found = []
    for kind, target in references(text):
        if re.match(r"^[a-z]+://|^mailto:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0].rstrip("/")
        here = PurePosixPath(doc).parent
        candidates = [str(PurePosixPath(*_normal(here / path))) if path else doc]
        if kind == "path":
            candidates.append(path)  # a path in backquotes may be named from the collection's root
            if path.startswith(CHECKOUT_ONLY) and any(REPO.glob(path.split("::")[0])):  # in a checkout (a test's id)
                continue
        if not any(fnmatch.filter(shipped, c) for c in candidates):  # plugins/modules/*.py names shipped files
            found.append(f"{doc}: {kind} {target!r} is not in the tarball: name a shipped file, a file of the "
                         "checkout's code, tests or results in backquotes, or link an absolute URL")
    return found


def _normal(path: PurePosixPath) -> list[str]:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                return ["<outside the collection>"]
            parts.pop()
        elif part != ".":
            parts.append(part)
    return parts


def shipped_docs(shipped: set[str]) -> list[str]:
    return sorted(n for n in shipped if n.endswith(".md"))


def test_the_shipped_docs_are_these(shipped):
    assert {"README.collection.md", "docs/operators.md", "roles/bandwidth_agent/README.md"} <= set(shipped_docs(shipped))
    assert not {"README.md", "docs/collection.md", "docs/e2e.md", "docs/tempest.md", "docs/benchmarks.md",
                "docs/galera.md", "docs/soak.md"} & shipped


def test_every_link_and_path_in_the_shipped_docs_resolves_in_the_tarball(shipped):
    found = [p for doc in shipped_docs(shipped) for p in problems(doc, (REPO / doc).read_text(), shipped)]
    # the modules' and filters' documentation names the shipped guides in plain text
    documented = [REPO / "plugins" / kind for kind in ("modules", "doc_fragments")]
    for plugin in sorted(p for d in documented for p in d.glob("*.py")) + sorted((REPO / "plugins/filter").glob("*.yml")):
        for target in re.findall(r"\b((?:docs|roles|playbooks|tests|python)/[\w./-]*\w)", plugin.read_text()):
            if target not in shipped:
                found.append(f"{plugin.relative_to(REPO)}: {target} is not in the tarball")
    assert found == []


@pytest.mark.parametrize("text, wrong", [
    ("see [the e2e tests](docs/e2e.md)", ["link 'docs/e2e.md'"]),
    ("see `tests/e2e/test_x.py`", ["path 'tests/e2e/test_x.py'"]),
    ("see `tests/ansible/test_packaging.py` and [it](../tests/ansible/test_packaging.py)",
     ["link '../tests/ansible/test_packaging.py'"]),
    ("see [x](../../outside.md) and `docs/collection.md`", ["link '../../outside.md'", "path 'docs/collection.md'"]),
    ("[ok](docs/operators.md#kolla-ansible), [ok](https://example.org/x), `/etc/kolla/config`, `group/minbw.x`, "
     "[ok](#install), `plugins/modules/*.py`, [`tests/x.py`](https://example.org/tests/x.py)"
     "\n```\nsee tests/unit/x.py `tests/in/code.py`\n```\n", []),
    ("`plugins/modules/*.txt`", ["path 'plugins/modules/*.txt'"]),
])
def test_the_checker_finds_what_is_not_shipped(shipped, text, wrong):
    assert [p.split(": ", 1)[1].split(" is not")[0] for p in problems("README.collection.md", text, shipped)] == wrong


def test_readme_collection_lists_what_the_collection_holds():
    """README.collection.md's lists are what docs/site/collection_readme.py makes of the collection now: a module,
    role, filter or playbook added or removed without `make collection-readme` fails here."""
    text = (REPO / "README.collection.md").read_text()
    assert collection_readme.readme_text(text) == text, "run: make collection-readme"
    listed = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert {p.stem for p in (REPO / "plugins/modules").glob("*.py")} <= listed
    assert {p.name for p in (REPO / "roles").iterdir() if p.is_dir()} <= listed
    assert {p.stem for p in (REPO / "playbooks").glob("*.yml")} <= listed
    assert {yaml.safe_load(p.read_text())["DOCUMENTATION"]["name"] for p in (REPO / "plugins/filter").glob("*.yml")} \
        <= listed
    assert "resource" not in listed  # removed before the first release


def test_an_omission_is_seen():
    text = (REPO / "README.collection.md").read_text()
    without = re.sub(r"^\| `port` \|.*\n", "", text, flags=re.M)
    assert without != text and collection_readme.readme_text(without) == text


def test_no_deprecation_in_the_first_release():
    runtime = yaml.safe_load((REPO / "meta/runtime.yml").read_text())
    assert "plugin_routing" not in runtime, runtime.get("plugin_routing")
    for fragment in (REPO / "changelogs/fragments").glob("*.yml"):
        assert "deprecated_features" not in yaml.safe_load(fragment.read_text()), fragment.name


def test_the_site_builds(tmp_path):
    out = tmp_path / "site"
    run = subprocess.run(["bash", str(REPO / "docs/site/build.sh"), str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    assert "antsibull-docs lint-collection-docs: no findings" in run.stdout
    html = out / "html"
    pages = {str(p.relative_to(html)) for p in html.rglob("*.html")}
    plugins = "collections/minbw/openstack"
    assert {f"{plugins}/{p.stem}_module.html" for p in (REPO / "plugins/modules").glob("*.py")} <= pages
    assert {f"{plugins}/{p.name}_role.html" for p in (REPO / "roles").iterdir() if p.is_dir()} <= pages
    assert {f"{plugins}/{p.stem}_filter.html" for p in (REPO / "plugins/filter").glob("*.yml")} <= pages
    # the guides the tarball ships: every docs/*.md but those galaxy.yml's build_ignore leaves out
    unshipped = set(yaml.safe_load((REPO / "galaxy.yml").read_text())["build_ignore"])
    guides = {f"docs/{p.stem}.html" for p in (REPO / "docs").glob("*.md") if f"docs/{p.name}" not in unshipped}
    assert "docs/e2e.html" not in guides and "docs/operators.html" in guides
    assert guides <= pages and "README.collection.html" in pages and "index.html" in pages
    # the command line reference, generated from the commands (cliff's sphinx extension): every one of them
    cli = entities.unescape(re.sub(r"<[^>]+>", "", (html / "cli.html").read_text()))
    names = [ep.name.replace("_", " ") for ep in metadata.entry_points(group="openstack.bandwidth.v1")]
    assert len(names) > 20 and all(f"openstack {name}" in cli for name in names)
    port = (html / plugins / "port_module.html").read_text()
    # how to install it: from the tarball (no public home to name, not on Galaxy)
    assert "openstacksdk &gt;= 4.0" in port and '<span class="pre">minbw-openstack-*.tar.gz</span>' in port
    assert "github.com/minbw" not in port and "galaxy.ansible.com" not in port
    # the guides' links between each other and to the README are links in the site too
    operators = (html / "docs/operators.html").read_text()
    assert 'href="../README.collection.html' in operators


# ---- what the docs say the collection needs and was tested with, against the files that decide it

STATEMENTS = ["README.md", "README.collection.md", "docs/collection.md", "docs/glossary.md",
              "roles/bandwidth_report/README.md"]


def _requirements() -> dict[str, str]:
    """requirements.txt: name -> the lowest version (every line is ``NAME>=VERSION``)."""
    from packaging.requirements import Requirement
    out = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == ">=", line
            out[req.name] = spec.version
    return out


def _section(text: str, heading: str) -> str:
    m = re.search(rf"^(#+) {re.escape(heading)}\n(.*?)(?=^#{{1,2}} )", text, re.M | re.S)
    assert m, f"no section {heading!r}"
    return m.group(2)


def _bullet(section: str, start: str) -> str:
    (item,) = [b for b in re.split(r"^- ", section, flags=re.M) if b.startswith(start)]
    return " ".join(item.split())


def compatibility() -> dict[str, tuple[str, str]]:
    """README.collection.md's compatibility table: component -> (tested, where it is pinned)."""
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", _section(
        (REPO / "README.collection.md").read_text(), "Compatibility"), re.M)
    return {a: (b, c) for a, b, c in rows if a not in ("component", "---")}


def test_the_modules_need_requirements_txt_alone_as_the_docs_say():
    """Modules import the core the collection ships, never the ``minbw`` package; README.collection.md names
    requirements.txt's libraries with their versions (so does the doc fragment every module's page shows), and the
    developers' guide and the role that syncs from a controller say the same."""
    reqs = _requirements()
    for path in sorted((REPO / "plugins").rglob("*.py")):
        if "module_utils/core" not in str(path):
            assert not re.search(r"^\s*(from|import) minbw\b", path.read_text(), re.M), path
    readme = (REPO / "README.collection.md").read_text()
    host = _bullet(_section(readme, "Requirements"), "On the host that runs the modules that talk to OpenStack")
    assert dict(re.findall(r"([A-Za-z][\w.-]*) \(>= ([\d.]+)\)", host)) == reqs, host
    assert "`requirements.txt`" in host and "`plugins/module_utils/core`" in host and "need no `minbw` package" in host
    fragment = yaml.safe_load(re.search(r"DOCUMENTATION = r'''(.*?)'''",
                                        (REPO / "plugins/doc_fragments/auth.py").read_text(), re.S).group(1))
    assert [r for r in fragment["requirements"] if not r.startswith("python ")] == \
        [f"{name} >= {low}" for name, low in reqs.items()]
    for doc in ("README.md", "docs/collection.md", "roles/bandwidth_report/README.md"):
        text = " ".join((REPO / doc).read_text().split())
        assert all(name in text for name in reqs), (doc, [n for n in reqs if n not in text])
        assert "requirements.txt" in text and "plugins/module_utils/core" in text, doc
        wrong = re.findall(r"needs? the `minbw` package|with `minbw` installed|need the core and openstacksdk", text)
        assert not wrong, (doc, wrong)


def test_the_roles_that_run_the_command_line_are_the_ones_named():
    """Only roles with a ``*_minbw`` variable (the command they run) need minbw's command line; of them only
    bandwidth_exporter installs it, into a virtualenv of its own from the wheel it is given (minbw is not on PyPI);
    README.collection.md names exactly those roles, each with its extra."""
    running = {role.name for role in (REPO / "roles").iterdir()
               if re.search(r"^\w+_minbw:", (role / "defaults/main.yml").read_text() if (role / "defaults/main.yml")
                            .exists() else "", re.M)}
    assert running == {"placement_local", "bandwidth_exporter"}
    installing = {tasks.parts[-3] for tasks in (REPO / "roles").glob("*/tasks/*.yml")
                  if re.search(r"(ansible\.builtin\.)?pip:|'pip', 'install'", tasks.read_text())}
    assert installing == {"bandwidth_exporter"}
    install = (REPO / "roles/bandwidth_exporter/tasks/install.yml").read_text()
    # [exporter], and [exporter,dataplane] for a host's exporter (bandwidth_exporter_enforcement)
    assert "_bandwidth_exporter_wheel }}[exporter{{ ',dataplane' if bandwidth_exporter_enforcement else '' }}]" in \
        install and "bandwidth_exporter_venv ~ '/bin/python'" in install
    bullet = _bullet(_section((REPO / "README.collection.md").read_text(), "Requirements"), "Only two roles run")
    assert {r for r in re.findall(r"`(\w+)`", bullet) if (REPO / "roles" / r).is_dir()} == running
    extras = tomllib.loads((REPO / "python/pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"placement", "exporter"} <= set(extras) and "`[placement]`" in bullet and "`[exporter]`" in bullet


NOT_ON_PYPI = re.compile(r"pip install\s+['\"]?minbw(?:\[[^\]]*\])?+['\"]?(?![\w.-]|\s*@)")


@pytest.mark.parametrize("text, found", [
    ("pip install 'minbw[placement]'", True),
    ("pip install minbw", True),
    ("`pip install minbw[plot]` and more", True),
    ("pip install 'minbw[placement,exporter] @ git+file:///srv/minbw#subdirectory=python'", False),
    ("pip install 'minbw-0.2.0-py3-none-any.whl[placement]'", False),
    ("pip install './python[all]'", False),
])
def test_the_pypi_install_checker(text, found):
    assert bool(NOT_ON_PYPI.search(text)) == found


def test_no_install_asks_pypi_for_minbw():
    """minbw is not on PyPI: the docs and the messages the code prints install it from a checkout, git or the
    wheel."""
    said = [*STATEMENTS, *(REPO / "roles").glob("*/README.md"), *(REPO / "docs").glob("*.md"),
            *(REPO / "python/minbw").rglob("*.py"), *(REPO / "plugins").rglob("*.py")]
    for doc in {str(REPO / d) for d in said}:
        assert not NOT_ON_PYPI.findall((REPO / doc).read_text()), doc


def test_the_openstack_cloud_statements_are_what_the_tests_install():
    """The range is galaxy.yml's; the release tested is the copy install_openstack_cloud.sh takes (the ``ansible``
    package it names) and the one installed into the developers' collections path."""
    (required,) = yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"].values()
    script = (REPO / "tests/support/ansible/install_openstack_cloud.sh").read_text()
    ansible = re.search(r"^ANSIBLE_PACKAGE=\$\{MINBW_OPENSTACK_CLOUD_FROM:-ansible==([\d.]+)\}$", script, re.M).group(1)
    manifest = BIN.parent / "collections/ansible_collections/openstack/cloud/MANIFEST.json"
    if not manifest.exists():
        pytest.skip(f"{manifest} is missing: make setup installs it")
    tested = json.loads(manifest.read_text())["collection_info"]["version"]
    assert re.match(rf">={re.escape(tested)},", required), (required, tested)  # the lowest accepted is the tested
    readme = " ".join((REPO / "README.collection.md").read_text().split())
    assert f"`openstack.cloud` `{required}`" in readme
    assert f"Tested with {tested}, the copy in PyPI's `ansible` {ansible} package" in readme
    assert compatibility()["openstack.cloud"][0].startswith(tested)
    assert f"PyPI's `ansible` {ansible}" in compatibility()["openstack.cloud"][1]
    guide = " ".join((REPO / "docs/collection.md").read_text().split())
    assert f"`ansible` package ({ansible}: openstack.cloud {tested}," in guide
    assert f"openstack.cloud {tested} is the release the tests run" in guide
    assert f"`openstack.cloud` (`{required}`)" in " ".join((REPO / "README.md").read_text().split())


def _pins(text: str) -> dict[str, str]:
    return {name.lower(): version for name, version in re.findall(r"^([A-Za-z][\w.-]*)==([\d.]+)$", text, re.M)}


def test_the_compatibility_table_is_what_the_tests_pin():
    table = compatibility()
    cloud_sh = (REPO / "tests/support/minicloud/cloud.sh").read_text()
    pins_line = re.search(r"^PINS=\((.*)\)$", cloud_sh, re.M).group(1)
    cloud_pins = dict(re.findall(r"'?([\w-]+)(?:==|>=)([\d.]+)", pins_line))
    constraints = _pins((REPO / "tests/support/minicloud/constraints.txt").read_text())
    test_pins = _pins((REPO / "requirements-test.txt").read_text())
    for component, package in [("Placement", "openstack-placement"), ("Nova", "nova"), ("Neutron", "neutron"),
                               ("Keystone", "keystone"), ("Glance", "glance")]:
        assert constraints[package].startswith(cloud_pins[package]), (package, cloud_pins, constraints[package])
        assert f"{package} {constraints[package]}" in table[component][0], (component, table[component])
    # Neutron's code as the differential tests' oracle: the same release as the mini-cloud's
    assert test_pins["neutron"] == constraints["neutron"] and test_pins["neutron-lib"] == constraints["neutron-lib"]
    assert f"neutron-lib {test_pins['neutron-lib']}" in table["Neutron"][0]
    assert table["openstacksdk"][0] == constraints["openstacksdk"]
    # ansible-core: the newest requirements-test.txt allows, and the one installed
    below = re.search(r"^ansible-core>=([\d.]+),<(\d+)\.(\d+)$", (REPO / "requirements-test.txt").read_text(), re.M)
    newest = f"{below.group(2)}.{int(below.group(3)) - 1}"
    assert table["ansible-core"][0] == newest and metadata.version("ansible-core").startswith(newest + ".")
    lowest = yaml.safe_load((REPO / "meta/runtime.yml").read_text())["requires_ansible"]
    assert lowest == f">={below.group(1)}.0"
    assert f"ansible-core {below.group(1)} or newer" in (REPO / "README.collection.md").read_text()
    # Python: the controllers' is what pyproject.toml requires and the tests run; the computes' what vermin checks
    requires = tomllib.loads((REPO / "python/pyproject.toml").read_text())["project"]["requires-python"]
    controllers = table["Python, controllers"][0].split()[0]
    assert requires == f">={controllers}" and controllers == "%d.%d" % sys.version_info[:2]
    computes = table["Python, computes"][0].split()[0]
    assert f'"-t={computes}-"' in (REPO / "tests/unit/test_shipped_core.py").read_text()
    for module in ("agent_config", "agent_config_info", "ovn_chassis_config"):
        doc = (REPO / f"plugins/modules/{module}.py").read_text()
        assert re.search(rf"Python >= {re.escape(computes)}\b", doc, re.I), module
    # the OpenStack series: the newest release Neutron's migrations and Nova's service versions know
    site = next((REPO / ".venv-cloud/lib").glob("python3*/site-packages"), None)
    if site is None:
        pytest.skip("no .venv-cloud: make cloud-install installs the mini-cloud")
    series = sorted(re.findall(r"^RELEASE_\d+_\d+ = '([\d.]+)'$", (site / "neutron/db/migration/__init__.py")
                               .read_text(), re.M))[-1]
    aliases = re.search(r"SERVICE_VERSION_ALIASES = \{(.*?)\}", (site / "nova/objects/service.py").read_text(), re.S)
    name = re.findall(r"'(\w+)': \d+", aliases.group(1))[-1]
    assert table["OpenStack"][0] == f"{series} ({name})", table["OpenStack"]


@pytest.mark.parametrize("doc", STATEMENTS)
def test_the_anchors_linked_exist(doc):
    """A link to a heading of a Markdown page (``page.md#anchor``, GitHub's and MyST's slugs) finds that heading."""
    text = (REPO / doc).read_text()
    for target in re.findall(r"\]\(([^)\s]*#[^)\s]+)\)", FENCE.sub("", text)):
        page, anchor = target.split("#", 1)
        if re.match(r"^[a-z]+://", page) or (page and not page.endswith(".md")):
            continue
        path = (REPO / doc).parent / page if page else REPO / doc
        slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                 for h in re.findall(r"^#+ (.*)$", FENCE.sub("", path.resolve().read_text()), re.M)}
        assert anchor in slugs, (doc, target, sorted(slugs))


def test_the_glossary_has_the_words_the_docs_link():
    text = (REPO / "docs/glossary.md").read_text()
    words = re.findall(r"^## (.*)$", text, re.M)
    assert {"Request group", "Consumer", "Root provider", "Binding allocation", "Sharing provider",
            "Embedded Placement"} <= set(words)
    for entry in re.split(r"^## .*$", text, flags=re.M)[1:]:
        sentences = re.findall(r"[.!?](?:\s|$)", " ".join(entry.split()).replace("e.g. ", "eg "))
        assert 1 <= len(sentences) <= 3, entry
