"""The core the collection ships imports nothing but the standard library when it is imported (python/README.md:
lazy imports): ansible-test's import sanity test imports every module_utils file where none of the core's PyPI
dependencies (openstacksdk, keystoneauth1, os-resource-classes, requests, PyYAML, ovsdbapp, pyroute2, ...) is
installed. Here each file of the copy python/build_collection.py makes is imported in a fresh interpreter whose every
import of a package outside the standard library raises ImportError, as there."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_collection", REPO / "python" / "build_collection.py")
build_collection = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_collection)

# Run in a fresh interpreter: argv[1] is a folder holding the package `shipped`. Prints, as JSON, the files whose
# import failed (with the error) and the modules outside the standard library that were imported.
IMPORT_ALL = r"""
import importlib, importlib.abc, json, pathlib, sys

class Blocked(importlib.abc.MetaPathFinder):
    '''Any import of a top-level package outside the standard library and `shipped` fails, as where it is absent.'''
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top != "shipped" and top not in sys.stdlib_module_names:
            raise ImportError(f"No module named {name!r} (blocked: not the standard library)", name=name)
        return None

before = set(sys.modules)
sys.meta_path.insert(0, Blocked())
sys.modules["minbw"] = None  # the copy never needs the minbw package
root = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(root))
failed = {}
for p in sorted((root / "shipped").rglob("*.py")):
    parts = p.relative_to(root).with_suffix("").parts
    try:
        importlib.import_module(".".join(x for x in parts if x != "__init__"))
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failed[str(p.relative_to(root / "shipped"))] = f"{type(e).__name__}: {e}"
imported = sorted({m.split(".")[0] for m in set(sys.modules) - before if sys.modules[m] is not None}
                  - set(sys.stdlib_module_names) - {"shipped"})
print(json.dumps({"failed": failed, "third_party": imported}))
"""


def import_all(tmp_path: Path, files: dict[str, str]) -> dict:
    """Write ``files`` (path in the package -> text) as the package ``shipped`` and import each in a fresh
    interpreter with every package outside the standard library blocked."""
    for rel, text in files.items():
        (tmp_path / "shipped" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "shipped" / rel).write_text(text)
    out = subprocess.run([sys.executable, "-I", "-c", IMPORT_ALL, str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def test_every_file_of_the_shipped_core_imports_with_the_standard_library_alone(tmp_path):
    """What ships (python/build_collection.py's closure, its imports of the core made relative) imports where none
    of the core's PyPI dependencies is installed: each is imported inside the functions that use it."""
    files = {rel: build_collection.shipped_text(rel) for rel in build_collection.closure()}
    assert len(files) > 50 and "usecases/cloud.py" in files and "ops/__init__.py" in files
    got = import_all(tmp_path, files)
    assert got == {"failed": {}, "third_party": []}, got


def test_the_check_catches_an_import_at_the_top_of_a_file(tmp_path):
    """One module-level import of a dependency (here openstacksdk's exceptions, as ops/__init__.py once had) fails
    the file and every file that imports it, and the blocked packages are blocked though installed."""
    import openstack  # noqa: F401 - installed here: the blocking is what makes it fail
    got = import_all(tmp_path, {
        "__init__.py": "",
        "ops/__init__.py": "from openstack import exceptions as sdk_exceptions\n",
        "ops/heal.py": "from . import sdk_exceptions\n",
        "lazy.py": "def f():\n    import openstack\n    return openstack\n",
        "plain.py": "import json\nimport os_resource_classes as orc\n",
        "guarded.py": "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n",
    })
    assert set(got["failed"]) == {"ops/__init__.py", "ops/heal.py", "plain.py"}, got
    assert "ModuleNotFoundError" not in got["failed"]["plain.py"] and "os_resource_classes" in got["failed"]["plain.py"]
    assert got["third_party"] == []
