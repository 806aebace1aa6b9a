"""JSON: one array of findings (``json``) or one object per line (``json-lines``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.sources import Sources


def _fix(diagnostic: Diagnostic, sources: Sources) -> dict[str, Any] | None:
    fix = diagnostic.fix
    if fix is None:
        return None
    edits = []
    for edit in fix.resolved_edits():
        span = sources.edit_range(diagnostic.path, edit)
        item: dict[str, Any] = {"content": edit.text}
        if span is not None:
            start, end = span
            item["location"] = {"row": start.line, "column": start.column}
            item["end_location"] = {"row": end.line, "column": end.column}
            if start.cell is not None:
                item["cell"] = start.cell
        edits.append(item)
    return {
        "applicability": fix.applicability.value,
        "message": "apply the safe fix" if fix.is_safe else "apply the unsafe fix "
                   "(--fix --unsafe-fixes)",
        "edits": edits,
    }


def as_dict(diagnostic: Diagnostic, sources: Sources) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "filename": diagnostic.path,
        "cell": diagnostic.cell,
        "location": {"row": diagnostic.line, "column": diagnostic.column},
        "end_location": {"row": diagnostic.end_line, "column": diagnostic.end_column},
        "fix": _fix(diagnostic, sources),
    }


def render_json(diagnostics: Sequence[Diagnostic], stream: TextIO,
                sources: Sources | None = None) -> None:
    sources = sources or Sources()
    json.dump([as_dict(d, sources) for d in diagnostics], stream, indent=2, ensure_ascii=False)
    stream.write("\n")


def render_json_lines(diagnostics: Sequence[Diagnostic], stream: TextIO,
                      sources: Sources | None = None) -> None:
    sources = sources or Sources()
    for diagnostic in diagnostics:
        stream.write(json.dumps(as_dict(diagnostic, sources), ensure_ascii=False) + "\n")
