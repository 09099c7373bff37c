#!/usr/bin/env python3
"""Build the collection minbw.openstack, with the Python core generated into it as plugins/module_utils/core.

Why the core ships: a collection installed from its tarball or into an execution environment has no `minbw`
package beside it (no registry has one); its modules must run where only the core's own dependencies are
installed (openstacksdk, keystoneauth1, os-resource-classes: requirements.txt), as openstack.cloud's do.
Ansible carries module_utils to the host inside each module's payload (AnsiballZ packs every module_utils
file a module reaches through its imports, relative ones included), so the core the modules need travels
with them.

One source: python/minbw is the only place this code is written, and the only copy git holds. The shipped
core is a build product (.gitignore lists plugins/module_utils/core): this script stages the collection (the
repository less galaxy.yml's build_ignore, and less any plugins/module_utils/core of the work tree) in a
directory of its own, generates the core there, then runs `ansible-galaxy collection build` on the staged
tree. Everything that builds or installs the collection goes through it: `make dist`, `make collection`
(tests/support/ansible/install_collection.sh, which sanity.sh and the docs' build use too), and a user's
install from a checkout (README.md):  python3 <checkout>/python/build_collection.py, then
ansible-galaxy collection install minbw-openstack-<version>.tar.gz.

What ships: the closure of the core files the collection's plugins import (every
`ansible_collections.minbw.openstack.plugins.module_utils.core.X` import in plugins/modules, plugins/filter
and plugins/module_utils names python/minbw/X), plus AGENT_ROOTS, following the core's imports of itself.
The CLI (cli/) and the embedded Placement's process management (deploy/) stay in the `minbw` package. A
shipped file is its source with the core's absolute imports of itself (`from minbw.ops.neutron import x`)
made relative (`from ..ops.neutron import x`), so the copy imports its fellow copies wherever it lies;
everything else is byte-for-byte the same (a file that already imports relatively is an exact copy).
tests/unit/test_shipped_core.py generates the core into a scratch directory and checks it: the set of files
is the closure, only imports change, it imports without the minbw package, and the part that runs on
computes (AGENT_ROOTS' closure: agent_config, agent_config_info and the filters) imports nothing but the
standard library and needs no Python newer than 3.9. ansible-test sanity (tests/support/ansible/sanity.sh)
runs on the built collection, generated core included.

Usage: build_collection.py [--output-path DIR] [--stage DIR]
  --output-path DIR  where the tarball minbw-openstack-<version>.tar.gz goes (default: the current directory)
  --stage DIR        only stage the collection, core generated, into DIR (new or empty); build nothing
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "python" / "minbw"
SHIPPED = Path("plugins") / "module_utils" / "core"  # in the staged collection
SHIPPED_PACKAGE = "ansible_collections.minbw.openstack.plugins.module_utils.core"
# The plugins whose imports of SHIPPED_PACKAGE decide what ships (the generated core itself excluded).
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
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
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
                    module = "minbw" + node.module[len(SHIPPED_PACKAGE) :]
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
    """What ships for python/minbw/``rel``: its text with each ``from minbw[.x] import`` made relative (and the
    names it continues onto further lines, aligned with its parenthesis, kept aligned with it).
    ``import minbw.x`` has no relative form: the core must not use it in shipped files."""
    path = CORE / rel
    text = path.read_text()
    depth = len(_package_of(path).split("."))  # minbw -> 1 (".x"), minbw.ops -> 2 ("..x")
    lines = text.splitlines(keepends=True)
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "minbw" for a in node.names):
            raise ValueError(
                f"python/minbw/{rel}:{node.lineno}: 'import minbw...' cannot be shipped: use 'from minbw.x import y'"
            )
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and node.module.split(".")[0] == "minbw":
            line = lines[node.lineno - 1]
            head, tail = line[: node.col_offset], line[node.col_offset :]
            relative = "." * depth + node.module[len("minbw.") :] if node.module != "minbw" else "." * depth
            new_tail, count = _FROM.subn(lambda m, r=relative: f"from {r}{m.group(2)}", tail, count=1)
            if not count:
                raise ValueError(f"python/minbw/{rel}:{node.lineno}: an import this script cannot rewrite")
            lines[node.lineno - 1] = head + new_tail
            # continuation lines aligned with the opening parenthesis stay aligned with it (pycodestyle's visual
            # indent, which ansible-test sanity's pep8 checks): only their leading spaces change
            if "(" in line and node.end_lineno > node.lineno:
                was, now = line.index("(") + 1, (head + new_tail).index("(") + 1
                for i in range(node.lineno, node.end_lineno):
                    if len(lines[i]) - len(lines[i].lstrip(" ")) == was:
                        lines[i] = " " * now + lines[i][was:]
    return "".join(lines)


def ship(dest: Path) -> list[str]:
    """Write the shipped core (closure(), each file as shipped_text() makes it) into ``dest``, which becomes the
    collection's plugins/module_utils/core; the files written, relative to it."""
    files = closure()
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(shipped_text(rel))
    return files


def galaxy() -> dict:
    import yaml  # ansible-core's dependency: wherever ansible-galaxy runs, PyYAML is there

    return yaml.safe_load((REPO / "galaxy.yml").read_text())


# What ansible-galaxy leaves out of every build besides build_ignore (ansible.galaxy.collection's
# _build_files_manifest_walk); galaxy.yml itself is staged, the build needs it.
_ALWAYS_IGNORED = ("*.pyc", "*.retry", "tests/output", ".git")
_IGNORED_DIRS = {"CVS", ".bzr", ".hg", ".git", ".svn", "__pycache__", ".tox"}


def stage(dest: Path) -> Path:
    """The collection's files in ``dest`` (missing or empty): the repository less galaxy.yml's build_ignore,
    matched as ansible-galaxy matches it (fnmatch on the path relative to the root, directories and files),
    with the core generated into plugins/module_utils/core (a copy in the work tree is never taken)."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise SystemExit(f"build_collection.py: {dest} is not empty")
    meta = galaxy()
    patterns = (
        list(meta.get("build_ignore") or [])
        + list(_ALWAYS_IGNORED)
        + [f"{meta['namespace']}-{meta['name']}-*.tar.gz", str(SHIPPED)]
    )
    for root, dirs, files in os.walk(REPO):
        rel_root = Path(root).relative_to(REPO)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _IGNORED_DIRS and not any(fnmatch.fnmatch(str(rel_root / d), p) for p in patterns)
        )
        for name in sorted(files):
            rel = rel_root / name
            if not any(fnmatch.fnmatch(str(rel), p) for p in patterns):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / rel, dest / rel)
    ship(dest / SHIPPED)
    return dest


def ansible_galaxy() -> str:
    """The ansible-galaxy of this Python (its virtualenv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "ansible-galaxy"
    found = str(beside) if beside.is_file() else shutil.which("ansible-galaxy")
    if not found:
        raise SystemExit("build_collection.py: no ansible-galaxy beside this Python nor on PATH: install ansible-core")
    return found


def build(output: Path) -> Path:
    """Stage the collection in a scratch directory and build it: ``output``/minbw-openstack-VERSION.tar.gz."""
    meta = galaxy()
    output = output.resolve()
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minbw-collection-") as scratch:
        staged = stage(Path(scratch) / "collection")
        # in the staged tree, which holds no ansible.cfg (build_ignore)
        subprocess.run(
            [ansible_galaxy(), "collection", "build", "--force", "--output-path", str(output), "."],
            cwd=staged,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    tarball = output / f"{meta['namespace']}-{meta['name']}-{meta['version']}.tar.gz"
    print(f"built {tarball}")
    return tarball


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="build_collection.py", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output-path", type=Path, default=Path.cwd(), help="where the tarball goes (default: the current directory)"
    )
    parser.add_argument(
        "--stage",
        type=Path,
        metavar="DIR",
        help="only stage the collection, its core generated, into DIR (new or empty): no build",
    )
    args = parser.parse_args(argv)
    if args.stage is not None:
        stage(args.stage.resolve())
        print(f"staged minbw.openstack, its core generated, in {args.stage}")
    else:
        build(args.output_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
