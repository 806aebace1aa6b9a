"""The notebook step of a run: read a .ipynb, lint its code cells as one program, map the
findings to cells, and write fixes back into the cells' sources."""

from __future__ import annotations

import json
from dataclasses import replace

from torchlint.codes import SYNTAX_ERROR, syntax_error_at
from torchlint.config.settings import Settings
from torchlint.fix.text import unified_diff
from torchlint.notebook import Notebook, NotebookError
from torchlint.run.file import lint_one
from torchlint.run.outcome import FileOutcome, Mode
from torchlint.source import SourceFile, write_atomic


def _not_a_notebook(path: str, message: str, settings: Settings) -> FileOutcome:
    if SYNTAX_ERROR not in settings.for_file(path).codes:
        return FileOutcome(path)
    return FileOutcome(path, [syntax_error_at(path, 1, 1, message)])


def process_notebook(path: str, settings: Settings, mode: Mode,
                     data: bytes | None = None) -> FileOutcome:
    """Lint (and with ``mode.fix`` fix) one .ipynb file. Never raises for a bad notebook.

    With ``data`` (stdin) the notebook is those bytes, and the fixed notebook is returned
    as ``fixed_text`` instead of being written to ``path``."""
    try:
        notebook = Notebook.read(path) if data is None else Notebook.from_bytes(path, data)
    except NotebookError as exc:
        if str(exc).startswith("cannot read"):
            return FileOutcome(path, error=str(exc))
        return _not_a_notebook(path, str(exc), settings)
    except (RecursionError, ValueError) as exc:
        return _not_a_notebook(path, f"not a notebook: {exc}", settings)
    if not notebook.cells or not notebook.is_python:
        return FileOutcome(path)
    source = SourceFile(path=path, text=notebook.program)
    file_settings = settings.for_file(path)
    outcome = lint_one(source, file_settings, replace(mode, fix=False, diff=False) if mode.diff
                       else mode)
    mapped = [notebook.map_diagnostic(d) for d in outcome.diagnostics]
    if not (mode.fix or mode.diff):
        return FileOutcome(path, mapped, error=outcome.error)
    fixed_program = outcome.fixed_text
    if mode.diff:  # lint_one diffs the program; the diff is redone per cell, in cell terms
        fixing = lint_one(source, file_settings, replace(mode, fix=True, diff=False))
        fixed_program = fixing.fixed_text
    if fixed_program is None or fixed_program == notebook.program:
        return FileOutcome(path, mapped, error=outcome.error)
    changed = notebook.changed_cells(fixed_program)
    if changed is None:  # a fix moved a cell marker: write nothing rather than guess
        return FileOutcome(path, mapped, error="the fixes could not be mapped back to the cells;"
                           " nothing was written")
    if mode.diff:
        return FileOutcome(path, mapped, diff=_cells_diff(path, notebook, changed),
                           error=outcome.error)
    new_raw = notebook.with_sources(changed)
    try:
        json.loads(new_raw)
    except json.JSONDecodeError:  # pragma: no cover - a bug in the writer, never a user's
        return FileOutcome(path, mapped, error="the fixed notebook would not be valid JSON;"
                           " nothing was written")
    if data is not None:
        return FileOutcome(path, mapped, fixed=outcome.fixed, fixed_text=new_raw,
                           error=outcome.error)
    try:
        write_atomic(path, new_raw.encode("utf-8"))
    except OSError as exc:
        return FileOutcome(path, mapped, error=f"cannot write the fixes: {exc}")
    return FileOutcome(path, mapped, fixed=outcome.fixed, error=outcome.error)


def _cells_diff(path: str, notebook: Notebook, changed: dict[int, str]) -> str:
    parts: list[str] = []
    for index in sorted(changed):
        old = notebook.cell_source(index) or ""
        new = changed[index]
        parts.append(unified_diff(old, new, path, f":cell {index}"))
    return "".join(parts)
