"""The cache room's files written whole: a temporary file beside the target, renamed over it, so a reader sees the
old file or the new one, never half of one. I/O."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def write_whole(
    path: Path, prefix: str, write: Callable[[IO[Any]], object], *, binary: bool = False, strict: bool = False
) -> bool:
    """Write ``path`` through ``write`` (given the open temporary file, text or ``binary``), made in ``path``'s folder
    (created 0700 if missing; the file 0600, as mkstemp makes it) under ``prefix``, then renamed over ``path``.
    Returns True; False when it could not be written (an OSError: the temporary file removed, ``path`` as it was),
    or with ``strict`` that OSError raised (for callers that report a file they could not write). Any other
    exception ``write`` raises is raised after the temporary file is removed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix)
    except OSError:
        if strict:
            raise
        return False
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
        os.replace(tmp, path)
    except OSError:
        os.unlink(tmp)
        if strict:
            raise
        return False
    except BaseException:
        os.unlink(tmp)
        raise
    return True
