"""The README's tours, read from README.md and run as written: each command in order, in one bash, from the
repository's root. A command exits 0 unless its comment starts with the exit code it announces
(``# exit 4: ...``).

``tour_venv()`` is the virtualenv README.md's install block (``<!-- tour: install -->``) makes, as a user on a
fresh machine runs it: the block run as written in a home of its own (``.state/tour/KEY/home``), with a PATH that
holds no virtualenv of this repository. KEY hashes python/pyproject.toml, the block and the system's python3, so
the venv is made from nothing when one of them changes; when only the core's files changed, the block is run
again in it (pip reinstalls minbw from python/). ``make tour-venv`` (a set-up step of ``make test`` and
``make functional``) makes it before the suites run; tests/functional/test_readme_tour.py runs the tour in it.
Run as a script, this module makes it and prints its path."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
ANNOUNCED = re.compile(r"#\s*exit (\d+):")
TOUR_STATE = REPO / ".state" / "tour"


def tour(name: str, text: str | None = None) -> list[str]:
    """The command lines of the code block under ``<!-- tour: NAME -->`` (comment-only and blank lines left out)."""
    text = README.read_text() if text is None else text
    m = re.search(rf"<!-- tour: {re.escape(name)} -->\s*```\n(.*?)```", text, re.S)
    assert m, f"README.md has no tour {name!r}"
    return [line for line in m.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def expected_exit(line: str) -> int:
    m = ANNOUNCED.search(line)
    return int(m.group(1)) if m else 0


def run_tour(lines: list[str], env: dict, timeout: int = 900, bin_dir: Path | None = None,
             cwd: Path = REPO, own_path: bool = False) -> list[tuple[str, int, str]]:
    """Each line run in order in one bash (exports carry on), in ``cwd``: (line, exit code, its output).
    ``bin_dir`` comes first on PATH (default: this Python's, the repository's virtualenv), unless ``own_path``
    (``env``'s PATH as it is)."""
    script, marks = [], []
    for i, line in enumerate(lines):
        out = f"__OUT_{i}__"
        marks.append(out)
        script.append(f"{{ {line.split(' #')[0]} ; }} 2>&1; echo \"{out} $?\"")
    if not own_path:
        env = dict(env, PATH=f"{bin_dir or Path(sys.executable).parent}{os.pathsep}"
                             f"{env.get('PATH', os.environ['PATH'])}")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    results, rest = [], proc.stdout
    for i, line in enumerate(lines):
        before, sep, after = rest.partition(marks[i] + " ")
        assert sep, f"the tour stopped before {line!r}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        code, _, rest = after.partition("\n")
        results.append((line, int(code), before))
    return results


# ---- the virtualenv of README.md's install block

def user_path() -> str:
    """PATH without what a user who just cloned the repository does not have: the repository's virtualenvs and
    any directory with a ``minbw`` or ``openstack`` command (what is missing from the block's venv must fail)."""
    keep = []
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not entry or entry in keep or Path(entry).resolve().is_relative_to(REPO):
            continue
        if any((Path(entry) / cmd).exists() for cmd in ("minbw", "openstack")):
            continue
        keep.append(entry)
    return os.pathsep.join(keep)


def user_env(home: Path) -> dict:
    """A user's shell on a fresh machine: their own home, ``user_path()``, none of this repository's settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OS_", "ANSIBLE_", "VIRTUAL_ENV", "PYTHON", "MINBW_"))}
    # pip's wheel cache stays the machine's: the venv is made from the package registry, as a user's is
    return dict(env, HOME=str(home), PATH=user_path(), PIP_CACHE_DIR=str(Path.home() / ".cache" / "pip"))


def _core_files_hash() -> str:
    """What pip installs from python/: every file but build output and caches."""
    h = hashlib.sha256()
    skip = {"build", "dist", "__pycache__"}
    for path in sorted((REPO / "python").rglob("*")):
        rel = path.relative_to(REPO / "python")
        if path.is_file() and not (set(rel.parts) & skip or any(p.endswith(".egg-info") for p in rel.parts)
                                   or path.suffix == ".pyc"):
            h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def tour_venv_key(block: list[str]) -> str:
    python3 = shutil.which("python3", path=user_path())
    assert python3, "no python3 on PATH (Debian: apt-get install python3 python3-venv)"
    which = subprocess.run([python3, "-c", "import sys; print(sys.version, sys.base_prefix)"], check=True,
                           capture_output=True, text=True, env=dict(os.environ, PATH=user_path())).stdout
    h = hashlib.sha256((REPO / "python/pyproject.toml").read_bytes())
    h.update("\n".join(block).encode() + b"\0" + which.encode())
    return h.hexdigest()[:16]


def tour_venv() -> tuple[Path, Path]:
    """(the virtualenv, its home) that README.md's install block makes: made once per KEY (see the module's
    docstring), under a lock (suites side by side), the block run again when the core's files changed."""
    block = tour("install")
    venv_arg = next((m.group(1) for line in block if (m := re.match(r"python3 -m venv (\S+)", line))), None)
    assert venv_arg and venv_arg.startswith("~/"), f"the install block makes no venv under ~: {block}"
    root = TOUR_STATE / tour_venv_key(block)
    home = root / "home"
    venv = home / venv_arg[2:]
    stamp = root / "installed"
    TOUR_STATE.mkdir(parents=True, exist_ok=True)
    with open(TOUR_STATE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        core = _core_files_hash()
        if stamp.exists() and stamp.read_text() == core and (venv / "bin/minbw").exists():
            return venv, home
        for old in TOUR_STATE.iterdir():  # the venvs of earlier keys (a few hundred MB each)
            if old.is_dir() and old != root:
                shutil.rmtree(old, ignore_errors=True)
        stamp.unlink(missing_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        try:
            results = run_tour(block, user_env(home), timeout=1800, own_path=True)
            wrong = [(line, code, out[-3000:]) for line, code, out in results if code != 0]
            assert not wrong, f"README.md's install block failed: {wrong}"
            assert (venv / "bin/minbw").exists(), f"README.md's install block made no {venv}/bin/minbw"
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)  # the next run starts from nothing
            raise
        stamp.write_text(core)
    return venv, home


if __name__ == "__main__":
    venv, _ = tour_venv()
    print(venv)
