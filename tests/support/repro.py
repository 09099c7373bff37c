"""The end every reproduction of upstream behaviour shares (tests/support/*/repro_*.py): what it saw as one JSON line
on standard output, with the steps that did not happen as its docstring says (``not_as_described``), each of those
on standard error too, and exit 1 when there is any (0: all as described). The standard library only: the
reproductions run with the mini-cloud's Python too."""

from __future__ import annotations

import json
import sys
from typing import NoReturn


def report(facts: dict, missed: list[str]) -> NoReturn:
    facts["not_as_described"] = missed
    print(json.dumps(facts), flush=True)
    for what in missed:
        print(f"not as described: {what}", file=sys.stderr)
    sys.exit(1 if missed else 0)
