"""The default flake8-style line: ``path:line:col: CODE message``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from torchlint.diagnostic import Diagnostic

if TYPE_CHECKING:
    from torchlint.reporters.sources import Sources


def location(diagnostic: Diagnostic) -> str:
    if diagnostic.cell is not None:
        return f"{diagnostic.path}:cell {diagnostic.cell}:{diagnostic.line}:{diagnostic.column}"
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}"


def format_concise(diagnostic: Diagnostic) -> str:
    return f"{location(diagnostic)}: {diagnostic.code} {diagnostic.message}"


def render_concise(diagnostics: Sequence[Diagnostic], stream: TextIO,
                   sources: Sources | None = None) -> None:
    for diagnostic in diagnostics:
        stream.write(format_concise(diagnostic) + "\n")
