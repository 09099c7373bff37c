"""The README's tours, read from README.md and run as written: each command in order, in one bash, from the
repository's root. A command exits 0 unless its comment starts with the exit code it announces
(``# exit 4: ...``)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
ANNOUNCED = re.compile(r"#\s*exit (\d+):")


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
             cwd: Path = REPO) -> list[tuple[str, int, str]]:
    """Each line run in order in one bash (exports carry on), in ``cwd``: (line, exit code, its output).
    ``bin_dir`` comes first on PATH (default: this Python's, the repository's virtualenv)."""
    script, marks = [], []
    for i, line in enumerate(lines):
        out = f"__OUT_{i}__"
        marks.append(out)
        script.append(f"{{ {line.split(' #')[0]} ; }} 2>&1; echo \"{out} $?\"")
    env = dict(env, PATH=f"{bin_dir or Path(sys.executable).parent}{os.pathsep}{env.get('PATH', os.environ['PATH'])}")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    results, rest = [], proc.stdout
    for i, line in enumerate(lines):
        before, sep, after = rest.partition(marks[i] + " ")
        assert sep, f"the tour stopped before {line!r}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        code, _, rest = after.partition("\n")
        results.append((line, int(code), before))
    return results
