#!/usr/bin/env python3
"""Ship the core with the collection, as plugins/module_utils/core: the collection is self-contained.

Why: a collection installed from its tarball, from git or into an execution environment has no `minbw`
package beside it (no registry has one); its modules must run where only the core's own dependencies are
installed (openstacksdk, keystoneauth1, os-resource-classes: requirements.txt), as openstack.cloud's do.
Ansible carries module_utils to the host inside each module's payload (AnsiballZ packs every module_utils
file a module reaches through its imports, relative ones included), so the core the modules need travels
with them.

What ships: the closure of the core files the collection's plugins import (every
`ansible_collections.minbw.openstack.plugins.module_utils.core.X` import in plugins/modules, plugins/filter
and plugins/module_utils names python/minbw/X), plus AGENT_ROOTS, following the core's imports of itself.
The CLI (cli/) and the embedded Placement's process management (deploy/) stay in the `minbw` package.

One source of truth: python/minbw stays the only place this code is written. A shipped file is its source
with the core's absolute imports of itself (`from minbw.ops.neutron import x`) made relative (`from
..ops.neutron import x`), so the copy imports its fellow copies wherever it lies; everything else is
byte-for-byte the same (a file that already imports relatively is an exact copy). The shipped files are
committed, so the collection installs and builds from a plain checkout (git or `ansible-galaxy collection
build`) without this step. tests/unit/test_shipped_core.py fails when a copy differs from what this script
makes of its source, when the set of files is not the closure, or when the part that runs on computes
(AGENT_ROOTS' closure: agent_config, agent_config_info and the filters) imports anything but the standard
library or uses Python newer than 3.9. After changing a file of python/minbw run:  make module-utils

ansible-test sanity (tests/support/ansible/sanity.sh) checks the shipped files as module_utils, with no
ignore entries for them (this script removes any from tests/sanity/ignore-*.txt; --check fails on one): the core
imports its PyPI dependencies (openstacksdk, ...) lazily, inside the functions that use them, so every shipped
file imports in ansible-test's import venv, which installs none (tests/unit/test_core_imports_lazily.py checks it),
and python/minbw is written to ansible-test's pep8 and pylint rules (python/README.md: lazy imports).

Usage: ship_core.py [--check]   (--check: exit 1 and list what differs, write nothing)
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "python" / "minbw"
DEST = REPO / "plugins" / "module_utils" / "core"
SHIPPED_PACKAGE = "ansible_collections.minbw.openstack.plugins.module_utils.core"
# The plugins whose imports of SHIPPED_PACKAGE decide what ships (the shipped tree itself excluded).
PLUGINS = ("plugins/modules", "plugins/module_utils", "plugins/filter")
# What runs on computes (agent_config, agent_config_info) and in the filter plugins: pure, standard library
# only, Python 3.9 (RHEL 9 / Ubuntu 22.04 computes have Python 3.9 / 3.10).
AGENT_ROOTS = ("plan/agent_file.py", "neutron/agentconf.py", "neutron/overrides.py", "neutron/ovn.py")


def _module_file(dotted: str) -> Path | None:
    """python/minbw's file for ``minbw.a.b`` (a module or a package), None when there is none."""
    path = CORE.parent.joinpath(*dotted.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def _package_of(path: Path) -> str:
    """The dotted package a core file's relative imports start from (``minbw.ops`` for ops/claims.py)."""
    return ".".join(path.parent.relative_to(CORE.parent).parts)


def _at_import(tree: ast.AST):
    """The nodes Python runs when it imports the module: all but the bodies of functions."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo += ast.iter_child_nodes(node)


def core_imports(path: Path, at_import: bool = False) -> list[str]:
    """The core modules (``minbw.x.y``) ``path`` imports, absolutely or relatively, anywhere in the file (with
    ``at_import``: those imported when the module is, not inside functions)."""
    out = []
    package = _package_of(path)
    tree = ast.parse(path.read_text(), str(path))
    for node in _at_import(tree) if at_import else ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name == "minbw" or a.name.startswith("minbw.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif node.module == "minbw" or (node.module or "").startswith("minbw."):
                module = node.module
            else:
                continue
            out.append(module)
            out += [f"{module}.{a.name}" for a in node.names]  # from minbw.neutron import naming
    return out


def plugin_roots() -> list[str]:
    """The core files the collection's plugins import from the shipped copy (relative to python/minbw)."""
    roots = set()
    for folder in PLUGINS:
        for path in sorted((REPO / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SHIPPED_PACKAGE):
                    module = "minbw" + node.module[len(SHIPPED_PACKAGE):]
                    for name in [module] + [f"{module}.{a.name}" for a in node.names]:
                        found = _module_file(name)
                        if found is not None:
                            roots.add(str(found.relative_to(CORE)))
    return sorted(roots)


def closure(roots=None, at_import: bool = False) -> list[str]:
    """``roots`` (default: AGENT_ROOTS and what the plugins import) and every core file they reach by their
    imports of the core (``at_import``: those run when a root is imported), with the packages' __init__.py
    files, relative to python/minbw."""
    roots = tuple(AGENT_ROOTS) + tuple(plugin_roots()) if roots is None else roots
    todo = [CORE / r for r in roots]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += [f for f in map(_module_file, core_imports(path, at_import)) if f is not None]
        package = path.parent
        while package != CORE.parent:
            todo.append(package / "__init__.py")
            package = package.parent
    return sorted(str(p.relative_to(CORE)) for p in seen)


_FROM = re.compile(r"from\s+(minbw(?:\.[\w.]+)?)(\s+import\b)")


def shipped_text(rel: str) -> str:
    """What ships for python/minbw/``rel``: its text with each ``from minbw[.x] import`` made relative.
    ``import minbw.x`` has no relative form: the core must not use it in shipped files."""
    path = CORE / rel
    text = path.read_text()
    depth = len(_package_of(path).split("."))  # minbw -> 1 (".x"), minbw.ops -> 2 ("..x")
    lines = text.splitlines(keepends=True)
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "minbw" for a in node.names):
            raise ValueError(f"python/minbw/{rel}:{node.lineno}: 'import minbw...' cannot be shipped: "
                             "use 'from minbw.x import y'")
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                node.module.split(".")[0] == "minbw":
            line = lines[node.lineno - 1]
            head, tail = line[:node.col_offset], line[node.col_offset:]
            relative = "." * depth + node.module[len("minbw."):] if node.module != "minbw" else "." * depth
            new_tail, count = _FROM.subn(lambda m: f"from {relative}{m.group(2)}", tail, count=1)
            if not count:
                raise ValueError(f"python/minbw/{rel}:{node.lineno}: an import this script cannot rewrite")
            lines[node.lineno - 1] = head + new_tail
    return "".join(lines)


SANITY = REPO / "tests" / "sanity"


def ignore_file_text(path: Path) -> str:
    """``path`` (a tests/sanity/ignore-*.txt) without entries for the shipped core: it needs none."""
    kept = [line for line in path.read_text().splitlines() if not line.startswith("plugins/module_utils/core/")]
    return "\n".join(kept) + "\n"


def differences() -> list[str]:
    want = set(closure())
    have = {str(p.relative_to(DEST)) for p in DEST.rglob("*.py")} if DEST.exists() else set()
    problems = [f"{rel}: shipped but no longer needed" for rel in sorted(have - want)]
    for rel in sorted(want):
        if rel not in have:
            problems.append(f"{rel}: not shipped")
        elif (DEST / rel).read_text() != shipped_text(rel):
            problems.append(f"{rel}: differs from python/minbw/{rel}")
    for ignore in sorted(SANITY.glob("ignore-*.txt")):
        if ignore.read_text() != ignore_file_text(ignore):
            problems.append(f"{ignore.relative_to(REPO)}: its entries for plugins/module_utils/core are not allowed")
    return problems


def main(argv: list[str]) -> int:
    problems = differences()
    if "--check" in argv:
        for p in problems:
            print(p if p.startswith("tests/") else f"plugins/module_utils/core/{p}", file=sys.stderr)
        if problems:
            print("run: make module-utils", file=sys.stderr)
        return 1 if problems else 0
    files = closure()
    for rel in files:
        (DEST / rel).parent.mkdir(parents=True, exist_ok=True)
        (DEST / rel).write_text(shipped_text(rel))
    for p in sorted(DEST.rglob("*.py")):
        if str(p.relative_to(DEST)) not in files:
            p.unlink()
    for d in sorted((d for d in DEST.rglob("*") if d.is_dir()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    for ignore in sorted(SANITY.glob("ignore-*.txt")):
        ignore.write_text(ignore_file_text(ignore))
    print(f"shipped {len(files)} files to {DEST.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
