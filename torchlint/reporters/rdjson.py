"""reviewdog's Diagnostic JSON (rdjson: one ``DiagnosticResult``), with fixes as
suggestions. Its columns count UTF-8 bytes, from 1; ranges end exclusively."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.sources import Sources, relative_path


def _position(lines: list[str], line: int, column: int) -> dict[str, int]:
    """A reviewdog position: ``column`` (characters, 1-based) as UTF-8 bytes, 1-based."""
    if 0 < line <= len(lines):
        column = len(lines[line - 1][:column - 1].encode("utf-8", "surrogatepass")) + 1
    return {"line": line, "column": column}


def _range(lines: list[str], line: int, column: int, end_line: int, end_column: int
           ) -> dict[str, Any]:
    return {"start": _position(lines, line, column),
            "end": _position(lines, end_line, end_column)}


def _suggestions(d: Diagnostic, sources: Sources, lines: list[str]) -> list[dict[str, Any]]:
    """The fix's edits, each a replacement of a range; none for a notebook (its cells are
    JSON strings in the stored file) or when an edit's place cannot be found."""
    if d.fix is None or d.cell is not None:
        return []
    suggestions = []
    for edit in d.fix.resolved_edits():
        span = sources.edit_range(d.path, edit)
        if span is None or span[0].cell is not None:
            return []
        start, end = span
        suggestions.append({"range": _range(lines, start.line, start.column, end.line,
                                            end.column),
                            "text": edit.text})
    return suggestions


def as_rdjson(d: Diagnostic, sources: Sources) -> dict[str, Any]:
    lines = sources.stored_lines(d.path)
    where = f"cell {d.cell}: " if d.cell is not None else ""
    item: dict[str, Any] = {
        "message": f"{where}{d.message}",
        "location": {"path": relative_path(d.path), "range": _range(lines, *d.file_region)},
        "severity": "ERROR",
        "code": {"value": d.code},
    }
    suggestions = _suggestions(d, sources, lines)
    if suggestions:
        item["suggestions"] = suggestions
    return item


def rdjson_result(diagnostics: Sequence[Diagnostic], sources: Sources | None = None
                  ) -> dict[str, Any]:
    from torchlint.reporters.sarif import information_uri

    sources = sources or Sources()
    source: dict[str, str] = {"name": "torchlint"}
    home = information_uri()
    if home is not None:
        source["url"] = home
    return {"source": source, "severity": "ERROR",
            "diagnostics": [as_rdjson(d, sources) for d in diagnostics]}


def render_rdjson(diagnostics: Sequence[Diagnostic], stream: TextIO,
                  sources: Sources | None = None) -> None:
    json.dump(rdjson_result(diagnostics, sources), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
