"""The desired state of the last sync's inputs, kept beside the provider cache, so that a sync of unchanged agent
files does not parse them again (20,000 ini files take about 4 s).

It is keyed by a digest of everything the desired state is computed from: the source of the code that computes
it, the option values, and each file's path and bytes (not its size or time: content alone decides). A sync
whose key differs parses as without it and keeps the new state. The file is read only when it belongs to this
user and nobody else may write it (it is a pickle); one that is not, or that does not load, is ignored.

Loading it makes hundreds of thousands of objects at 10,000 hosts (frozen dataclasses, tuples, frozensets, mapping
views: none refers back to another, so none is in a reference cycle). The cyclic garbage collector, left on, runs
full collections over them while they are made and again during the rest of the sync: at 10,000 hosts the load
took 3-5 times as long, and the warm sync's part in the client twice as long (bench/sync_warm_gc.py;
bench/results/sync-warm-gc-10000-2026-12-06.txt).
So the load runs with the collector paused, and what it made is then moved out of its generations
(:func:`gc.freeze`): refcounting still frees it when the sync's result is dropped."""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import os
import pickle
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType, ModuleType

from minbw.cache.files import write_whole
from minbw.model.providers import DesiredState

FORMAT = 1


def memo_path(cache_path: str | os.PathLike) -> Path:
    """Where the desired state is kept: beside the provider cache file."""
    p = Path(cache_path)
    return p.with_name(p.name + ".desired")


@functools.lru_cache(maxsize=None)
def _code_digest(modules: tuple[ModuleType, ...]) -> bytes:
    """The digest of the modules' sources, read through their loaders (a file, or the zip Ansible ships a module
    in)."""
    h = hashlib.sha256()
    for m in modules:
        # the ignore below: modules imported from a file or a zip, whose loaders read data (get_data)
        h.update(m.__name__.encode() + b"\0" + m.__loader__.get_data(m.__file__) + b"\0")  # type: ignore[union-attr]
    return h.digest()


def key(paths: Iterable[str], *, code: Iterable[ModuleType], options: Mapping) -> str | None:
    """The digest of the inputs: ``code`` (the modules that compute the desired state: their sources),
    ``options`` (JSON values: host, the agents' option values, ...) and each file of ``paths``. None when a file
    cannot be read or an option is not JSON: such a sync is not kept."""
    h = hashlib.sha256()
    try:
        h.update(_code_digest(tuple(code)))
        h.update(json.dumps([FORMAT, options], sort_keys=True).encode())
    except (OSError, AttributeError, TypeError, ValueError):  # a module without its source; an option not JSON
        return None
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        h.update(f"\0{path}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def load(path: Path, digest: str) -> DesiredState | None:
    """The state kept in ``path`` under ``digest``; None when there is none, another key's, or a file that is
    not this user's own, that others may write, or that does not load."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            if f.readline().rstrip(b"\n") != digest.encode():
                return None
            state = _uncollected(pickle.load, f)
    except Exception:  # noqa: BLE001 - a file that cannot be read or does not load (whatever it raises) is ignored
        return None
    return state if isinstance(state, DesiredState) else None


def _uncollected(load, f):
    """``load(f)`` with the cyclic garbage collector paused (when it was on), what it made then frozen out of the
    collector's generations (:func:`gc.freeze`, which moves every object tracked so far: the process's own are as
    long-lived), and the collector as it was. Lets what ``load`` raises through."""
    if not gc.isenabled():
        return load(f)
    gc.disable()
    try:
        loaded = load(f)
        gc.freeze()
        return loaded
    finally:
        gc.enable()


def save(path: Path, digest: str, state: DesiredState) -> bool:
    """Keep ``state`` under ``digest`` (written whole, then renamed over the old file; mode 0600). False when it
    could not be written (the next sync parses again: nothing else depends on it)."""

    def write(f) -> None:
        f.write(digest.encode() + b"\n")
        _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(state)

    return write_whole(path, ".minbw-desired-", write, binary=True)


def _frozen(d: dict) -> MappingProxyType:
    return MappingProxyType(d)


class _Pickler(pickle.Pickler):
    """Pickles the read-only views (inventories) of a desired state as the views of their dicts."""

    def reducer_override(self, obj):
        """A read-only view pickles as its dict, rebuilt as a view on load; anything else: NotImplemented (pickle's own
        way)."""
        if isinstance(obj, MappingProxyType):  # (mappingproxy cannot be subclassed)
            return _frozen, (dict(obj),)
        return NotImplemented
