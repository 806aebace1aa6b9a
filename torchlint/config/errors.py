"""The one error type of settings."""

from __future__ import annotations

import os
from pathlib import PurePath


class ConfigError(Exception):
    """A problem with settings; the CLI prints it (and its ``snippet``) and exits 2.

    ``snippet``: lines showing where in a file the problem is (the line and a caret), or "".
    """

    def __init__(self, message: str, snippet: str = "") -> None:
        super().__init__(message)
        self.snippet = snippet


def caret_snippet(text: str, line: int, column: int, width: int = 1) -> str:
    """The 1-based ``line`` of ``text`` with a caret under ``column`` (1-based), as Ruff and
    rustc draw it."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    source = lines[line - 1].expandtabs(1)
    gutter = " " * len(str(line))
    width = max(1, min(width, max(1, len(source) - column + 1)))
    return (f"{gutter} |\n{line} | {source}\n"
            f"{gutter} | {' ' * (column - 1)}{'^' * width}")


def shown(path: str | PurePath) -> str:
    """``path`` as an error names it: relative to the current folder when it lies below it
    (as Ruff names files), as given otherwise."""
    try:
        cwd = os.getcwd()
        relative = os.path.relpath(os.path.abspath(path), cwd)
    except (ValueError, OSError):  # another drive; no current folder
        return str(path)
    if os.path.dirname(cwd) == cwd:  # run from the root of the file system: say it all
        return str(path)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return str(path)
    return relative
