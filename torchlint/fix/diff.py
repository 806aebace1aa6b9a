"""Unified diffs of fixes, as ``--diff`` prints them."""

from __future__ import annotations

import difflib
import os


def unified_diff(old: str, new: str, path: str, suffix: str = "") -> str:
    """A git-style diff of ``old`` -> ``new``; a missing final newline is marked per line."""
    a, b = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=a + suffix, tofile=b + suffix)
    return "".join(
        line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        for line in lines
    )
