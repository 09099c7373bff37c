"""The documentation that ships with the collection: README.collection.md lists what the collection holds (generated,
so an omission fails here), every link and every path it names resolves inside the tarball or is an absolute URL,
and the documentation site builds (docs/site/build.sh: antsibull-docs lint-collection-docs, then antsibull-docs and
Sphinx with warnings as errors) with a page for every module, role, filter and guide."""
from __future__ import annotations

import fnmatch
import html as entities
import importlib.util
import re
import subprocess
import sys
import tarfile
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
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> set[str]:
    """Every file and directory of the collection tarball."""
    out = tmp_path_factory.mktemp("build")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(REPO)],
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
        if not any(fnmatch.filter(shipped, c) for c in candidates):  # plugins/modules/*.py names shipped files
            found.append(f"{doc}: {kind} {target!r} is not in the tarball: name a shipped file or link an "
                         "absolute URL")
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
    assert not {"README.md", "docs/collection.md", "docs/e2e.md", "docs/benchmarks.md", "docs/galera.md"} & shipped


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
    guides = {f"docs/{p.stem}.html" for p in (REPO / "docs").glob("*.md")} - \
        {"docs/benchmarks.html", "docs/collection.html", "docs/e2e.html", "docs/galera.html"}
    assert guides <= pages and "README.collection.html" in pages and "index.html" in pages
    # the command line reference, generated from the commands (cliff's sphinx extension): every one of them
    cli = entities.unescape(re.sub(r"<[^>]+>", "", (html / "cli.html").read_text()))
    names = [ep.name.replace("_", " ") for ep in metadata.entry_points(group="openstack.bandwidth.v1")]
    assert len(names) > 20 and all(f"openstack {name}" in cli for name in names)
    port = (html / plugins / "port_module.html").read_text()
    assert "openstacksdk &gt;= 4.0" in port and "git+https://github.com/minbw/minbw.git" in port  # how to install it
    # the guides' links between each other and to the README are links in the site too
    operators = (html / "docs/operators.html").read_text()
    assert 'href="../README.collection.html' in operators
