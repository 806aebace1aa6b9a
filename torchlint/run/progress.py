"""A progress bar for long runs: on a terminal only, never in pipes, CI, quiet runs or
machine-readable output. It advances as each file's result arrives, in whatever order the
workers finish, so its count and its estimate of the time left stay true."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

MIN_FILES = 50  # fewer files finish before a bar would be worth drawing


def _is_set(value: str | None) -> bool:
    """A flag variable: set unless empty, 0, false or no."""
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def wants_progress(total: int, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    if total < MIN_FILES:
        return False
    if _is_set(environ.get("CI")) or _is_set(environ.get("TORCHLINT_NO_PROGRESS")):
        return False
    if environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    """``with ProgressBar(total, sys.stderr, enabled=...) as bar: ... bar.advance(n)``.

    Draws (transient, on ``stream``) only when ``enabled`` and :func:`wants_progress`."""

    def __init__(self, total: int, stream: TextIO, *, enabled: bool = True,
                 environ: Mapping[str, str] | None = None) -> None:
        self.total = total
        self.shown = enabled and wants_progress(total, stream, environ)
        self._stream = stream
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        if self.shown:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            columns = (TextColumn("checking"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
            self._progress = Progress(*columns, console=Console(file=self._stream),
                                      transient=True, speed_estimate_period=10.0)
            self._progress.__enter__()
            self._task = self._progress.add_task("check", total=self.total)
        return self

    def advance(self, count: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, count)

    def skip(self, count: int) -> None:
        """``count`` files answered at once (from the cache): counted, but kept out of the
        speed the time left is estimated from."""
        if self._progress is not None and count:
            done = self._progress.tasks[0].completed + count
            self._progress.reset(self._task, total=self.total, completed=done)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, value, traceback)
            self._progress = None


def with_progress(items: Iterable[T], total: int, stream: TextIO,
                  environ: Mapping[str, str] | None = None) -> Iterator[T]:
    """Yield ``items``, advancing a bar (see :class:`ProgressBar`) by one for each."""
    with ProgressBar(total, stream, environ=environ) as bar:
        for item in items:
            yield item
            bar.advance()
