"""Linting what an editor holds: one text document, or the code cells of a notebook as
one program (as ``torchlint check`` lints a .ipynb), with every finding and every fix
edit placed on the document (or cell) it belongs to. Pure: no client, no threads."""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import unquote

from torchlint.codes import UNUSED_NOQA
from torchlint.config.file_settings import FileSettings
from torchlint.diagnostic import Diagnostic
from torchlint.notebook import Notebook
from torchlint.run.cache import _stamp, _unchanged
from torchlint.run.file import lint_one
from torchlint.run.notebook import lint_cells
from torchlint.run.outcome import Mode
from torchlint.source import SourceFile

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Document:
    uri: str
    version: int | None
    text: str
    index: int = 1  # a notebook cell's 1-based position among all the notebook's cells


@dataclass(frozen=True)
class Snapshot:
    """What is linted together: a document, or a notebook's code cells in order, at the
    versions the editor had when the lint started."""

    uri: str  # the document's, or the notebook's
    path: str  # what settings and messages go by
    documents: tuple[Document, ...]
    notebook: bool = False

    @property
    def key(self) -> tuple[object, ...]:
        return (self.uri, tuple((d.uri, d.version, d.index) for d in self.documents))

    @property
    def digest(self) -> str:
        """What decides the findings of the text: each document's place and text (not its
        version)."""
        digest = hashlib.blake2b(self.path.encode("utf-8", "surrogatepass"), digest_size=16)
        for document in self.documents:
            for part in (document.uri, str(document.index), document.text):
                data = part.encode("utf-8", "surrogatepass")
                digest.update(b"%d:" % len(data) + data)
        return digest.hexdigest()

    @property
    def name(self) -> str:
        """The subject's URI as the workspace keys it (clients quote URIs differently)."""
        return unquote(self.uri)

    def document(self, uri: str) -> Document | None:
        wanted = unquote(uri)
        return next((d for d in self.documents if unquote(d.uri) == wanted), None)


@dataclass(frozen=True)
class DocEdit:
    """Replace a span of one document (1-based lines and character columns)."""

    uri: str
    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class Finding:
    uri: str  # the document (cell) it is on
    diagnostic: Diagnostic  # line and column within that document
    edits: tuple[DocEdit, ...] | None  # the fix, None if there is none or it cannot be placed


@dataclass
class Linted:
    snapshot: Snapshot
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # by document uri
    error: str | None = None  # a rule failed (the other rules' findings are here)
    skipped: str | None = None  # why nothing was linted (a document over max-file-size)
    # the project's files and folders the findings learned from, as they were read
    # ([path, digest, mtime_ns, size], as the cache keeps them)
    learned: tuple[list[object], ...] = ()

    def moved_to(self, snapshot: Snapshot) -> Linted:
        """These findings for ``snapshot``, a later version of the same texts."""
        return Linted(snapshot, self.findings, self.error, self.skipped, self.learned)

    def still_valid(self) -> bool:
        """The files these findings learned from are as they were read (as for a cached
        result: a folder whose listing changed, a file changed or gone, invalidates)."""
        return all(_unchanged(*stamp) for stamp in self.learned)  # type: ignore[arg-type]


class Superseded(Exception):
    """Raised by a lint's checkpoint: a newer version of the text is waiting, stop here."""


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index] + 1


def _notebook(snapshot: Snapshot) -> Notebook:
    return Notebook.from_cells(snapshot.path, [(d.index, d.text) for d in snapshot.documents])


def shown_only(settings: FileSettings, snapshot: Snapshot) -> FileSettings:
    """``settings`` without the preview rules that run only to be counted, for the hint of
    ``torchlint check`` that ``--preview`` would show more: an editor shows no such hint,
    and the engine never reports their findings with preview off (a fifth of a lint's CPU
    with the default rules). Where TL002 judges ``# noqa`` comments and the text has one,
    they run as ``torchlint check`` runs them: whether a directive is used is the engine's
    to decide from every report."""
    if not settings.preview_codes or (UNUSED_NOQA in settings.codes and any(
            "noqa" in document.text.lower() for document in snapshot.documents)):
        return settings
    return replace(settings, preview_codes=frozenset())


def lint_snapshot(snapshot: Snapshot, settings: FileSettings,
                  checkpoint: Callable[[], None] | None = None) -> Linted:
    """``checkpoint`` is called before the lint starts and, for a Python file, between
    the screen and libcst (the costly part): it raises :class:`Superseded` to stop."""
    if checkpoint is not None:
        checkpoint()
    settings = shown_only(settings, snapshot)
    linted = Linted(snapshot, {d.uri: [] for d in snapshot.documents})
    if snapshot.notebook:
        notebook = _notebook(snapshot)
        if not notebook.cells:
            return linted
        by_index = {d.index: d.uri for d in snapshot.documents}
        result = lint_cells(notebook, settings, Mode())
        linted.error = result.outcome.error
        linted.skipped = result.outcome.warning
        linted.learned = tuple(_stamp(d) for d in result.outcome.dependencies)
        starts = [0] + [m.end() for m in _NEWLINE.finditer(result.program)]
        for diagnostic in result.findings(notebook, settings):
            uri = by_index.get(diagnostic.cell or 0)
            if uri is None:
                continue
            edits = None
            if diagnostic.fix is not None:
                edits = _cell_edits(notebook, diagnostic, by_index, starts)
            linted.findings[uri].append(Finding(uri, diagnostic, edits))
        return linted
    (document,) = snapshot.documents
    outcome = lint_one(SourceFile(path=snapshot.path, text=document.text), settings, Mode(),
                       checkpoint)
    linted.error = outcome.error
    linted.skipped = outcome.warning
    linted.learned = tuple(_stamp(d) for d in outcome.dependencies)
    starts = [0] + [m.end() for m in _NEWLINE.finditer(document.text)]
    for diagnostic in outcome.diagnostics:
        edits = None
        if diagnostic.fix is not None:
            edits = tuple(DocEdit(document.uri, *_position(starts, e.start),
                                  *_position(starts, e.end), e.text)
                          for e in diagnostic.fix.resolved_edits())
        linted.findings[document.uri].append(Finding(document.uri, diagnostic, edits))
    return linted


def _cell_edits(notebook: Notebook, diagnostic: Diagnostic, by_index: dict[int, str],
                starts: list[int]) -> tuple[DocEdit, ...] | None:
    """The fix's edits (offsets in the program) as edits of the cells they fall in."""
    assert diagnostic.fix is not None
    markers = {cell.first_line - 1 for cell in notebook.cells}
    edits = []
    for edit in diagnostic.fix.resolved_edits():
        cell, line, column = notebook.position(edit.start)
        end_cell, end_line, end_column = notebook.position(edit.end)
        uri = by_index.get(cell)
        if uri is None or end_cell != cell or _position(starts, edit.start)[0] in markers:
            return None  # an edit outside the cells or across two: no quick fix
        own = notebook.cell(cell)
        if own is not None and own.indent and ("\n" in edit.text or "\r" in edit.text):
            return None  # new lines in a cell IPython dedents would lack its indentation
        edits.append(DocEdit(uri, line, column, end_line, end_column, edit.text))
    return tuple(edits)


def fix_all(snapshot: Snapshot, settings: FileSettings, unsafe: bool) -> dict[str, str]:
    """The new text of each document the fixes change (safe fixes; unsafe ones too with
    ``unsafe``), fixed to a fixed point as ``torchlint check --fix`` does."""
    mode = Mode(fix=True, unsafe=unsafe)
    if snapshot.notebook:
        notebook = _notebook(snapshot)
        if not notebook.cells:
            return {}
        result = lint_cells(notebook, settings, mode)
        fixed = result.outcome.fixed_text
        if fixed is None or fixed == result.program:
            return {}
        changed = notebook.changed_cells(fixed, skip=result.broken)
        by_index = {d.index: d.uri for d in snapshot.documents}
        return {by_index[index]: text for index, text in (changed or {}).items()}
    (document,) = snapshot.documents
    outcome = lint_one(SourceFile(path=snapshot.path, text=document.text), settings, mode)
    if outcome.fixed_text is None or outcome.fixed_text == document.text:
        return {}
    return {document.uri: outcome.fixed_text}
