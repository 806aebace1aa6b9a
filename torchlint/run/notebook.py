"""The notebook step of a run: read a .ipynb, lint its code cells as one program, map the
findings to cells, and write fixes back into the cells' sources.

A cell that does not parse (an exercise's ``model = ``) is reported as TL001 on that cell
and left out; every other cell is linted, in order, with what earlier cells imported and
defined, as Jupyter runs them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from torchlint.codes import SYNTAX_ERROR, syntax_error_at
from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.diagnostic import Diagnostic
from torchlint.fix.text import unified_diff
from torchlint.notebook import Notebook, NotebookError
from torchlint.run.file import lint_one
from torchlint.run.outcome import FileOutcome, Mode, cannot_fix
from torchlint.source import SourceFile, read_file, write_atomic


@dataclass
class CellsLint:
    """The lint of a notebook's program, without the cells that do not parse."""

    outcome: FileOutcome  # findings and fixes on the program (not yet mapped to cells)
    program: str  # the program linted: the cells left out are blanked
    broken: dict[int, Diagnostic] = field(default_factory=dict)  # cell -> its TL001

    def findings(self, notebook: Notebook, settings: FileSettings) -> list[Diagnostic]:
        """Every finding on its cell: the cells' TL001 (when enabled) and the rest."""
        mapped = [notebook.map_diagnostic(d) for d in self.outcome.diagnostics]
        if SYNTAX_ERROR in settings.codes:
            mapped += self.broken.values()
        return sorted(mapped, key=lambda d: (d.cell or 0, d.line, d.column, d.code))


def _cannot_parse(outcome: FileOutcome) -> Diagnostic | None:
    return next((d for d in outcome.diagnostics
                 if d.code == SYNTAX_ERROR and d.message.startswith("cannot parse")), None)


def _cell_error(notebook: Notebook, index: int) -> Diagnostic | None:
    """TL001 for cell ``index`` when its code does not parse on its own (CPython's own
    position and message, as for a .py file)."""
    from torchlint.engine.parse import python_syntax_error

    cell = notebook.cell(index)
    if cell is None:
        return None
    error = python_syntax_error(cell.neutral)
    if error is None:
        return None
    line, column, message = error
    lines = cell.source.splitlines() or [""]
    line = max(1, min(line, len(lines)))
    column = max(1, min(cell.source_column(line, column), len(lines[line - 1]) + 1))
    found = syntax_error_at(notebook.path, line, column, f"cannot parse: {message}")
    return notebook.place(replace(found, cell=index))


def lint_cells(notebook: Notebook, settings: FileSettings, mode: Mode) -> CellsLint:
    """Lint (with ``mode``) the notebook's cells as one program, leaving out each cell
    that does not parse."""
    # TL001 is needed to see a failure even when the user disabled it
    checking = replace(settings, codes=settings.codes | {SYNTAX_ERROR})
    program = notebook.program
    outcome = lint_one(SourceFile(path=notebook.path, text=program), checking, mode)
    failure = _cannot_parse(outcome)
    if failure is None:
        return CellsLint(_without_tl001(outcome, settings), program)
    broken: dict[int, Diagnostic] = {}
    for cell in notebook.cells:  # first each cell on its own, as Jupyter compiles it
        error = _cell_error(notebook, cell.index)
        if error is not None:
            broken[cell.index] = error
    for _ in range(len(notebook.cells) + 1):
        program = notebook.program_without(broken)
        outcome = lint_one(SourceFile(path=notebook.path, text=program), checking, mode)
        failure = _cannot_parse(outcome)
        if failure is None:
            return CellsLint(_without_tl001(outcome, settings), program, broken)
        # the cells parse one by one but not together: blame the cell the parser stopped in
        blamed = notebook.map_diagnostic(failure)
        if blamed.cell is None or blamed.cell in broken:
            break
        broken[blamed.cell] = blamed
    # nothing more to leave out: the program's own error stands for the notebook
    return CellsLint(outcome, program, broken)


def _without_tl001(outcome: FileOutcome, settings: FileSettings) -> FileOutcome:
    if SYNTAX_ERROR in settings.codes:
        return outcome
    return replace(outcome, diagnostics=[d for d in outcome.diagnostics
                                         if d.code != SYNTAX_ERROR])


def _not_a_notebook(path: str, message: str, settings: Settings) -> FileOutcome:
    if SYNTAX_ERROR not in settings.for_file(path).codes:
        return FileOutcome(path)
    return FileOutcome(path, [syntax_error_at(path, 1, 1, message)])


def process_notebook(path: str, settings: Settings, mode: Mode,
                     data: bytes | None = None) -> FileOutcome:
    """Lint (and with ``mode.fix`` fix) one .ipynb file. Never raises for a bad notebook.

    With ``data`` (stdin) the notebook is those bytes, and the fixed notebook is returned
    as ``fixed_text`` instead of being written to ``path``."""
    from_stdin = data is not None
    try:
        if data is None:
            data = read_file(path)
    except OSError as exc:
        return FileOutcome(path, error=f"cannot read: {exc.strerror or exc}")
    try:
        notebook = Notebook.from_bytes(path, data)
    except NotebookError as exc:
        if str(exc).startswith("cannot read"):
            return FileOutcome(path, error=str(exc))
        return _not_a_notebook(path, str(exc), settings)
    except (RecursionError, ValueError) as exc:
        return _not_a_notebook(path, f"not a notebook: {exc}", settings)
    if not notebook.cells or not notebook.is_python:
        return FileOutcome(path)
    file_settings = settings.for_file(path)
    linted = lint_cells(notebook, file_settings,
                        replace(mode, fix=False, diff=False) if mode.diff else mode)
    outcome = linted.outcome
    if outcome.warning is not None:  # the program is over max-file-size
        return FileOutcome(path, warning=outcome.warning)
    mapped = linted.findings(notebook, file_settings)

    def result(**values: Any) -> FileOutcome:
        return FileOutcome(path, mapped, preview_only=outcome.preview_only, **values)

    if not (mode.fix or mode.diff):
        return result(error=outcome.error)
    fixed_program = outcome.fixed_text
    if mode.diff:  # lint_one diffs the program; the diff is redone per cell, in cell terms
        fixing = lint_one(SourceFile(path=path, text=linted.program), file_settings,
                          replace(mode, fix=True, diff=False))
        fixed_program = fixing.fixed_text
    if fixed_program is None or fixed_program == linted.program:
        return result(error=outcome.error)
    changed = notebook.changed_cells(fixed_program, skip=linted.broken)
    if changed is None:  # a fix moved a cell marker: write nothing rather than guess
        return result(error="the fixes could not be mapped back to the cells; nothing was "
                      "written")
    if mode.diff:
        return result(diff=_cells_diff(path, notebook, changed), error=outcome.error)
    new_raw = notebook.with_sources(changed)
    try:
        json.loads(new_raw)
    except json.JSONDecodeError:  # pragma: no cover - a bug in the writer, never a user's
        return result(error="the fixed notebook would not be valid JSON; nothing was written")
    if from_stdin:
        return result(fixed=outcome.fixed, fixed_text=new_raw, error=outcome.error)
    try:
        write_atomic(path, new_raw.encode("utf-8"))
    except OSError as exc:  # the notebook keeps every finding of the first lint
        unfixed = lint_cells(notebook, file_settings, Mode())
        return FileOutcome(path, unfixed.findings(notebook, file_settings), error=cannot_fix(exc),
                           unwritten=outcome.fixed, preview_only=unfixed.outcome.preview_only)
    return result(fixed=outcome.fixed, error=outcome.error)


def _cells_diff(path: str, notebook: Notebook, changed: dict[int, str]) -> str:
    parts: list[str] = []
    for index in sorted(changed):
        old = notebook.cell_source(index) or ""
        new = changed[index]
        parts.append(unified_diff(old, new, path, f":cell {index}"))
    return "".join(parts)
