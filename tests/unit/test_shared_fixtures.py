"""Guard of the suite's speed: no test module starts a mini-cloud of its own.

A cold start of the mini-cloud costs minutes of the 2-core machine's CPU; the e2e suite shares one, started by
the fixtures of tests/e2e/conftest.py (``cloud``, ``cloud_two_hosts``, ``cloud_plugin_off``, ... through its
CloudManager, which reaches another variant by a warm restart). A module that runs ``cloud.sh up`` (or ``down``)
itself, or makes its own CloudManager/MiniCloud, would start another one: this test names it. The way to a new
variant is a fixture in tests/e2e/conftest.py (tests/README.md).
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
# the shared fixture, and the mini-cloud's own tooling (scripts and helpers, not tests)
ALLOWED = {TESTS / "e2e" / "conftest.py", Path(__file__).resolve()}  # the fixture; this guard (its examples)
ALLOWED_DIRS = {TESTS / "support" / "minicloud"}
LIFECYCLE = {"up", "down"}
OWNERS = {"CloudManager", "MiniCloud"}
SHELL_UP = re.compile(r"cloud\.sh\b[^\n]*\b(up|down)\b")


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def offences(source: str) -> list[str]:
    """What in this Python source starts or stops a mini-cloud, or makes its own cloud manager."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            words = _strings(node)
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if name in OWNERS:
                found.append(f"line {node.lineno}: {name}(...) - use the fixtures of tests/e2e/conftest.py")
            elif name == "cloud_sh" and node.args and _strings(node.args[0])[:1] in (["up"], ["down"]):
                found.append(f"line {node.lineno}: cloud_sh({_strings(node.args[0])[0]!r})")
            elif any(SHELL_UP.search(w) for w in words) or (
                    (any("cloud.sh" in w for w in words) or "CLOUD_SH" in names) and LIFECYCLE & set(words)):
                found.append(f"line {node.lineno}: runs cloud.sh up or down")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("e2e.conftest"):
            taken = OWNERS & {a.name for a in node.names} | ({"CLOUD_SH"} & {a.name for a in node.names})
            if taken:
                found.append(f"line {node.lineno}: imports {', '.join(sorted(taken))} from the e2e conftest")
    return found


def _test_files():
    for path in sorted(TESTS.rglob("*")):
        if path.suffix not in (".py", ".yml", ".yaml", ".sh") or path in ALLOWED or "__pycache__" in path.parts:
            continue
        if any(d in path.parents for d in ALLOWED_DIRS):
            continue
        yield path


@pytest.mark.parametrize("source", [
    'subprocess.run(["bash", "tests/support/minicloud/cloud.sh", "up"])',
    'subprocess.run(["bash", str(CLOUD_SH), "up"], env=env)',
    'subprocess.run(f"{REPO}/tests/support/minicloud/cloud.sh down", shell=True)',
    "manager = CloudManager()",
    "c = MiniCloud({})",
    'cloud.cloud_sh("up")',
    "from tests.e2e.conftest import CloudManager",
])
def test_the_guard_finds_a_module_starting_its_own_cloud(source):
    assert offences(source)


@pytest.mark.parametrize("source", [
    'cloud.cloud_sh("restart-agents", "devstack1")',
    'cloud_two_hosts.cloud_sh("stop-compute", "devstack0")',
    'subprocess.run(["bash", "tests/support/prodplacement/prodplacement.sh", "up"])',
    "def test_x(cloud, demo): assert cloud.connect()",
])
def test_the_guard_lets_the_shared_cloud_be_used(source):
    assert not offences(source)


def test_no_test_module_starts_a_mini_cloud_outside_the_shared_fixture():
    found = {}
    for path in _test_files():
        text = path.read_text()
        hits = offences(text) if path.suffix == ".py" else [
            f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in SHELL_UP.finditer(text)]
        if hits:
            found[str(path.relative_to(TESTS.parent))] = hits
    assert not found, ("these start or stop a mini-cloud of their own; use the fixtures of tests/e2e/conftest.py "
                       f"(a new variant: a fixture there, tests/README.md): {found}")


def test_make_test_lanes_run_every_test_file_once():
    """tests/support/run_suites.py (``make test``) names folders and files per lane: every test file is in exactly one."""
    from tests.support.run_suites import LANES
    repo = TESTS.parent
    every = {p.relative_to(repo) for p in TESTS.rglob("test_*.py")}
    runs: list[Path] = []
    for steps in LANES.values():
        for _, cmd in steps:
            ignored = {Path(a.split("=", 1)[1]) for a in cmd if a.startswith("--ignore=")}
            # test folders and files (not the scripts a lane runs them with: tests/support/netns.py)
            for arg in (a for a in cmd if a.startswith("tests/") and not a.startswith("tests/support/")):
                path = repo / arg
                files = [p.relative_to(repo) for p in path.rglob("test_*.py")] if path.is_dir() else [Path(arg)]
                runs += [f for f in files if f not in ignored]
    assert sorted(every - set(runs)) == [], "in no lane"
    assert sorted({f for f in runs if runs.count(f) > 1}) == [], "in two lanes"


def test_the_readme_names_targets_and_tests_that_exist():
    """tests/README.md's `make` targets are the Makefile's, its test ids name existing tests, its budgets every suite."""
    import re as re_
    from tests.support.timing import budgets
    readme = (TESTS / "README.md").read_text()
    makefile = (TESTS.parent / "Makefile").read_text()
    targets = set(re_.findall(r"^([\w-]+):", makefile, re_.M))
    named = set(re_.findall(r"`make ([\w-]+)", readme))
    assert named and named <= targets, sorted(named - targets)
    for path, name in re_.findall(r"pytest -q (tests/[\w/]+\.py)(?:::(\w+))?", readme):
        source = (TESTS.parent / path).read_text()
        assert not name or f"def {name}(" in source, f"{path}::{name}"
    suites = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert suites | {"sanity", "lint", "make-test"} == set(budgets()), budgets()


def test_budgets_of_wall_and_cpu_and_what_is_over(tmp_path, monkeypatch):
    from tests.support import timing
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## Time budgets\n\n| suite | wall s | CPU s | measured |\n| --- | --- | --- | --- |\n"
                      "| `unit` | 300 | 90 | 244 / 77 |\n| `make-test` | 1,200 | 2,600 | 1,083 / 2,030 |\n"
                      "| `lint` | 150 | | 84 |\n\n## Next\n| `other` | 1 | 1 |\n")
    monkeypatch.setattr(timing, "README", readme)
    assert timing.budgets() == {"unit": timing.Budget(300, 90), "make-test": timing.Budget(1200, 2600),
                                "lint": timing.Budget(150, None)}
    now = time.time()
    run = {"started": now, "ended": now + 1, "tests": [{"nodeid": "tests/unit/test_x.py::test_a", "suite": "unit",
                                                         "setup": 0, "call": 1, "teardown": 0, "start": now,
                                                         "stop": now + 1, "outcome": "passed", "cpu": 95.0}]}
    lines = timing.summarize([run], extra={"make-test": (1250.0, 2000.0), "lint": (10.0, None)})
    said = {line.split()[0]: line for line in lines if line.startswith("  ") and line.split()}
    assert said["unit"].endswith("300 / 90 OVER BUDGET (CPU)")
    assert said["make-test"].endswith("1200 / 2600 OVER BUDGET (wall)") and said["lint"].endswith(" 150")


def test_the_summary_names_the_20_slowest_tests_with_their_wall_and_cpu():
    """issue 46 item 5: the slowest 20 tests named, longest first, each with its wall and (where measured) CPU."""
    from tests.support import timing
    tests = [{"nodeid": f"tests/unit/test_x.py::test_{i}", "suite": "unit", "setup": 0.0, "call": float(i),
              "teardown": 0.0, "start": 0.0, "stop": float(i), "outcome": "passed", "cpu": i / 2} for i in range(30)]
    lines = timing.summarize([{"started": 0.0, "ended": 30.0, "tests": tests}])
    head = lines.index(next(line for line in lines if "slowest tests" in line))
    named = lines[head + 1:]
    assert lines[head].startswith("20 slowest tests") and len(named) == 20
    assert [line.split()[2] for line in named] == [f"tests/unit/test_x.py::test_{i}" for i in range(29, 9, -1)]
    assert named[0].split()[:2] == ["29.0", "14.5"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/cpuacct").is_dir(),
                    reason="needs root and cgroup v1 cpuacct (tests/support/cpu_profile.py)")
@pytest.mark.skipif("MINBW_CPU_PROFILE" in os.environ,
                    reason="the run is being profiled: the kernel has one process accounting file, which it holds")
def test_cpu_profile_counts_a_daemonized_child_by_its_command(tmp_path):
    """tests/support/cpu_profile.py, which measured where make test's CPU goes (tests/README.md): a process that
    leaves the process tree (double fork, as the mini-cloud's services do) is still counted, by its name."""
    from tests.support import cpu_profile
    burn = tmp_path / "cpuburner"  # a script: the kernel names the process after it
    burn.write_text(f"#!{sys.executable}\nimport time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.6:\n    pass\n")
    burn.chmod(0o755)
    out = tmp_path / "profile"
    rc = cpu_profile.main(["run", str(out), "--", "sh", "-c", f"( {burn} & ) ; sleep 0.1; true"])
    assert rc == 0
    for _ in range(50):  # the orphan still runs after its parent returned: accounted when it exits
        time.sleep(0.1)
        text = cpu_profile.report(out)
        row = [line for line in text.splitlines() if line.endswith(" cpuburner")]
        if row and float(row[0].split()[0]) >= 0.5:
            break
    assert row and float(row[0].split()[0]) >= 0.5, text
    assert cpu_profile.report(out).splitlines()[0].startswith("cgroup: rc=0")


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/cpuacct").is_dir(),
                    reason="needs root and cgroup v1 cpuacct (tests/support/cpu_profile.py)")
def test_a_lanes_cpu_counts_the_daemons_it_started_and_each_test_gets_its_share(tmp_path):
    """make test's CPU per lane and per suite (tests/support/run_suites.py): a lane's cgroup counts a process that
    left the process tree, and the test during which it ran gets that CPU in the timing summary."""
    from types import SimpleNamespace
    from tests.support import timing
    from tests.support.cpu_profile import CpuGroup
    burn = tmp_path / "burn"
    burn.write_text(f"#!{sys.executable}\nimport time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.6:\n    pass\n")
    burn.chmod(0o755)
    group = CpuGroup.make("minbw-lane-test")
    assert group is not None
    try:
        timings = timing.Timings(str(group.path))
        started = time.time()
        subprocess.run(["sh", "-c", f"( {burn} & ) ; true"], preexec_fn=group.join, check=True)
        for _ in range(100):  # the orphan runs on after its parent returned
            if not group.pids():
                break
            time.sleep(0.1)
        assert group.cpu_s() >= 0.5
        for when in ("setup", "call", "teardown"):
            timings.add(SimpleNamespace(nodeid="tests/unit/test_x.py::test_burn", when=when, duration=0.1,
                                        start=started, stop=time.time(), failed=False, skipped=False))
        assert timings.tests["tests/unit/test_x.py::test_burn"]["cpu"] >= 0.5
        row = next(line for line in timing.summarize([timings.as_dict()]) if line.strip().startswith("unit"))
        assert float(row.split()[5]) >= 0.5  # the cpu s column
    finally:
        group.close()
    assert not group.path.exists()


def test_a_failed_test_is_named_with_its_message_in_the_last_lines(tmp_path):
    """make test ends with the failed tests, each with its phase and pytest's one-line message (a CI log may be
    read from its end only), from the times each lane's pytest writes (tests/support/timing.py)."""
    from tests.support import timing
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS.parent)!r})\nfrom tests.support import timing\n"
        "pytest_addoption = timing.pytest_addoption\npytest_configure = timing.pytest_configure\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('no cloud here')\n\n"
        "def test_fails():\n    assert 1 + 1 == 3, 'arithmetic'\n\ndef test_setup_fails(broken):\n    pass\n\n"
        "def test_passes():\n    pass\n")
    out = tmp_path / "times.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path),
                           "--times-json", str(out)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = timing.failures([json.loads(out.read_text())])
    assert len(lines) == 2, lines
    assert "test_x.py::test_fails - call: AssertionError: arithmetic" in lines[0], lines
    assert "test_x.py::test_setup_fails - setup: RuntimeError: no cloud here" in lines[1], lines


def test_the_mini_clouds_env_file_is_read_as_bash_sources_it(tmp_path):
    """tests/support/minicloud/envfile.py, the one reader of the env file cloud.sh writes (its templates rendered by
    lib/common.sh's ``render``, each name given a value, the quoted ones with spaces as two computes give them): every
    name and value is what bash's ``source`` exports."""
    from tests.support.minicloud.envfile import read_env
    support = TESTS / "support"
    templates = [support / "minicloud" / "templates" / f"{t}.in" for t in ("env", "env-ovn", "env-real-ovs")]
    names = {n for t in templates for n in re.findall(r"\$\{([A-Z_][A-Z0-9_]*)\}", t.read_text())}
    values = {n: f"/state/{n.lower()}" for n in names} | {"HOSTS_LIST": "devstack0 devstack1",
                                                         "REAL_OVS": "devstack0 devstack1"}
    env_file = tmp_path / "env"
    render = (f"S={tmp_path} VENV=/venv IP=127.0.0.1 DB_USER=u DB_PASS=p DB_PORT=1 SAY_TAG=t; "
              f". {support / 'lib' / 'common.sh'}; " + "; ".join(f"render {t}" for t in templates))
    with env_file.open("w") as out:
        subprocess.run(["bash", "-c", render], env=dict(os.environ, **values), stdout=out, check=True)
    sourced = subprocess.run(["env", "-i", "bash", "-c", f". {env_file}; env -0"], capture_output=True, text=True,
                             check=True).stdout
    exported = dict(v.split("=", 1) for v in sourced.split("\0") if v)
    read = read_env(env_file)
    assert read["MINICLOUD_HYPERVISORS"] == "devstack0 devstack1"  # written quoted: the quotes are the shell's
    assert read == {n: exported[n] for n in exported if n.startswith(("MINICLOUD_", "OS_"))}
