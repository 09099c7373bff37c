"""The core the collection ships (plugins/module_utils/core, generated at build time by python/build_collection.py,
which says why; git holds no copy): what the core's files become (their imports of the core made relative,
nothing else changed), complete, importable without the ``minbw`` package, needing only requirements.txt; its part
that runs on computes (agent_config, agent_config_info, the filters) standard library only, in Python 3.9 syntax
and library (computes of RHEL 9 / Ubuntu 22.04 have Python 3.9 / 3.10); and the built tarball carrying it, with
the modules that import it."""
from __future__ import annotations

import ast
import functools
import importlib.util
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_collection", REPO / "python" / "build_collection.py")
build_collection = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_collection)

# what runs on computes and in the filter plugins (relative to the shipped core)
AGENT_FILES = build_collection.closure(build_collection.AGENT_ROOTS)
# the closure and each file's shipped text, made once for the tests that compare against them (each parses the core's
# files: the closure about 120, each text one; both read python/minbw, which no test here changes)
CLOSURE = build_collection.closure()
shipped_text = functools.cache(build_collection.shipped_text)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """The core as the collection ships it, generated into a scratch directory."""
    dest = tmp_path_factory.mktemp("shipped") / "core"
    build_collection.ship(dest)
    return dest


def files(shipped: Path) -> list[Path]:
    return sorted(shipped.rglob("*.py"))


def test_the_shipped_copies_are_the_core(shipped):
    """What is generated is the closure, each file as shipped_text makes it of its source, nothing more."""
    assert sorted(str(p.relative_to(shipped)) for p in files(shipped)) == CLOSURE
    for rel in CLOSURE:
        assert (shipped / rel).read_text() == shipped_text(rel), rel


def test_git_holds_no_copy_of_the_core():
    """python/minbw is the one source: the shipped core is a build product, ignored by git."""
    tracked = subprocess.run(["git", "ls-files", "plugins/module_utils/core"], cwd=REPO, check=True,
                             capture_output=True, text=True).stdout
    assert tracked == ""
    ignored = subprocess.run(["git", "check-ignore", "-q", "plugins/module_utils/core/errors.py"], cwd=REPO)
    assert ignored.returncode == 0


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """The collection as python/build_collection.py builds it (its ansible-galaxy: this virtualenv's)."""
    out = tmp_path_factory.mktemp("built")
    subprocess.run([sys.executable, str(REPO / "python" / "build_collection.py"), "--output-path", str(out)],
                   cwd=out, check=True, capture_output=True)
    (built,) = out.glob("minbw-openstack-*.tar.gz")
    return built


def test_the_tarball_carries_the_core_the_modules_import(tarball):
    """The built collection holds the generated core (exactly the closure, as generated) and every module and
    plugin of it that imports the core finds the file it names there."""
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        core = {n[len("plugins/module_utils/core/"):] for n in names
                if n.startswith("plugins/module_utils/core/") and n.endswith(".py")}
        assert sorted(core) == CLOSURE
        for rel in ("__init__.py", "usecases/providers.py", "plan/agent_file.py"):
            text = tar.extractfile(f"plugins/module_utils/core/{rel}").read().decode()
            assert text == shipped_text(rel), rel
        importing = 0
        for name in sorted(n for n in names if n.startswith(build_collection.PLUGINS) and n.endswith(".py")
                           and not n.startswith("plugins/module_utils/core/")):
            tree = ast.parse(tar.extractfile(name).read().decode())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        build_collection.SHIPPED_PACKAGE):
                    importing += name.startswith("plugins/modules/")
                    path = "plugins/module_utils/core" + node.module[len(build_collection.SHIPPED_PACKAGE):] \
                        .replace(".", "/")
                    assert f"{path}.py" in names or f"{path}/__init__.py" in names, (name, node.module)
    assert importing >= 10
    # the staged tree is the tarball less what ansible-galaxy adds and galaxy.yml
    assert "galaxy.yml" not in names and "MANIFEST.json" in names


def test_staging_takes_no_copy_of_the_work_tree(tmp_path, monkeypatch):
    """--stage DIR: the collection's files, less build_ignore, with the core generated (never a work tree's
    plugins/module_utils/core, stale or not); a non-empty DIR is refused."""
    stale = tmp_path / "repo"
    shutil.copytree(REPO, stale, ignore=shutil.ignore_patterns(".git", ".venv*", ".state", "__pycache__", "*.tar.gz",
                                                                 "tests", "bench", "build", "dist", "notes", "python"))
    (stale / "plugins/module_utils/core/stale").mkdir(parents=True)
    (stale / "plugins/module_utils/core/stale/old.py").write_text("raise ImportError('stale')\n")
    monkeypatch.setattr(build_collection, "REPO", stale)
    staged = build_collection.stage(tmp_path / "stage")
    got = {str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()}
    assert "galaxy.yml" in got and "plugins/modules/port.py" in got and "plugins/module_utils/core/errors.py" in got
    assert not [n for n in got if n.startswith(("python/", "tests/", "Makefile", "README.md",
                                                 "plugins/module_utils/core/stale"))]
    with pytest.raises(SystemExit):
        build_collection.stage(staged)


def test_the_closure_is_what_the_modules_need():
    # the planner of agent_config, and what it imports: the file, Neutron's rules, errors, the provider tree
    agent = set(build_collection.closure(build_collection.AGENT_ROOTS))
    assert {"plan/agent_file.py", "neutron/agentconf.py", "neutron/server_options.py", "neutron/naming.py",
            "neutron/provider_tree.py", "model/providers.py", "errors.py"} <= agent
    assert "ops/agent_files.py" not in agent  # the computes' part does no I/O of its own
    # every use case a module calls, and what it reaches: the operations, the client, the analyses
    every = set(CLOSURE)
    for module in sorted((REPO / "plugins" / "modules").glob("*.py")):
        for used in re.findall(r"module_utils\.core\.usecases\.(\w+) import", module.read_text()):
            assert f"usecases/{used}.py" in every, (module.name, used)
    assert {"usecases/cloud.py", "ops/sync.py", "placement/client.py", "reports/capacity/solver.py"} <= every
    # the command line and the embedded Placement's process management stay in the minbw package
    assert not [f for f in every if f.startswith(("cli/", "deploy/"))]


def test_the_plugins_import_the_shipped_core_only():
    """A plugin that imports the ``minbw`` package would need it on the host: the collection ships its core."""
    for folder in build_collection.PLUGINS:
        for path in sorted((REPO / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                wrong = [n for n in names if n.split(".")[0] == "minbw"]
                assert not wrong, f"{path.relative_to(REPO)}:{node.lineno} imports {wrong}: import " \
                    f"{build_collection.SHIPPED_PACKAGE}.{wrong[0][len('minbw.'):]} (the build ships it)"


def test_only_imports_change():
    """The core's imports of itself become relative; the names an import continues onto further lines keep their
    alignment with its parenthesis (only their leading spaces change); nothing else changes."""
    for rel in CLOSURE:
        source, shipped = (build_collection.CORE / rel).read_text(), shipped_text(rel)
        imports = {line for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)
                   for line in range(n.lineno, n.end_lineno + 1)}
        changed = [(i, a, b) for i, (a, b) in enumerate(zip(source.splitlines(), shipped.splitlines()), 1) if a != b]
        assert len(source.splitlines()) == len(shipped.splitlines())
        made_relative = [(a, b) for _, a, b in changed
                         if re.match(r"\s*from minbw[\w.]* import", a) and re.match(r"\s*from \.+[\w.]* import", b)]
        assert all(i in imports and ((a, b) in made_relative or a.lstrip(" ") == b.lstrip(" "))
                   for i, a, b in changed), changed
        assert not [n for n in ast.walk(ast.parse(shipped)) if isinstance(n, ast.ImportFrom) and not n.level
                    and (n.module or "").split(".")[0] == "minbw"]


def test_continued_imports_stay_aligned():
    """An import continued onto further lines keeps pycodestyle's indent in the copy: a hanging indent (the
    core's style, python/README.md), or one aligned with the parenthesis, which the copy moves with it."""
    seen = 0
    for rel in CLOSURE:
        shipped = shipped_text(rel).splitlines()
        for i, line in enumerate(shipped[:-1]):
            if line.startswith("from .") and "(" in line and ")" not in line:
                seen += 1
                indent = len(shipped[i + 1]) - len(shipped[i + 1].lstrip(" "))
                hanging = line.rstrip().endswith("(") and indent == 4
                assert hanging or indent == line.index("(") + 1, f"{rel}:{i + 2}: {shipped[i + 1]!r}"
    assert seen >= 5


@pytest.mark.parametrize("depth, line, want", [
    ("errors.py", None, None),  # no imports of the core: an exact copy
    ("ops/claims.py", "from minbw.model.claims import", "from ..model.claims import"),
    ("reports/capacity/solver.py", "from minbw.model", "from ...model"),
    ("usecases/__init__.py", None, None),
])
def test_imports_become_relative_to_the_files_package(depth, line, want):
    shipped = shipped_text(depth)
    if line is None:
        assert shipped == (build_collection.CORE / depth).read_text()
    else:
        assert line in (build_collection.CORE / depth).read_text() and line not in shipped and want in shipped


def test_the_shipped_core_runs_without_the_minbw_package(shipped, tmp_path):
    """The copy, under another name and with ``minbw`` made unimportable, imports every file and computes."""
    shutil.copytree(shipped, tmp_path / "shipped", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import importlib, pathlib, sys\n"
        "sys.modules['minbw'] = None  # import minbw -> ImportError\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        f"for p in sorted(pathlib.Path({str(tmp_path / 'shipped')!r}).rglob('*.py')):\n"
        f"    parts = p.relative_to({str(tmp_path)!r}).with_suffix('').parts\n"
        "    importlib.import_module('.'.join(x for x in parts if x != '__init__'))\n"
        "from shipped.neutron.port_request import QosPort\n"
        "from shipped.usecases.port_request import PortRequestQuery\n"
        "port = QosPort.from_dict({'qos_rules': [{'type': 'minimum_bandwidth', 'direction': 'egress', "
        "'min_kbps': 1000}], 'segments': [{'network_type': 'vlan', 'physical_network': 'physnet0'}]}, 'x')\n"
        "print(sorted(m for m, v in sys.modules.items() if v is not None and m.split('.')[0] == 'minbw'), PortRequestQuery.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "shipped.usecases.port_request"]


def distributions(requirements: Path) -> set[str]:
    return {re.split(r"[<>=!~ ;\[]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for line in requirements.read_text().splitlines() if line.strip() and not line.startswith("#")}


# import name -> the distribution that provides it
DISTRIBUTIONS = {"openstack": "openstacksdk", "keystoneauth1": "keystoneauth1", "requests": "requests",
                 "os_resource_classes": "os-resource-classes", "os_traits": "os-traits",
                 "yaml": "pyyaml", "highspy": "highspy"}


# The `dataplane` extra's libraries (python/pyproject.toml; ovs comes with ovsdbapp): imported only when a host's data
# plane is read, inside minbw.dataplane's functions (MissingDependency when absent), so no requirement of every
# module: the module that reads a data plane, on the host, documents them (bandwidth_enforcement_info)
DATAPLANE = {"ovs": "ovsdbapp", "ovsdbapp": "ovsdbapp", "pyroute2": "pyroute2"}


def test_requirements_txt_is_what_the_shipped_core_imports(shipped):
    """requirements.txt (what ansible-builder installs into an execution environment) names exactly the
    distributions the shipped core imports, all from PyPI (no minbw: it ships inside the collection), but the data
    plane's (below)."""
    third_party = set()
    for path in files(shipped):
        for name in non_stdlib_imports(path.read_text()):
            third_party.add(name.split(".")[0])
    third_party -= set(DATAPLANE)
    assert third_party <= set(DISTRIBUTIONS), sorted(third_party - set(DISTRIBUTIONS))
    assert distributions(REPO / "requirements.txt") == {DISTRIBUTIONS[n] for n in third_party}


def test_the_data_planes_libraries_are_imported_when_read_and_documented_where_needed(shipped):
    """The dataplane extra's libraries: imported by the shipped dataplane/ only, never when a file is imported, and
    in the requirements of the module that reads a data plane."""
    import tomllib
    extra = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] for d in extra["dataplane"]} == set(DATAPLANE.values())
    for path in files(shipped):
        tree = ast.parse(path.read_text())
        used = {n.split(".")[0] for n in non_stdlib_imports(path.read_text())} & set(DATAPLANE)
        assert not used or path.relative_to(shipped).parts[0] == "dataplane", (path, used)
        at_import = [n for n in build_collection._at_import(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not {m.split(".")[0] for n in at_import for m in non_stdlib_imports(ast.unparse(n))} & set(DATAPLANE)
    module = (REPO / "plugins" / "modules" / "bandwidth_enforcement_info.py").read_text()
    assert all(f"  - {d}" in module.split("requirements:")[1].split("options:")[0] for d in extra["dataplane"])


def test_the_modules_document_requirements_txt():
    """The auth doc fragment's requirements (every module that talks to a cloud) are requirements.txt's lines."""
    fragment = (REPO / "plugins" / "doc_fragments" / "auth.py").read_text()
    documented = {re.sub(r"\s+", "", line.strip()[2:]) for line in fragment.split("requirements:")[1].split("notes:")[0]
                  .splitlines() if line.strip().startswith("- ")}
    wanted = {line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert documented - {"python>=3.11"} == wanted


def test_the_core_package_and_the_collection_ask_for_the_same_libraries():
    """python/pyproject.toml's core dependencies include what the collection's requirements.txt names."""
    import tomllib
    project = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert distributions(REPO / "requirements.txt") <= core


def non_stdlib_imports(text: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(text)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        out += [n for n in names if n.split(".")[0] not in sys.stdlib_module_names | {"__future__"}]
    return out


TYPES = {"int", "str", "float", "bool", "bytes", "dict", "list", "tuple", "set", "frozenset", "type", "object"}


def runtime_unions(tree: ast.AST) -> list[int]:
    """Lines with ``X | Y`` of types evaluated at run time (3.10+). Annotations are left out: every
    shipped file has ``from __future__ import annotations``, so Python 3.9 never evaluates them."""
    in_annotations = set()
    for node in ast.walk(tree):
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                in_annotations |= {id(n) for n in ast.walk(ann)}

    def typelike(n):
        return (isinstance(n, ast.Constant) and n.value is None) or isinstance(n, ast.Subscript) or \
            (isinstance(n, ast.Name) and n.id in TYPES)
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr)
            and id(n) not in in_annotations and (typelike(n.left) or typelike(n.right))]


def py39_problems(text: str, name: str, tmp: Path) -> list[str]:
    """Syntax newer than 3.9 (ast with feature_version), run-time unions of types, and library newer
    than 3.9 (vermin: modules, functions, arguments)."""
    try:
        tree = ast.parse(text, name, feature_version=(3, 9))
    except SyntaxError as e:
        return [f"{name}: {e}"]
    problems = [f"{name}:{line}: X | Y evaluated at run time needs 3.10" for line in runtime_unions(tree)]
    if any(isinstance(n, ast.AnnAssign) or getattr(n, "returns", None) or
           any(a.annotation for a in getattr(getattr(n, "args", None), "args", []) or [])
           for n in ast.walk(tree)) and "from __future__ import annotations" not in text:
        problems.append(f"{name}: annotations without 'from __future__ import annotations'")
    copy = tmp / Path(name).name
    copy.write_text(text)
    vermin = subprocess.run([str(Path(sys.executable).parent / "vermin"), "--no-tips", "--violations", "-t=3.9-",
                             "--no-parse-comments", str(copy)], capture_output=True, text=True, check=False)
    return problems + ([f"{name}: {vermin.stdout.strip()}"] if vermin.returncode else [])


def test_there_is_something_shipped(shipped):
    assert len(AGENT_FILES) >= 10 and len(files(shipped)) > len(AGENT_FILES)


@pytest.mark.parametrize("rel", AGENT_FILES)
def test_standard_library_only(shipped, rel):
    assert non_stdlib_imports((shipped / rel).read_text()) == []


@pytest.mark.parametrize("rel", AGENT_FILES)
def test_python_39(shipped, rel, tmp_path):
    path = shipped / rel
    assert py39_problems(path.read_text(), str(path), tmp_path) == []


@pytest.mark.parametrize("snippet", [
    "match x:\n    case 1:\n        pass\n",                       # 3.10 syntax
    "def f(x):\n    return isinstance(x, int | str)\n",            # 3.10 union type at run time
    "from dataclasses import dataclass\n@dataclass(slots=True)\nclass A:\n    x: int\n",  # 3.10 library
    "import tomllib\n",                                            # 3.11 module
    "def f(x: int | None) -> None:\n    pass\n",                   # annotations evaluated by 3.9
])
def test_the_39_check_catches_newer_python(snippet, tmp_path):
    assert py39_problems(snippet, "snippet.py", tmp_path) != []


def test_the_39_check_passes_39_code(tmp_path):
    text = "from __future__ import annotations\n\ndef f(x: int | None) -> dict[str, int] | None:\n    return {}\n"
    assert py39_problems(text, "ok.py", tmp_path) == []


def test_the_import_check_catches_a_third_party_import():
    assert non_stdlib_imports("import os_traits\nfrom openstack import connection\nfrom . import x\n") == \
        ["os_traits", "openstack"]
