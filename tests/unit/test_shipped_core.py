"""The pure agent-configuration code the collection ships to computes (plugins/module_utils/core):
byte-identical to python/minbw, complete, standard library only, and Python 3.9 syntax and library
(python/ship_core.py says why; computes of RHEL 9 / Ubuntu 22.04 have Python 3.9 / 3.10)."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "plugins" / "module_utils" / "core"
spec = importlib.util.spec_from_file_location("ship_core", REPO / "python" / "ship_core.py")
ship_core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ship_core)

FILES = sorted(SHIPPED.rglob("*.py"))


def test_the_shipped_copies_are_the_core():
    assert ship_core.differences() == [], "run: make module-utils"


def test_the_closure_is_what_the_modules_need():
    # the planner of agent_config, and what it imports: the file, Neutron's rules, errors, the provider tree
    assert {"plan/agent_file.py", "neutron/agentconf.py", "neutron/server_options.py", "neutron/naming.py",
            "neutron/provider_tree.py", "model/providers.py", "errors.py"} <= set(ship_core.closure())
    assert "ops/agent_files.py" not in ship_core.closure()  # I/O stays in the core


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


def test_there_is_something_shipped():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SHIPPED)))
def test_standard_library_only(path):
    assert non_stdlib_imports(path.read_text()) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SHIPPED)))
def test_python_39(path, tmp_path):
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
