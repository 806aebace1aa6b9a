"""``--add-noqa``: add a ``# noqa: CODES`` directive for every finding, so torchlint can be
adopted on an existing code base and only new findings fail. Existing directives are
extended; a finding on a line that cannot hold a comment gets its directive where the
multi-line string or backslash continuation ends. Syntax errors (TL001) and stale
directives (TL002) are never suppressed this way. The file keeps its encoding, BOM and
line endings; a file whose new text would not compile is left alone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchlint.codes import SYNTAX_ERROR, UNUSED_NOQA
from torchlint.config.file_settings import SettingsSource
from torchlint.diagnostic import Diagnostic
from torchlint.engine.suppression import add_directives
from torchlint.source import DecodeError, SourceFile, read_file, write_atomic


@dataclass
class Added:
    path: str
    count: int = 0  # directives added or extended
    error: str | None = None


def _codes_by_line(diagnostics: Iterable[Diagnostic]) -> dict[int, set[str]]:
    by_line: dict[int, set[str]] = {}
    for d in diagnostics:
        if d.code not in (SYNTAX_ERROR, UNUSED_NOQA):
            by_line.setdefault(d.line, set()).add(d.code)
    return by_line


def _compiles(text: str) -> bool:
    try:
        compile(text, "<add-noqa>", "exec", dont_inherit=True, flags=0x400)  # only parse
    except (SyntaxError, ValueError):
        return False
    return True


def add_noqa(path: str, settings: SettingsSource) -> Added:
    """Add the directives to one file (a notebook: to its cells)."""
    from torchlint.engine.lint import lint_source

    if path.endswith(".ipynb"):
        return _notebook(path, settings)
    try:
        source = SourceFile.read(path)
    except OSError as exc:
        return Added(path, error=f"cannot read: {exc.strerror or exc}")
    except DecodeError:
        return Added(path)
    result = lint_source(source, settings.for_file(path))
    if not result.parsed:
        return Added(path)
    text, count = add_directives(source.text, _codes_by_line(result.diagnostics))
    if not count or text == source.text:
        return Added(path)
    if not _compiles(text):
        return Added(path, error="adding the directives would break the file; left alone")
    try:
        write_atomic(path, source.with_text(text).to_bytes())
    except (OSError, UnicodeEncodeError) as exc:
        return Added(path, error=f"cannot write: {exc}")
    return Added(path, count)


def _notebook(path: str, settings: SettingsSource) -> Added:
    from torchlint.engine.lint import lint_source
    from torchlint.notebook import Notebook, NotebookError

    try:
        notebook = Notebook.from_bytes(path, read_file(path))
    except OSError as exc:
        return Added(path, error=f"cannot read: {exc.strerror or exc}")
    except (NotebookError, RecursionError, ValueError):
        return Added(path)
    if not notebook.cells or not notebook.is_python:
        return Added(path)
    program = notebook.program
    result = lint_source(SourceFile(path=path, text=program), settings.for_file(path))
    if not result.parsed:
        return Added(path)
    text, count = add_directives(program, _codes_by_line(result.diagnostics))
    if not count:
        return Added(path)
    changed = notebook.changed_cells(text)
    if changed is None:
        return Added(path, error="the directives could not be mapped back to the cells; "
                     "nothing was written")
    try:
        write_atomic(path, notebook.with_sources(changed).encode("utf-8"))
    except OSError as exc:
        return Added(path, error=f"cannot write: {exc}")
    return Added(path, count)
