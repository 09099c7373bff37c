"""The exporter process's allocator (glibc's malloc), for a process that runs for months with 8 reader threads
(docs/benchmarks.md "The exporter at 10,000 hosts"): nothing here for the library in general.

- :func:`limit_arenas`, once at the exporter's start, before its threads start: at most :data:`ARENAS` malloc
  arenas (glibc's default is 8 per CPU; each reader thread that allocates gets one, and freed memory scattered
  over many arenas is not given back), and a fixed mmap threshold (glibc raises its own after each large free,
  up to 32 MiB, so that the listings' JSON bodies and the rendered bodies, several MiB each, land in the heap
  and fragment it instead of being mapped and unmapped).
- :func:`trim`, after each collection cycle: what the cycle freed given back to the system (``malloc_trim``).

Both do nothing where the C library is not glibc (musl, macOS) or cannot be loaded."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
M_ARENA_MAX = -8
ARENAS = 2
MMAP_THRESHOLD = 1 << 20  # bytes: larger blocks are mapped on their own and unmapped when freed


@functools.lru_cache(maxsize=1)
def _glibc():
    """glibc's ``mallopt`` and ``malloc_trim``, or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        version = libc.gnu_get_libc_version  # glibc only
        mallopt, malloc_trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return mallopt, malloc_trim


def limit_arenas(arenas: int = ARENAS, mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """At most ``arenas`` malloc arenas and a fixed mmap threshold in this process (call it before the threads
    start: an arena a thread already has stays); False where this is not glibc."""
    glibc = _glibc()
    if glibc is None:
        return False
    mallopt = glibc[0]
    return bool(mallopt(M_ARENA_MAX, arenas)) & bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold))


def trim() -> bool:
    """Give the memory malloc holds free back to the system; False where this is not glibc (or nothing was)."""
    glibc = _glibc()
    return bool(glibc[1](0)) if glibc is not None else False
