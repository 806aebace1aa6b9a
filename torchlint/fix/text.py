"""Fixes as text: applying resolved edits to a source, and unified diffs as ``--diff``
prints them. Pure string work: no parser, no rule."""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection

from torchlint.diagnostic import Edit


def unified_diff(old: str, new: str, path: str, suffix: str = "") -> str:
    """A git-style diff of ``old`` -> ``new``; a missing final newline is marked per line."""
    a, b = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=a + suffix, tofile=b + suffix)
    return "".join(
        line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        for line in lines
    )


def apply_edits(text: str, edits: Collection[Edit]) -> str:
    unique = sorted(set(edits), key=lambda e: (e.start, e.end), reverse=True)
    for edit in unique:
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text
