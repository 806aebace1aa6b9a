"""The default flake8-style line: ``path:line:col: CODE message``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from torchlint.diagnostic import Diagnostic


def format_concise(diagnostic: Diagnostic) -> str:
    location = f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}"
    if diagnostic.cell is not None:
        location = f"{diagnostic.path}:cell {diagnostic.cell}:{diagnostic.line}:{diagnostic.column}"
    return f"{location}: {diagnostic.code} {diagnostic.message}"


def render_concise(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for diagnostic in diagnostics:
        stream.write(format_concise(diagnostic) + "\n")
