#!/usr/bin/env python3
"""Ship the core's pure agent-configuration code with the collection, as plugins/module_utils/core.

Its filter plugins (neutron_overrides) use it too, so the controller needs no minbw package for them.

Why: agent_config (and agent_config_info) run on computes, where RHEL 9 / Ubuntu 22.04 have Python
3.9 / 3.10 and no minbw package. The code they need - parsing, validating, rendering and editing
agent ini files as Neutron does, and the provider tree Placement would accept - is pure and uses the
standard library only, so Ansible can carry it to the host inside the module's payload (AnsiballZ
packs module_utils and follows their relative imports).

One source of truth: python/minbw stays the only place this code is written. The shipped files are
byte-for-byte copies of it (the modules import each other relatively, so one text works in both
places); they are committed, so the collection installs and builds from a plain checkout (git or
`ansible-galaxy collection build`) without this step. tests/unit/test_shipped_core.py fails when a
copy differs from its source, when the set of files is not the closure of ROOTS, when a shipped file
imports anything but the standard library and its fellow shipped files, or when it uses Python newer
than 3.9. After changing one of these files in python/minbw run:  make module-utils

Usage: ship_core.py [--check]   (--check: exit 1 and list what differs, write nothing)
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent / "minbw"
DEST = Path(__file__).resolve().parents[1] / "plugins" / "module_utils" / "core"
# What the modules that run on computes and the filter plugins import; the closure of their relative
# imports is shipped.
ROOTS = ("plan/agent_file.py", "neutron/agentconf.py", "neutron/overrides.py", "neutron/ovn.py")


def relative_imports(path: Path) -> list[Path]:
    """The core files ``path`` imports relatively (each module and the packages on the way)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            target = base.joinpath(*node.module.split(".")) if node.module else base
            # "from ..neutron import naming" imports the module neutron/naming.py (and the package)
            names = [target] * bool(node.module) + [target / a.name for a in node.names
                                                    if (target / a.name).with_suffix(".py").exists()]
            for name in names:
                out.append(name.with_suffix(".py") if name.with_suffix(".py").exists() else name / "__init__.py")
    return out


def closure(roots=ROOTS) -> list[str]:
    """ROOTS and every core file they reach by relative imports, with the packages' __init__.py files."""
    todo = [CORE / r for r in roots]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(relative_imports(path))
        package = path.parent
        while package != CORE.parent:
            todo.append(package / "__init__.py")
            package = package.parent
    return sorted(str(p.relative_to(CORE)) for p in seen)


def differences() -> list[str]:
    want = set(closure())
    have = {str(p.relative_to(DEST)) for p in DEST.rglob("*.py")} if DEST.exists() else set()
    problems = [f"{rel}: shipped but no longer needed" for rel in sorted(have - want)]
    for rel in sorted(want):
        if rel not in have:
            problems.append(f"{rel}: not shipped")
        elif (DEST / rel).read_bytes() != (CORE / rel).read_bytes():
            problems.append(f"{rel}: differs from python/minbw/{rel}")
    return problems


def main(argv: list[str]) -> int:
    problems = differences()
    if "--check" in argv:
        for p in problems:
            print(f"plugins/module_utils/core/{p}", file=sys.stderr)
        if problems:
            print("run: make module-utils", file=sys.stderr)
        return 1 if problems else 0
    for rel in closure():
        (DEST / rel).parent.mkdir(parents=True, exist_ok=True)
        (DEST / rel).write_bytes((CORE / rel).read_bytes())
    for p in DEST.rglob("*.py"):
        if str(p.relative_to(DEST)) not in closure():
            p.unlink()
    print(f"shipped {len(closure())} files to {DEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
