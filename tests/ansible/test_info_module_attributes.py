"""A read-only module (``*_info``) takes its attributes from the doc fragment ``minbw.openstack.info_module`` (check
mode full, "never changes anything", no diff, posix) instead of writing the block again; the one ``*_info`` module
that can change something, ``bandwidth_audit_info`` with ``fix``, says so in its own block."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

MODULES = Path(__file__).resolve().parents[2] / "plugins" / "modules"
WRITES_WITH_AN_OPTION = {"bandwidth_audit_info": "fix"}


def documentation(path: Path) -> dict:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["DOCUMENTATION"]:
            return yaml.safe_load(node.value.value)
    raise AssertionError(f"{path} has no DOCUMENTATION")


@pytest.mark.parametrize("path", sorted(MODULES.glob("*_info.py")), ids=lambda p: p.stem)
def test_an_info_module_takes_its_attributes_from_the_fragment(path):
    doc = documentation(path)
    fragments = doc.get("extends_documentation_fragment", [])
    if path.stem in WRITES_WITH_AN_OPTION:
        option = WRITES_WITH_AN_OPTION[path.stem]
        assert "minbw.openstack.info_module" not in fragments and option in doc["options"]
        assert f"O({option})" in doc["attributes"]["check_mode"]["details"]
    else:
        assert "minbw.openstack.info_module" in fragments and "attributes" not in doc, path.name
