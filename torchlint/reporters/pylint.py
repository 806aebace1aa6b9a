"""pylint's parseable format: ``path:line: [CODE(name), ] message``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from torchlint.diagnostic import Diagnostic

if TYPE_CHECKING:
    from torchlint.reporters.sources import Sources


def render_pylint(diagnostics: Sequence[Diagnostic], stream: TextIO,
                  sources: Sources | None = None) -> None:
    for d in diagnostics:
        message = f"cell {d.cell}: {d.message}" if d.cell is not None else d.message
        line = d.file_region[0]  # a notebook's: the line in the .ipynb text
        stream.write(f"{d.path}:{line}: [{d.code}({d.name}), ] {message}\n")
