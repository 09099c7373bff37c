"""The core's layout as python/README.md describes it ("Layout: one dependency direction"): imports go one way,
pure packages do no I/O, only placement.client names a Placement URL, every exception class lives in errors.py,
the front ends (cli, plugins/modules) reach the core through the use cases only (the compute-side modules apart:
they run where the use cases cannot), the cli has no import cycle, and nothing of ours is imported under another
name."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "python" / "minbw"

# the rooms that compute only, and those that read or write (reports/ analyses what readers/ reads)
PURE = ("minbw.model", "minbw.neutron", "minbw.nova", "minbw.plan", "minbw.reports", "minbw.placement.query",
        "minbw.placement.mapping", "minbw.cache.check")
IO = ("minbw.ops", "minbw.exporter", "minbw.readers", "minbw.cache.providers", "minbw.cache.desired", "minbw.cache.synced", "minbw.cache.files",
      "minbw.placement.client", "minbw.placement.connection", "minbw.dataplane",
      "minbw.deploy", "minbw.cli", "minbw.usecases")
IO_LIBRARIES = ("openstack", "keystoneauth1", "requests", "socket", "subprocess", "urllib.request",
                "http", "wsgiref", "placement", "threading", "concurrent", "ovsdbapp", "ovs", "pyroute2")
# who may import whom (a module of the key may import modules of the listed packages)
ALLOWED = {
    "minbw.model": ("minbw.model", "minbw.errors"),
    "minbw.neutron": ("minbw.neutron", "minbw.model", "minbw.errors"),
    # Nova's scheduler, reproduced; placement.query: the one query builder (scheduler.py checks Nova's query with it)
    "minbw.nova": ("minbw.nova", "minbw.model", "minbw.neutron", "minbw.placement.query", "minbw.errors"),
    "minbw.placement.query": ("minbw.model", "minbw.errors"),
    "minbw.placement.mapping": ("minbw.model", "minbw.errors"),
    "minbw.placement.client": ("minbw.model", "minbw.errors"),
    "minbw.placement.connection": ("minbw.errors",),
    "minbw.plan": ("minbw.plan", "minbw.model", "minbw.neutron", "minbw.nova", "minbw.placement.query",
                   "minbw.placement.mapping", "minbw.reports", "minbw.errors"),
    # the provider cache: its file (read and written by the sync, read by the reports) and its safety check
    "minbw.cache": ("minbw.cache", "minbw.placement", "minbw.model", "minbw.errors"),
    "minbw.reports": ("minbw.reports", "minbw.placement.query", "minbw.placement.mapping", "minbw.model",
                      "minbw.neutron", "minbw.errors"),
    "minbw.readers": ("minbw.readers", "minbw.reports", "minbw.cache", "minbw.placement", "minbw.model",
                      "minbw.neutron", "minbw.errors"),
    "minbw.ops": ("minbw.ops", "minbw.cache", "minbw.readers", "minbw.reports", "minbw.placement", "minbw.plan", "minbw.model",
                  "minbw.neutron", "minbw.nova", "minbw.dataplane", "minbw.errors"),
    "minbw.exporter": ("minbw.exporter", "minbw.cache", "minbw.readers", "minbw.reports", "minbw.placement", "minbw.model", "minbw.errors"),
    "minbw.usecases": ("minbw.usecases", "minbw.exporter", "minbw.ops", "minbw.cache", "minbw.readers", "minbw.reports", "minbw.placement",
                       "minbw.plan", "minbw.model", "minbw.neutron", "minbw.nova", "minbw.deploy", "minbw.errors"),
    "minbw.cli": ("minbw.cli", "minbw.usecases", "minbw.errors", "minbw"),
    "minbw.deploy": ("minbw.deploy", "minbw.errors"),
    # a host's data plane (OVSDB, OVN northbound, netlink), read only; read by ops (ops/enforcement.py)
    "minbw.dataplane": ("minbw.dataplane", "minbw.model", "minbw.errors"),
    "minbw.errors": (),
}
# what the collection's modules may take from the core (module_utils/core: the core as shipped, python/build_collection.py)
MODULES_MAY_IMPORT = ("minbw.usecases", "minbw.errors")
# the compute-side modules run on computes (Python 3.9, no openstacksdk), where the use cases cannot: they call the
# pure parsers and the planner of the ini file, which travel with them (python/build_collection.py's AGENT_ROOTS), themselves
COMPUTE_SIDE_MAY_IMPORT = {"agent_config.py": ("minbw.neutron", "minbw.plan.agent_file"),
                           "agent_config_info.py": ("minbw.neutron",), "ovn_chassis_config.py": ("minbw.neutron",)}
SHIPPED_CORE = "ansible_collections.minbw.openstack.plugins.module_utils.core"


def modules():
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        yield name, ast.parse(path.read_text(), str(path))


PACKAGES = {".".join(p.relative_to(CORE.parent).parts[:-1]) for p in CORE.rglob("__init__.py")}


def absolute(node: ast.ImportFrom, name: str) -> str | None:
    """The absolute module an ImportFrom names: relative ones (the modules python/build_collection.py ships
    import each other relatively) resolved against ``name``'s package."""
    if not node.level:
        return node.module
    package = name if name in PACKAGES else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports(tree: ast.AST, name: str) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and absolute(node, name):
            base = absolute(node, name)
            out.add(base)
            if within(base, ["minbw", SHIPPED_CORE]):
                out.update(f"{base}.{a.name}" for a in node.names)  # from minbw.plan import qos
    return out


def within(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def package_of(name: str) -> str | None:
    return max((p for p in ALLOWED if within(name, [p])), key=len, default=None)


MODULES = dict(modules())


def test_the_layout_has_the_expected_rooms():
    rooms = {n.split(".")[1] for n in MODULES if n.count(".") >= 1}
    assert {"model", "neutron", "nova", "placement", "plan", "ops", "reports", "readers", "cache", "deploy", "cli",
            "usecases", "dataplane", "errors"} <= rooms
    # every module lives in a room the rules name: pure or I/O, with its allowed imports
    unruled = sorted(n for n in MODULES if n.count(".") >= 1 and n not in PACKAGES and package_of(n) is None)
    assert not unruled, f"{unruled}: give their room a rule (ALLOWED, and PURE or IO)"
    assert all(within(p, PURE) != within(p, IO) for p in ALLOWED if p not in ("minbw.cache", "minbw.placement",
                                                                           "minbw.errors"))


@pytest.mark.parametrize("name", sorted(n for n in MODULES if within(n, ["minbw.readers"]) and n != "minbw.readers"))
def test_readers_read(name):
    """A module of readers/ reads Placement or Neutron (else it is an analysis and belongs in reports/)."""
    found = imports(MODULES[name], name)
    assert any(within(i, ["minbw.placement.client", "minbw.cache.providers", "minbw.readers"]) for i in found) or \
        "conn" in ast.unparse(MODULES[name]), f"{name} reads nothing: it belongs in reports/"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_one_way(name):
    owner = package_of(name)
    if owner is None:  # the package root may import anything
        return
    ours = {i for i in imports(MODULES[name], name) if within(i, ["minbw"]) and i != "minbw"}
    # "from minbw.plan import base" names the module minbw.plan.base: judge the deepest known name
    wrong = sorted(i for i in ours if not within(i, ALLOWED[owner]) and not within(i, [owner])
                   and not any(within(j, ALLOWED[owner]) for j in ours if j.startswith(i + ".")))
    assert not wrong, f"{name} ({owner}) must not import {wrong}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if within(n, PURE)))
def test_pure_packages_do_no_io(name):
    found = imports(MODULES[name], name)
    bad = sorted(i for i in found if within(i, IO) or within(i, IO_LIBRARIES))
    assert not bad, f"{name} is pure but imports {bad}"


def test_plan_holds_planners_only():
    """plan/ is desired + observed → ops: each of its modules builds Plans (or is the Plan shape itself)."""
    for name, tree in MODULES.items():
        if not within(name, ["minbw.plan"]) or name in ("minbw.plan", "minbw.plan.base"):
            continue
        text = ast.unparse(tree)
        assert "Plan" in text or "base.Op" in text, f"{name} plans no writes: it belongs in reports/"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2
    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def test_the_cli_has_no_import_cycle():
    cli = {n for n in MODULES if within(n, ["minbw.cli"])}
    graph = {n: {i for i in imports(MODULES[n], n) if i in cli and i != n} for n in cli}
    assert _cycles(graph) == []
    # and the cycle finder finds one when there is one
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]


def _import_graph(modules: dict[str, ast.AST]) -> dict[str, set[str]]:
    """Who imports whom among ``modules`` (function-level imports included; a module importing the package it is in,
    its ``__init__``, left out: Python runs that one first)."""
    return {n: {i for i in imports(tree, n) if i in modules and i != n and not n.startswith(i + ".")}
            for n, tree in modules.items()}


BENCH = {f"bench.{p.stem}": ast.parse(p.read_text(), str(p)) for p in sorted((REPO / "bench").glob("*.py"))
         if p.stem != "__init__"}


@pytest.mark.parametrize("tree", ["python/minbw", "bench"])
def test_no_import_cycle(tree):
    """No import cycle anywhere in the core (the cli's test above, for the whole package) or among the benchmarks
    (bench/workload.py holds the fleet they build, which four of them once took from each other in a ring)."""
    graph = _import_graph(MODULES if tree == "python/minbw" else BENCH)
    assert len(graph) > 10 and any(graph.values())
    assert _cycles(graph) == []


def test_the_import_graph_sees_a_benchmarks_import():
    assert "bench.workload" in _import_graph(BENCH)["bench.reports_bench"]
    assert "bench.exporter_scale_build" in _import_graph(BENCH)["bench.exporter_scale_bench"]  # a function's import


COLLECTION_MODULES = sorted((REPO / "plugins" / "modules").glob("*.py")) + [
    REPO / "plugins" / "module_utils" / "server_request.py", REPO / "plugins" / "module_utils" / "base.py"]


@pytest.mark.parametrize("path", COLLECTION_MODULES, ids=lambda p: p.name)
def test_the_modules_reach_the_core_through_the_use_cases(path):
    """A module translates its options into a use case's request and its result into return values: it
    imports no operation, client or openstacksdk proxy of the core, and does no I/O of its own."""
    tree = ast.parse(path.read_text(), str(path))
    core = {"minbw" + i[len(SHIPPED_CORE):] for i in imports(tree, "plugin") if within(i, [SHIPPED_CORE])}
    core = {i for i in core if i != "minbw"}
    wrong = sorted(i for i in core if not within(i, MODULES_MAY_IMPORT + COMPUTE_SIDE_MAY_IMPORT.get(path.name, ())))
    assert not wrong, f"{path.name} imports {wrong}: call a use case (minbw.usecases) instead"
    if path.name != "base.py":
        reads = sorted({ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                        and n.attr in ("conn", "service_conn", "sdk_connection")})
        assert not reads, f"{path.name} talks to the cloud itself ({reads}): that belongs in a use case"


def test_only_the_client_builds_placement_urls():
    """Placement's paths appear in one module only."""
    for name, tree in MODULES.items():
        if name == "minbw.placement.client":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.startswith(("/resource_providers", "/allocation", "/traits")), \
                    f"{name} builds a Placement URL: {node.value!r}"
            if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                head = str(node.values[0].value)
                assert not head.startswith(("/resource_providers", "/allocation", "/traits")), \
                    f"{name} builds a Placement URL: {head!r}"


def _cache_state() -> set[str]:
    """What only the provider cache's room touches of a ProviderCache: the attributes its ``__init__`` sets but
    where the file is and for which Placement (``path``, ``endpoint``), and the protocol's steps the room's own
    methods (``trust``, ``provider_read``, ``written``, ...) take."""
    cls = next(n for n in ast.walk(MODULES["minbw.cache.providers"])
               if isinstance(n, ast.ClassDef) and n.name == "ProviderCache")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    state = {t.attr for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
             if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return (state - {"path", "endpoint"}) | {"candidate", "put", "confirm", "due", "confirmed_at"}


def _cache_internals_touched(tree: ast.AST, state: set[str]) -> list[str]:
    """``x.ATTR`` where ``x`` is named ``...cache`` (a variable or an attribute) and ATTR is of ``state``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in state:
            owner = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
            if owner.endswith("cache"):
                out.append(f"line {node.lineno}: {owner}.{node.attr}")
    return out


def test_the_provider_cache_internals_are_touched_in_its_room_only():
    """One way to read providers (issue 44): the cache-trust protocol (candidate, verify, stats, re-read, put) is
    the cache's methods and the reports' reader, which the sync uses too; nothing else reads or writes the cache's
    entries, trusted set, counts or settings, or calls the protocol's steps itself."""
    state = _cache_state()
    assert {"entries", "trusted", "stats", "candidate", "put"} <= state
    # the rule sees what it forbids (sync's and the reader's code before issue 44)
    assert len(_cache_internals_touched(ast.parse(
        "cache.trusted = verified(api, cache, c)\ncache.stats['trusted'] += 1\n"
        "e = self.cache.entries.get(u)\nreader.cache.entries.pop(u)\ncache.put(u, 1, 'n', None, (), {})"), state)) == 5
    for name, tree in MODULES.items():
        if not within(name, ["minbw.cache"]):
            assert not _cache_internals_touched(tree, state), f"{name} touches the provider cache's internals"


def test_every_exception_lives_in_errors():
    for name, tree in MODULES.items():
        if name == "minbw.errors":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not bases & {"Exception", "MinbwError", "ValueError", "PlacementError"}, \
                    f"{name}.{node.name} is an exception outside errors.py"


# The use-case layer and below: each public function and method says what it returns and raises (issue 44)
DOCUMENTED = ("usecases", "ops", "plan", "model", "placement", "cache", "readers", "dataplane", "neutron", "nova",
              "reports", "errors")


def _public_functions(tree: ast.AST):
    """Top-level functions and the methods of classes: not the functions nested in another."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def test_the_public_functions_of_the_lower_layers_have_docstrings():
    missing = [f"{name}.{node.name} (line {node.lineno})" for name, tree in MODULES.items()
               if (name.split(".") + [""])[1] in DOCUMENTED
               for node in _public_functions(tree) if not node.name.startswith("_") and not ast.get_docstring(node)]
    assert not missing, f"public functions without a docstring: {missing}"


def test_test_files_have_unique_names():
    # tests/ has no __init__.py: pytest imports test files by basename, so two with one name break collection
    tests = Path(__file__).resolve().parents[1]
    names = [p.name for p in tests.rglob("test_*.py") if ".venv" not in p.parts]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_the_venvs_and_the_state_are_never_tracked_even_as_symlinks():
    # a worktree's .venv is a symlink to the main checkout's venv: ".venv/" in .gitignore matched directories only,
    # so a commit took the symlink, and merging it replaced the checkout's venv (git removes ignored files in the way)
    import subprocess
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-s"], capture_output=True, text=True, check=True)
    entries = [line.split(None, 3) for line in listed.stdout.splitlines()]
    local = (".venv", ".venv-cloud", ".state")
    assert [e[3] for e in entries if e[3].split("/")[0] in local] == []
    links = [e[3] for e in entries if e[0] == "120000"]
    outside = [path for path in links if Path(subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-p", f":{path}"], capture_output=True, text=True, check=True).stdout).is_absolute()]
    assert outside == [], "symlinks to absolute paths are this machine's, not the repository's"
    for name in local:  # ignored as a directory and as a symlink or file alike
        ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index", name])
        assert ignored.returncode == 0, f"{name} is not ignored when it is a file or a symlink"


def test_unit_tests_are_in_the_folders_of_the_packages_they_test():
    # tests/README.md: tests/unit/<package>/test_<module>.py; no __init__.py there (it would make tests/unit/neutron
    # the package `neutron`, hiding Neutron itself from the oracles); tests/support/ holds no tests
    unit = Path(__file__).resolve().parent
    folders = {p.name for p in unit.iterdir() if p.is_dir() and p.name != "__pycache__"}
    packages = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert sorted(folders - packages) == [], f"tests/unit folders that are no package of {CORE.relative_to(REPO)}"
    assert [str(p.relative_to(REPO)) for p in unit.rglob("__init__.py")] == []
    assert [str(p.relative_to(REPO)) for p in (REPO / "tests" / "support").rglob("test_*.py")] == []


def test_relative_imports_are_judged_too():
    # the shipped modules import relatively: the rules above must see those imports as well
    assert {"minbw.errors", "minbw.model.providers", "minbw.neutron.agentconf"} <= \
        imports(MODULES["minbw.neutron.provider_tree"], "minbw.neutron.provider_tree")
    assert "minbw.neutron.provider_tree" in imports(MODULES["minbw.plan.agent_file"], "minbw.plan.agent_file")


# The library aliases that are upstream convention (openstacksdk's and keystoneauth1's exceptions beside each other,
# os-resource-classes' orc, uuid beside the uuid strings it parses), or that name a library's module beside our own
# name (osc_lib's shell in cli/shell.py; pyroute2's netns beside the ``netns`` parameter): (module, name, alias).
LIBRARY_ALIASES = {
    ("openstack", "exceptions", "sdk_exceptions"),
    ("keystoneauth1", "exceptions", "ksa_exceptions"),
    ("os_resource_classes", None, "orc"),
    ("uuid", None, "uuidlib"),
    ("osc_lib", "shell", "osc_shell"),
    ("pyroute2", "netns", "namespaces"),
}
OURS = ("minbw", "ansible_collections.minbw", "bench", "tests")
ALIAS_TREES = ("python/minbw", "plugins", "bench")


def aliases(tree: ast.AST) -> list[tuple[int, str | None, str, str]]:
    """Every ``import X as Y`` and ``from M import X as Y`` of ``tree`` that renames: (line, M or None, X, Y);
    a relative import's M starts with its dots."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = None if isinstance(node, ast.Import) else "." * node.level + (node.module or "")
            out += [(node.lineno, module, a.name, a.asname) for a in node.names if a.asname and a.asname != a.name]
    return out


def _alias_allowed(module: str | None, name: str, asname: str) -> bool:
    key = (name, None, asname) if module is None else (module, name, asname)
    return key in LIBRARY_ALIASES


@pytest.mark.parametrize("root", ALIAS_TREES)
def test_no_import_renames_a_name_of_ours(root):
    """A file name says what it holds in its layer and a function what it does, so nothing of ours is imported
    under another name to dodge a clash (issue 44): the modules, functions and constants of minbw, the collection,
    the benchmarks and the tests' support are imported by their own names; library aliases only as listed."""
    wrong = []
    for path in sorted((REPO / root).rglob("*.py")):
        for line, module, name, asname in aliases(ast.parse(path.read_text(), str(path))):
            if _alias_allowed(module, name, asname):
                continue
            whose = "ours" if module is None and within(name, OURS) or module is not None and (
                module.startswith(".") or within(module, OURS)) else "a library's, not in LIBRARY_ALIASES"
            wrong.append(f"{path.relative_to(REPO)}:{line}: {name} as {asname} ({whose})")
    assert wrong == [], "rename the function or module instead of aliasing it:\n" + "\n".join(wrong)


def test_the_alias_check_sees_every_form():
    tree = ast.parse("import minbw.ops.sync as s\nfrom minbw.ops import sync as s, heal\n"
                     "from .claims import free as release\nfrom openstack import exceptions as sdk_exceptions\n"
                     "def f():\n    from bench import query_bench as qb\n")
    found = [(module, name, asname) for _, module, name, asname in aliases(tree)]
    assert found == [(None, "minbw.ops.sync", "s"), ("minbw.ops", "sync", "s"), (".claims", "free", "release"),
                     ("openstack", "exceptions", "sdk_exceptions"), ("bench", "query_bench", "qb")]
    assert [_alias_allowed(*f) for f in found] == [False, False, False, True, False]
