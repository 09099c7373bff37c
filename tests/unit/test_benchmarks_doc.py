"""docs/benchmarks.md points at what exists: every ``#anchor`` link of the page and every link of the tree to one of
its headings (the page's name, ``#`` and the heading's slug) finds that heading, every repository path the page
names in backquotes is in the tree, and every raw output a console block's ``--json-out`` names is in bench/results/
(the figures' files; the earlier ones are in git)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "benchmarks.md"
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)
TOP = ("bench/", "docs/", "python/", "tests/", "patches/")


def slugs(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (GitHub's and MyST's slugs, as tests/ansible/test_shipped_docs.py)."""
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.*)$", FENCE.sub("", text), re.MULTILINE)
    }


def missing_anchors(text: str) -> list[str]:
    """The page's own ``](#anchor)`` links that find no heading of it."""
    return [a for a in re.findall(r"\]\(#([^)\s]+)\)", FENCE.sub("", text)) if a not in slugs(text)]


def missing_paths(text: str, repo: Path) -> list[str]:
    """Repository paths named in backquotes outside code blocks, and ``--json-out`` files of its console blocks,
    that are not in ``repo`` (a path with a wildcard, a placeholder or a ``::`` test id is judged by its file)."""
    named = [p.split("::")[0] for p in re.findall(r"`([^`\s]+)`", FENCE.sub("", text)) if p.startswith(TOP)]
    named += [f for block in CONSOLE.findall(text) for f in re.findall(r"--json-out\s+(bench/results/\S+)", block)]
    return [p for p in named if not re.search(r"[*{]|DATE", p) and not (repo / p).exists()]


def test_the_page_s_anchors_exist():
    assert missing_anchors(PAGE.read_text()) == []


def test_the_tree_s_links_into_the_page_find_their_headings():
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "*.md", "*.rst", "*.py", "*.yml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    anchors = slugs(PAGE.read_text())
    wrong = [
        f"{f}: #{a}"
        for f in files
        if (REPO / f).is_file()
        for a in re.findall(r"benchmarks\.md#([\w-]+)", (REPO / f).read_text(errors="replace"))
        if a not in anchors
    ]
    assert wrong == []


def test_the_paths_and_raw_outputs_the_page_names_exist():
    assert missing_paths(PAGE.read_text(), REPO) == []


@pytest.mark.parametrize(
    "text, anchors, paths",
    [
        ("# A b\n[x](#a-b) [y](#c)\n```\n[z](#d)\n```\n", ["c"], []),
        (
            (
                "`bench/run.py` `bench/results/gone.txt` `bench/results/x-DATE.json` `tests/unit/x.py::t` `/etc/x`\n"
                "```console\n$ .venv/bin/python bench/run.py --json-out bench/results/gone.json\n```\n"
            ),
            [],
            ["bench/results/gone.txt", "tests/unit/x.py", "bench/results/gone.json"],
        ),
    ],
)
def test_the_checks_see_what_is_missing(text, anchors, paths):
    assert missing_anchors(text) == anchors
    assert missing_paths(text, REPO) == paths
