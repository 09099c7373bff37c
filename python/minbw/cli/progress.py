"""Progress of long runs on stderr: a bar redrawn in place when stderr is a terminal, plain lines
(every ``every`` items) otherwise, so logs and CI output stay readable."""

from __future__ import annotations

import contextlib
import sys
import time

WIDTH = 30


def bar(step: str, done: int, total: int) -> str:
    """``minbw: providers read [#########.....]  300/500`` (pure)."""
    filled = WIDTH * done // total if total else WIDTH
    return f"minbw: {step} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}"


class Progress:
    """The ``progress(step, done, total)`` callback of the core's long operations."""

    def __init__(self, stream, tty: bool, every: int = 500, interval: float = 0.1):
        self.stream, self.tty, self.every, self.interval = stream, tty, every, interval
        self._drawn = 0.0
        self._open = False

    def __call__(self, step: str, done: int, total: int) -> None:
        if not self.tty:
            if done % self.every == 0:
                print(f"minbw: {step} {done}/{total}", file=self.stream, flush=True)
            return
        now = time.monotonic()
        if done < total and now - self._drawn < self.interval:
            return  # redraw at most ten times a second, and always at the end
        self._drawn = now
        self.stream.write("\r\033[K" + bar(step, done, total))
        self._open = done < total
        if not self._open:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:  # stopped half-way (an error): end the bar's line before the message
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


@contextlib.contextmanager
def progress_of(args=None, stream=None):
    stream = stream or sys.stderr
    progress = Progress(stream, stream.isatty())
    try:
        yield progress
    finally:
        progress.close()
