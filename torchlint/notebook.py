"""Jupyter notebooks: code cells linted together as one program, findings mapped to cells.

The code cells are joined into one Python program, each preceded by a marker comment
line, with IPython syntax (``%magic``, ``%%cell magic``, ``!shell``, ``?help``) replaced
by ``pass`` placeholders of the same line count. The program goes through the ordinary
engine and fixer (the pipeline step is :mod:`torchlint.run.notebook`); diagnostics are
mapped back to a cell and a line within it (columns are untouched: only whole lines are
replaced, except in a cell IPython dedents, whose lines are linted without their common
indentation: columns there shift back by it, and fixes get it back). This module only reads, maps and rewrites notebooks: it lints nothing.

Fixes are written back by replacing, in the notebook's raw text, only the ``"source"``
value of each cell that changed, in the notebook's own JSON style; every other byte of
the file (layout, metadata, outputs) stays as it was.

A finding's place in the .ipynb text itself (:meth:`Notebook.file_span`) is found by
walking the cell's JSON string literals, so formats that annotate files (SARIF, GitLab,
pylint) point at the code as it stands in the file.

The same program is built from the cells an editor sends (:meth:`Notebook.from_cells`).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from torchlint.diagnostic import Diagnostic, FileSpan
from torchlint.ipynb_text import (
    NotebookError,
    SpanParser,
    decoded_offsets,
    format_source,
    indent_before,
    string_literals,
)
from torchlint.ipython import (
    RestoreError,
    dedent,
    leading_indent,
    neutralise,
    reindent,
    restore,
    split_lines,
)

__all__ = ["Cell", "Notebook", "NotebookError"]

MARKER_PREFIX = "#@torchlint-cell "
_MARKER = re.compile(r"^#@torchlint-cell (\d+)$")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_NOT_A_NEWLINE = re.compile(r"[^\r\n]")
_NON_PYTHON_LANGUAGE = re.compile(r"^(?!python)", re.I)


# ----------------------------------------------------------------- the program
def _cells_of(data: object) -> tuple[list[Any], str]:
    """Every cell of the notebook, in order, and the key holding a cell's code.

    nbformat 4 has a ``cells`` list with ``source``; nbformat 3 (and 2) keeps cells in
    ``worksheets``, with the code of a code cell in ``input``."""
    if isinstance(data, dict) and isinstance(data.get("cells"), list):
        return data["cells"], "source"
    worksheets = data.get("worksheets") if isinstance(data, dict) else None
    if isinstance(worksheets, list) and all(
            isinstance(sheet, dict) and isinstance(sheet.get("cells", []), list)
            for sheet in worksheets):
        return [cell for sheet in worksheets for cell in sheet.get("cells", [])], "input"
    raise NotebookError("not a notebook: no 'cells' list")


def _is_python_name(language: object) -> bool:
    """A missing language is Python, the default kernel's."""
    return not isinstance(language, str) or language.lower() in ("python", "python3",
                                                                   "ipython", "")


@dataclass
class Cell:
    index: int  # 1-based position among all the notebook's cells
    source: str  # the cell's text as in the notebook
    neutral: str  # IPython lines replaced
    replaced: list[str]
    source_was_list: bool
    first_line: int = 0  # program line (1-based) of the cell's first line
    indent: str = ""  # the indentation IPython removes from every line (leading_indent)

    @classmethod
    def of(cls, index: int, text: str, source_was_list: bool) -> Cell:
        indent = leading_indent(text)
        neutral, replaced = neutralise(dedent(text, indent))
        return cls(index, text, neutral, replaced, source_was_list, indent=indent)

    def source_column(self, line: int, column: int) -> int:
        """The column in the cell's own text of ``column`` on (1-based) ``line`` of the
        text linted, which lacks the cell's common indentation."""
        if not self.indent:
            return column
        lines = split_lines(self.source)
        if 0 < line <= len(lines) and lines[line - 1].startswith(self.indent):
            return column + len(self.indent)
        return column


@dataclass
class Notebook:
    path: str
    raw: str  # the file's text
    data: dict[str, Any]
    cells: list[Cell]  # code cells only
    spans: list[tuple[int, int] | None]  # source value span of every cell (all kinds)
    program: str = ""
    _line_starts: list[int] = field(default_factory=list)
    _cell_lines: list[int] = field(default_factory=list)
    _raw_maps: dict[int, list[int] | None] = field(default_factory=dict)
    _raw_line_starts: list[int] = field(default_factory=list)

    @classmethod
    def from_cells(cls, path: str, cells: Sequence[tuple[int, str]]) -> Notebook:
        """The program of code cells an editor holds: (1-based position among all the
        notebook's cells, text) in order. There is no file text to point into."""
        made = [Cell.of(index, text, False) for index, text in cells]
        notebook = cls(path, "", {}, made, [])
        notebook.program = notebook.build_program([c.neutral for c in made])
        return notebook

    @classmethod
    def read(cls, path: str) -> Notebook:
        try:
            with open(path, "rb") as handle:
                data_bytes = handle.read()
        except OSError as exc:
            raise NotebookError(f"cannot read: {exc.strerror or exc}") from None
        return cls.from_bytes(path, data_bytes)

    @classmethod
    def from_bytes(cls, path: str, data_bytes: bytes) -> Notebook:
        try:
            raw = data_bytes.decode("utf-8-sig" if data_bytes.startswith(b"\xef\xbb\xbf")
                                    else "utf-8")
        except UnicodeDecodeError:
            raise NotebookError("not a notebook: the file is not UTF-8") from None
        return cls.from_text(path, raw)

    @classmethod
    def from_text(cls, path: str, raw: str) -> Notebook:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}, column "
                                f"{exc.colno}: {exc.msg}") from None
        all_cells, source_key = _cells_of(data)
        spans = SpanParser(raw).source_spans(legacy=source_key == "input")
        cells: list[Cell] = []
        for number, cell in enumerate(all_cells, start=1):
            if not isinstance(cell, dict):
                raise NotebookError(f"not a notebook: cell {number} is not an object")
            if cell.get("cell_type") != "code" or not _is_python_name(cell.get("language")):
                continue
            source = cell.get(source_key, "")
            if isinstance(source, list) and all(isinstance(s, str) for s in source):
                text, was_list = "".join(source), True
            elif isinstance(source, str):
                text, was_list = source, False
            else:
                raise NotebookError(f"not a notebook: cell {number} has no text source")
            cells.append(Cell.of(number, text, was_list))
        notebook = cls(path, raw, data, cells, spans)
        notebook.program = notebook.build_program([c.neutral for c in cells])
        return notebook

    @property
    def is_python(self) -> bool:
        metadata = self.data.get("metadata")
        if not isinstance(metadata, dict):
            return True
        info = metadata.get("language_info") or metadata.get("kernelspec") or {}
        language = info.get("name") if "language_info" in metadata else info.get("language")
        return not isinstance(language, str) or language.lower() in ("python", "python3", "")

    def program_without(self, cells: Collection[int]) -> str:
        """The program with the code of ``cells`` (cell numbers) blanked out: each of their
        characters but line breaks becomes a space, so every other cell keeps its lines
        and its character offsets."""
        return self.build_program([_NOT_A_NEWLINE.sub(" ", c.neutral) if c.index in cells
                                   else c.neutral for c in self.cells])

    def cell(self, index: int) -> Cell | None:
        for cell in self.cells:
            if cell.index == index:
                return cell
        return None

    def build_program(self, texts: list[str]) -> str:
        parts: list[str] = []
        self._cell_lines = []
        line = 1
        for cell, text in zip(self.cells, texts):
            parts.append(f"{MARKER_PREFIX}{cell.index}\n")
            line += 1
            cell.first_line = line
            self._cell_lines.append(line)
            if text and not text.endswith(("\n", "\r")):
                text += "\n"
            parts.append(text)
            line += len(_NEWLINE.findall(text))
        program = "".join(parts)
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(program)]
        return program

    # -------------------------------------------------------------- positions
    def cell_line(self, program_line: int) -> tuple[int, int]:
        """(cell number, 1-based line in the cell) of a program line."""
        if not self.cells:
            return 1, program_line
        slot = max(0, bisect.bisect_right(self._cell_lines, program_line) - 1)
        cell = self.cells[slot]
        return cell.index, max(1, program_line - cell.first_line + 1)

    def position(self, offset: int) -> tuple[int, int, int]:
        """(cell, line in cell, 1-based column in the cell's text) of a character offset in
        the program."""
        line_index = bisect.bisect_right(self._line_starts, offset) - 1
        column = offset - self._line_starts[line_index] + 1
        cell, line = self.cell_line(line_index + 1)
        return cell, line, self._source_column(cell, line, column)

    def _source_column(self, index: int, line: int, column: int) -> int:
        cell = self.cell(index)
        return cell.source_column(line, column) if cell is not None else column

    def cell_source(self, index: int) -> str | None:
        cell = self.cell(index)
        return cell.source if cell is not None else None

    def map_diagnostic(self, diagnostic: Diagnostic) -> Diagnostic:
        """A finding on the program, as a finding on its cell (and on the file's text)."""
        cell, line = self.cell_line(diagnostic.line)
        end_cell, end_line = self.cell_line(diagnostic.end_line)
        column = self._source_column(cell, line, diagnostic.column)
        end_column = self._source_column(end_cell, end_line, diagnostic.end_column)
        if end_cell != cell:  # a span cannot cross cells: stop at the end of the line
            end_line = line
            end_column = column
        return self.place(replace(diagnostic, line=line, column=column, end_line=end_line,
                                  end_column=end_column, cell=cell))

    def place(self, diagnostic: Diagnostic) -> Diagnostic:
        """``diagnostic`` (on a cell) with its span in the file's text, when known."""
        if diagnostic.cell is None:
            return diagnostic
        span = self.file_span(diagnostic.cell, diagnostic.line, diagnostic.column,
                              diagnostic.end_line, diagnostic.end_column)
        return replace(diagnostic, in_file=span) if span is not None else diagnostic

    # -------------------------------------------------------------- the file's text
    def file_span(self, index: int, line: int, column: int, end_line: int, end_column: int
                  ) -> FileSpan | None:
        """The span in the .ipynb text of a span in cell ``index`` (1-based lines and
        columns in both); None when the notebook has no file text."""
        offsets = self._raw_offsets(index)
        cell = self.cell(index)
        if offsets is None or cell is None:
            return None
        starts = [0] + [m.end() for m in _NEWLINE.finditer(cell.source)]

        def at(line: int, column: int) -> tuple[int, int]:
            line = max(1, min(line, len(starts)))
            offset = min(starts[line - 1] + max(0, column - 1), len(offsets) - 1)
            return self._raw_line_column(offsets[offset])

        (start_line, start_column), (stop_line, stop_column) = (at(line, column),
                                                                at(end_line, end_column))
        return FileSpan(start_line, start_column, stop_line, stop_column)

    def _raw_offsets(self, index: int) -> list[int] | None:
        """For each character of cell ``index``'s source, its offset in the raw text, and
        one more: where the source ends."""
        if index in self._raw_maps:
            return self._raw_maps[index]
        found: list[int] | None = None
        span = self.spans[index - 1] if self.raw and 0 < index <= len(self.spans) else None
        cell = self.cell(index)
        if span is not None and cell is not None:
            found = []
            ends = []
            for start in string_literals(self.raw, span):
                offsets = decoded_offsets(self.raw, start)
                found.extend(offsets[:-1])
                ends.append(offsets[-1])
            found.append(ends[-1] if ends else span[0])
            if len(found) != len(cell.source) + 1:  # not the text that was read: give up
                found = None
        self._raw_maps[index] = found
        return found

    def _raw_line_column(self, offset: int) -> tuple[int, int]:
        if not self._raw_line_starts:
            self._raw_line_starts = [0] + [m.end() for m in _NEWLINE.finditer(self.raw)]
        line = bisect.bisect_right(self._raw_line_starts, offset) - 1
        return line + 1, offset - self._raw_line_starts[line] + 1

    # -------------------------------------------------------------- writing back
    def split_program(self, program: str) -> dict[int, str] | None:
        """Cell number -> neutral text, from a (fixed) program; None if the markers moved."""
        texts: dict[int, list[str]] = {}
        current: list[str] | None = None
        for line in program.splitlines(keepends=True):
            match = _MARKER.match(line.rstrip("\r\n"))
            if match:
                current = texts.setdefault(int(match.group(1)), [])
                continue
            if current is None:
                if line.strip():
                    return None
                continue
            current.append(line)
        if sorted(texts) != sorted(c.index for c in self.cells):
            return None
        return {index: "".join(lines) for index, lines in texts.items()}

    def changed_cells(self, program: str, skip: Collection[int] = ()
                      ) -> dict[int, str] | None:
        """Cell number -> new cell source, for cells whose code the fixed program changed
        (never one of ``skip``, the cells left out of the program); None when the fixes
        cannot be mapped back to the cells."""
        split = self.split_program(program)
        if split is None:
            return None
        changed: dict[int, str] = {}
        for cell in self.cells:
            if cell.index in skip:
                continue
            neutral = cell.neutral
            had_newline = neutral.endswith(("\n", "\r")) or not neutral
            new = split[cell.index]
            if not had_newline and new.endswith("\n"):
                new = new[:-1]
            if new != neutral:
                try:
                    restored = restore(new, cell.replaced)
                except RestoreError:
                    return None
                changed[cell.index] = reindent(cell.source, cell.indent, restored)
        return changed

    def with_sources(self, changed: dict[int, str]) -> str:
        """The notebook's raw text with the ``source`` of the changed cells replaced."""
        ensure_ascii = not any(ord(ch) > 127 for ch in self.raw) and "\\u" in self.raw
        by_index = {cell.index: cell for cell in self.cells}
        raw = self.raw
        for index in sorted(changed, reverse=True):
            span = self.spans[index - 1]
            if span is None:
                continue
            start, end = span
            value = format_source(changed[index], by_index[index].source_was_list,
                                   raw[start:end], indent_before(raw, start), ensure_ascii)
            raw = raw[:start] + value + raw[end:]
        return raw
