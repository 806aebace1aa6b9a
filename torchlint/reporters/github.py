"""GitHub Actions workflow commands: one ``::error`` annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from torchlint.diagnostic import Diagnostic

if TYPE_CHECKING:
    from torchlint.reporters.sources import Sources


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(d: Diagnostic) -> str:
    properties = [("title", f"torchlint ({d.code})"), ("file", d.path)]
    if d.cell is None or d.in_file is not None:
        # a notebook's finding is annotated on its line of the .ipynb text
        line, column, end_line, end_column = d.file_region
        properties += [("line", str(line)), ("col", str(column)),
                       ("endLine", str(end_line)), ("endColumn", str(end_column))]
    if d.cell is None:
        where = f"{d.path}:{d.line}:{d.column}"
    else:  # the message says where in the notebook
        where = f"{d.path}:cell {d.cell}:{d.line}:{d.column}"
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::error {rendered}::{escape_data(f'{where}: {d.code} {d.message}')}"


def render_github(diagnostics: Sequence[Diagnostic], stream: TextIO,
                  sources: Sources | None = None) -> None:
    for diagnostic in diagnostics:
        stream.write(format_github(diagnostic) + "\n")
