"""A progress bar for long runs: on a terminal only, never in pipes or CI."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TextIO, TypeVar

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


def with_progress(items: Iterable[T], total: int, stream: TextIO,
                  environ: Mapping[str, str] | None = None) -> Iterator[T]:
    """Yield ``items``, drawing a transient bar on ``stream`` when :func:`wants_progress`."""
    if not wants_progress(total, stream, environ):
        yield from items
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(file=stream)
    columns = (TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("check", total=total)
        for item in items:
            yield item
            progress.advance(task)
