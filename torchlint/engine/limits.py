"""Limits on what a run reads: a file larger than ``max-file-size`` is skipped with a
one-line warning before any parse.

Parsing costs memory in proportion to a file's size (libcst's tree holds several hundred
bytes per byte of source), so one huge generated file could take gigabytes. The runner,
the notebook step and the language server ask :func:`oversize` before they parse.
"""

from __future__ import annotations

import re

# 500 kB: above the largest source file of the 25 measured repositories (below 300 kB), and
# below the hostile inputs (a 10 MB generated file, a 100 000-line file, a 1 MB line). Their
# trees take several hundred times their size (a 990 kB line of numbers: 275 MB for CPython's
# ast alone; 990 kB of flagged code: 1 GB with libcst), so they are skipped, never parsed
DEFAULT_MAX_FILE_SIZE = 500_000

_UNITS = {"": 1, "b": 1, "kb": 1000, "k": 1000, "kib": 1024, "mb": 1000_000, "m": 1000_000,
          "mib": 1 << 20, "gb": 1000_000_000, "g": 1000_000_000, "gib": 1 << 30}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(value: int | str) -> int | None:
    """``4000000``, ``"4 MB"``, ``"512kB"``, ``"2 MiB"`` -> bytes; None when unreadable."""
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(value)
    if match is None or match.group(2).lower() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_size(size: int) -> str:
    """``10_200_000`` -> ``"10.2 MB"`` (decimal units, as ``parse_size`` reads them)."""
    for unit, factor in (("GB", 1000_000_000), ("MB", 1000_000), ("kB", 1000)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def oversize(size: int, limit: int | None) -> str | None:
    """The one-line warning for a file of ``size`` bytes when it is over ``limit``
    (a :class:`~torchlint.config.file_settings.FileSettings`' ``max_file_size``), else None.
    The caller prefixes the path: ``big.py: skipped: ...``."""
    if limit is None or size <= limit:
        return None
    return (f"skipped: {format_size(size)} is over max-file-size ({format_size(limit)}); "
            "raise it in the configuration to lint it")
