"""The command line uses cliff, osc-lib and argparse through their public API only: no private member of theirs
(a name with one leading underscore, read, called, overridden or named in a string for getattr), and no assignment
into their modules. The next cliff release may rename what is private; minbw's commands must not notice."""
from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

CLI = Path(__file__).resolve().parents[3] / "python" / "minbw" / "cli"
LIBRARIES = ("cliff", "osc_lib", "argparse")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"  # "_": gettext, a throwaway


def _sources(module_name: str) -> list[Path]:
    module = importlib.import_module(module_name)
    if module_name == "argparse":
        return [Path(argparse.__file__)]
    return [p for p in Path(module.__file__).parent.rglob("*.py") if "tests" not in p.parts]


def _names_defined_and_used(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Private names a module defines (methods, class attributes, ``self._x = ...``, module globals) and the
    private attributes it reads or writes (``obj._x``)."""
    defined, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _private(node.name):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name) and _private(t.id):
                        defined.add(t.id)
                    elif (isinstance(t, ast.Attribute) and _private(t.attr) and isinstance(t.value, ast.Name)
                          and t.value.id in ("self", "cls")):
                        defined.add(t.attr)
        if isinstance(node, ast.Attribute) and _private(node.attr):
            used.add(node.attr)
    return defined, used


def _library_private_names() -> set[str]:
    """Every private name cliff, osc-lib and argparse define or use in their own code."""
    names = set()
    for library in LIBRARIES:
        for source in _sources(library):
            defined, used = _names_defined_and_used(ast.parse(source.read_text(), str(source)))
            names |= defined | used
    return names


def _cli_modules() -> dict[str, ast.AST]:
    return {p.name: ast.parse(p.read_text(), str(p)) for p in sorted(CLI.glob("*.py"))}


def _imported_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
    return names


def test_the_library_scan_finds_the_private_members_the_cli_once_used():
    """The oracle sees what it must forbid: the names cli/base.py and cli/shell.py used to reach for."""
    assert {"_formatter_plugins", "_generate_columns_and_selector", "_compress_iterable", "_normalize_column_name",
            "_run_before_hooks", "_formatter_group", "_hooks", "_epilog", "_load_plugins", "_load_commands",
            "_actions", "_value"} <= _library_private_names()


def test_the_cli_reads_no_private_member_but_its_own():
    """``obj._x`` in cli/ only for a ``_x`` that cli/ defines itself, and none of those is also a name of cliff's,
    osc-lib's or argparse's (defining ``_epilog`` or ``_run_before_hooks`` on a command overrides theirs)."""
    modules = _cli_modules()
    own, used = set(), {}
    for name, tree in modules.items():
        defined, attributes = _names_defined_and_used(tree)
        own |= defined
        for attribute in attributes:
            used.setdefault(attribute, []).append(name)
    library = _library_private_names()
    documented = {"_exit"}  # os._exit: Python's own documented function (the shell's end, without finalization)
    assert {n: m for n, m in used.items() if n not in own | documented} == {}, "private members of other code"
    assert sorted(own & library) == [], "names private to cliff/osc-lib/argparse, defined or overridden in cli/"


def test_no_string_names_a_private_member_of_cliff_or_argparse():
    """``getattr(cmd, "_formatter_plugins")`` is the same reach as ``cmd._formatter_plugins``."""
    library = _library_private_names()
    found = {(name, node.value) for name, tree in _cli_modules().items() for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in library}
    assert found == set()


def test_the_cli_assigns_nothing_into_a_module_it_imports():
    """No ``cliff.interactive = ...`` nor ``lister.Lister.x = ...``: a patched library is a private contract."""
    found = []
    for name, tree in _cli_modules().items():
        imported = _imported_names(tree)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("setattr", "delattr") and node.args):
                targets = [ast.Attribute(value=node.args[0], attr="?")]
            for target in targets:
                root = target
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if target is not root and isinstance(root, ast.Name) and root.id in imported and root.id != "sys":
                    found.append((name, node.lineno, ast.unparse(target)))
    assert found == []


def test_a_private_reach_is_caught(tmp_path):
    """The checks above fail on the forms they exist for."""
    tree = ast.parse("from cliff import lister\nimport cliff\n"
                     "class C(lister.Lister):\n"
                     "    def run(self, parsed_args):\n"
                     "        self._run_before_hooks(parsed_args)\n"
                     "        return lister.Lister._normalize_column_name('x')\n"
                     "cliff.interactive = None\n")
    defined, used = _names_defined_and_used(tree)
    assert {"_run_before_hooks", "_normalize_column_name"} <= used - defined
    assert "cliff" in _imported_names(tree)
