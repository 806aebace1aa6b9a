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
    if d.cell is None:  # GitHub cannot point into a notebook cell: the message says where
        properties += [("line", str(d.line)), ("col", str(d.column)),
                       ("endLine", str(d.end_line)), ("endColumn", str(d.end_column))]
        where = f"{d.path}:{d.line}:{d.column}"
    else:
        where = f"{d.path}:cell {d.cell}:{d.line}:{d.column}"
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::error {rendered}::{escape_data(f'{where}: {d.code} {d.message}')}"


def render_github(diagnostics: Sequence[Diagnostic], stream: TextIO,
                  sources: Sources | None = None) -> None:
    for diagnostic in diagnostics:
        stream.write(format_github(diagnostic) + "\n")
