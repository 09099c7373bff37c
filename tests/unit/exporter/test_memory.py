"""minbw.exporter.memory: glibc's malloc tuned for the exporter's process, nothing done elsewhere."""
from __future__ import annotations

from minbw.exporter import memory


def test_with_glibc_or_without_the_calls_never_fail(monkeypatch):
    glibc = memory._glibc() is not None
    assert memory.limit_arenas() is glibc  # this machine's C library decides
    assert isinstance(memory.trim(), bool)
    monkeypatch.setattr(memory, "_glibc", lambda: None)  # musl, macOS: nothing to do
    assert memory.limit_arenas() is False and memory.trim() is False
