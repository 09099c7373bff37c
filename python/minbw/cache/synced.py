"""The record of the last complete sync (:class:`minbw.model.synced.Synced`), kept beside the provider cache: what a
warm sync compares the listing with before it reads or plans anything (:func:`minbw.ops.sync.warm`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from minbw.cache.files import write_whole
from minbw.model.synced import Synced

FORMAT = 1


def record_path(cache_path: str | os.PathLike, scope: str) -> Path:
    """Where the last complete sync of the units ``scope`` names (:func:`minbw.model.synced.state_scope`), against a
    cache's Placement, is recorded: ``FILE.synced-SCOPE`` beside the cache file, one per scope: syncs of different
    hosts sharing the cache keep theirs apart, and a sync of the same units with other contents replaces the
    record (which holds the fingerprint of its desired state), so records do not pile up."""
    p = Path(cache_path)
    return p.with_name(f"{p.name}.synced-{scope}")


def load(path: Path) -> Synced | None:
    """The record in ``path``; None when there is none, or it cannot be read, is of another format, or another
    shape."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        return Synced.from_dict(data["synced"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(path: Path, synced: Synced) -> bool:
    """Keep ``synced`` in ``path`` (written whole, then renamed over the old file). False when it could not be
    written (the next sync takes the full path: nothing else depends on it)."""
    return write_whole(path, ".minbw-synced-", lambda f: json.dump({"format": FORMAT, "synced": synced.to_dict()}, f))


def forget(path: Path) -> None:
    """Remove the record (nothing when there is none or it cannot be removed: a record whose providers moved is not
    trusted anyway). Returns None."""
    try:
        path.unlink()
    except OSError:
        pass
