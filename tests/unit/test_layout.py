"""The core's layout keeps one dependency direction (python/README.md):

    cli, modules → ops → reports → placement.client → model
                    ↘ plan → neutron, placement.query/mapping → model, errors

Pure packages (model, neutron, plan, placement.query, placement.mapping) import nothing that does I/O;
only placement.client names a Placement URL; every exception class lives in errors.py.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "python" / "minbw"

PURE = ("minbw.model", "minbw.neutron", "minbw.plan", "minbw.placement.query", "minbw.placement.mapping")
IO = ("minbw.ops", "minbw.reports", "minbw.placement.client", "minbw.deploy", "minbw.cli")
IO_LIBRARIES = ("openstack", "keystoneauth1", "requests", "socket", "subprocess", "urllib.request",
                "http", "wsgiref", "placement", "threading", "concurrent")
# who may import whom (a module of the key may import modules of the listed packages)
ALLOWED = {
    "minbw.model": ("minbw.model", "minbw.errors"),
    "minbw.neutron": ("minbw.neutron", "minbw.model", "minbw.errors"),
    "minbw.placement.query": ("minbw.model", "minbw.errors"),
    "minbw.placement.mapping": ("minbw.model", "minbw.errors"),
    "minbw.placement.client": ("minbw.model", "minbw.errors"),
    "minbw.plan": ("minbw.plan", "minbw.model", "minbw.neutron", "minbw.placement.query",
                   "minbw.placement.mapping", "minbw.errors"),
    "minbw.reports": ("minbw.reports", "minbw.placement", "minbw.plan", "minbw.model", "minbw.neutron",
                      "minbw.errors"),
    "minbw.ops": ("minbw.ops", "minbw.reports", "minbw.placement", "minbw.plan", "minbw.model",
                  "minbw.neutron", "minbw.errors"),
    "minbw.deploy": ("minbw.deploy", "minbw.errors"),
    "minbw.errors": (),
}


def modules():
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        yield name, ast.parse(path.read_text(), str(path))


PACKAGES = {".".join(p.relative_to(CORE.parent).parts[:-1]) for p in CORE.rglob("__init__.py")}


def absolute(node: ast.ImportFrom, name: str) -> str | None:
    """The absolute module an ImportFrom names: relative ones (the modules python/ship_core.py ships
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
            if base == "minbw" or base.startswith("minbw."):
                out.update(f"{base}.{a.name}" for a in node.names)  # from minbw.plan import qos
    return out


def within(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def package_of(name: str) -> str | None:
    return max((p for p in ALLOWED if within(name, [p])), key=len, default=None)


MODULES = dict(modules())


def test_the_layout_has_the_expected_rooms():
    rooms = {n.split(".")[1] for n in MODULES if n.count(".") >= 1}
    assert {"model", "neutron", "placement", "plan", "ops", "reports", "deploy", "cli", "errors"} <= rooms


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_one_way(name):
    owner = package_of(name)
    if owner is None:  # the cli and the package root may import anything
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


def test_every_exception_lives_in_errors():
    for name, tree in MODULES.items():
        if name == "minbw.errors":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not bases & {"Exception", "MinbwError", "ValueError", "PlacementError"}, \
                    f"{name}.{node.name} is an exception outside errors.py"


def test_test_files_have_unique_names():
    # tests/ has no __init__.py: pytest imports test files by basename, so two with one name break collection
    tests = Path(__file__).resolve().parents[1]
    names = [p.name for p in tests.rglob("test_*.py") if ".venv" not in p.parts]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_relative_imports_are_judged_too():
    # the shipped modules import relatively: the rules above must see those imports as well
    assert {"minbw.errors", "minbw.model.providers", "minbw.neutron.agentconf"} <= \
        imports(MODULES["minbw.neutron.provider_tree"], "minbw.neutron.provider_tree")
    assert "minbw.neutron.provider_tree" in imports(MODULES["minbw.plan.agent_file"], "minbw.plan.agent_file")
