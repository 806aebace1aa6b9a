"""Jupyter notebooks: code cells linted together as one program, findings mapped to cells.

The code cells are joined into one Python program, each preceded by a marker comment
line, with IPython syntax (``%magic``, ``%%cell magic``, ``!shell``, ``?help``) replaced
by ``pass`` placeholders of the same line count. The program goes through the ordinary
engine and fixer (the pipeline step is :mod:`torchlint.run.notebook`); diagnostics are
mapped back to a cell and a line within it (columns are untouched: only whole lines are
replaced). This module only reads, maps and rewrites notebooks: it lints nothing.

Fixes are written back by replacing, in the notebook's raw text, only the ``"source"``
value of each cell that changed, in the notebook's own JSON style; every other byte of
the file (layout, metadata, outputs) stays as it was.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from torchlint.diagnostic import Diagnostic
from torchlint.ipython import neutralise, restore

MARKER_PREFIX = "#@torchlint-cell "
_MARKER = re.compile(r"^#@torchlint-cell (\d+)$")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_NON_PYTHON_LANGUAGE = re.compile(r"^(?!python)", re.I)


class NotebookError(Exception):
    """The file is not a notebook this tool can read; the message is one line."""


# ----------------------------------------------------------------- JSON with spans
class _SpanParser:
    """A small JSON parser that also records where each cell's ``source`` value is."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> NotebookError:
        line = self.text.count("\n", 0, self.pos) + 1
        return NotebookError(f"invalid JSON at line {line}: {what}")

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos

    def value_span(self) -> tuple[int, int]:
        """Skip one JSON value; return its span."""
        self.ws()
        start = self.pos
        try:
            _, end = json.JSONDecoder().raw_decode(self.text, start)
        except json.JSONDecodeError as exc:
            self.pos = exc.pos
            raise self.error(exc.msg) from None
        self.pos = end
        return start, end

    def source_spans(self, legacy: bool = False) -> list[tuple[int, int] | None]:
        """Span of each cell's ``"source"`` value, in cell order (None: no source key).

        ``legacy``: nbformat 3, whose cells sit in ``worksheets`` with their code in
        ``"input"``."""
        spans: list[tuple[int, int] | None] = []
        self.ws()
        if not self.text.startswith("{", self.pos):
            raise self.error("a notebook is a JSON object")
        for key, _ in self._members():
            if key == "cells" and not legacy:
                spans = self._cells("source")
            elif key == "worksheets" and legacy:
                spans = self._worksheets()
            else:
                self.value_span()
        return spans

    def _worksheets(self) -> list[tuple[int, int] | None]:
        spans: list[tuple[int, int] | None] = []
        for _ in self._objects("worksheets", "worksheet"):
            for key, _ in self._members():
                if key == "cells":
                    spans.extend(self._cells("input"))
                else:
                    self.value_span()
        return spans

    def _objects(self, name: str, item: str) -> Any:
        """Step into each object of the JSON list ``name`` in turn (for :meth:`_members`)."""
        self.ws()
        if not self.text.startswith("[", self.pos):
            raise self.error(f"'{name}' must be a list")
        self.pos += 1
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return
        while True:
            self.ws()
            if not self.text.startswith("{", self.pos):
                raise self.error(f"each {item} must be an object")
            yield
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return
            raise self.error("expected ',' or ']'")

    def _members(self) -> Any:
        self.pos += 1  # '{'
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return
        while True:
            self.ws()
            key_start, key_end = self.value_span()
            key = json.loads(self.text[key_start:key_end])
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise self.error("expected ':'")
            self.pos += 1
            self.ws()
            yield key, self.pos
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return
            raise self.error("expected ',' or '}'")

    def _cells(self, source_key: str) -> list[tuple[int, int] | None]:
        spans: list[tuple[int, int] | None] = []
        for _ in self._objects("cells", "cell"):
            span: tuple[int, int] | None = None
            for key, _ in self._members():
                found = self.value_span()
                if key == source_key:
                    span = found
            spans.append(span)
        return spans


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
        spans = _SpanParser(raw).source_spans(legacy=source_key == "input")
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
            neutral, replaced = neutralise(text)
            cells.append(Cell(number, text, neutral, replaced, was_list))
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
        """(cell, line in cell, 1-based column) of a character offset in the program."""
        line_index = bisect.bisect_right(self._line_starts, offset) - 1
        column = offset - self._line_starts[line_index] + 1
        cell, line = self.cell_line(line_index + 1)
        return cell, line, column

    def cell_source(self, index: int) -> str | None:
        for cell in self.cells:
            if cell.index == index:
                return cell.source
        return None

    def map_diagnostic(self, diagnostic: Diagnostic) -> Diagnostic:
        cell, line = self.cell_line(diagnostic.line)
        end_cell, end_line = self.cell_line(diagnostic.end_line)
        end_column = diagnostic.end_column
        if end_cell != cell:  # a span cannot cross cells: stop at the end of the line
            end_line = line
            end_column = diagnostic.column
        return replace(diagnostic, line=line, end_line=end_line, end_column=end_column, cell=cell)

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

    def changed_cells(self, program: str) -> dict[int, str] | None:
        """Cell number -> new cell source, for cells whose code the fixed program changed."""
        split = self.split_program(program)
        if split is None:
            return None
        changed: dict[int, str] = {}
        for cell in self.cells:
            neutral = cell.neutral
            had_newline = neutral.endswith(("\n", "\r")) or not neutral
            new = split[cell.index]
            if not had_newline and new.endswith("\n"):
                new = new[:-1]
            if new != neutral:
                changed[cell.index] = restore(new, cell.replaced)
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
            value = _format_source(changed[index], by_index[index].source_was_list,
                                   raw[start:end], _indent_before(raw, start), ensure_ascii)
            raw = raw[:start] + value + raw[end:]
        return raw


def _indent_before(raw: str, offset: int) -> str:
    line_start = raw.rfind("\n", 0, offset) + 1
    prefix = raw[line_start:offset]
    return prefix[: len(prefix) - len(prefix.lstrip())]


def _format_source(text: str, as_list: bool, old: str, key_indent: str,
                   ensure_ascii: bool) -> str:
    """A JSON value for ``text`` in the style of ``old`` (the value it replaces)."""
    if not as_list:
        return json.dumps(text, ensure_ascii=ensure_ascii)
    lines = text.splitlines(keepends=True)
    if not lines:
        return "[]"
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    match = re.match(r"\[(\s*)", old)
    gap = match.group(1) if match else ""
    if "\n" not in gap:  # a one-line list
        return "[" + gap + ", ".join(items) + ("]" if not gap else gap + "]")
    item_indent = gap.split("\n")[-1]
    closing = re.search(r"(\r?\n[ \t]*)\]$", old)
    close = closing.group(1) if closing else "\n" + key_indent
    newline = "\r\n" if "\r\n" in gap else "\n"
    separator = "," + newline + item_indent
    return "[" + newline + item_indent + separator.join(items) + close + "]"
