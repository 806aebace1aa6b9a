"""GitLab Code Quality report (a JSON array of issues)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.sources import Sources, relative_path


def render_gitlab(diagnostics: Sequence[Diagnostic], stream: TextIO,
                  sources: Sources | None = None) -> None:
    sources = sources or Sources()
    seen: Counter[str] = Counter()
    issues: list[dict[str, Any]] = []
    for d in diagnostics:
        path = relative_path(d.path)
        lines = sources.lines(d)
        code_line = lines[d.line - 1].strip() if 0 < d.line <= len(lines) else ""
        # stable across unrelated edits: no line number, the code of the line instead
        key = f"{path}\0{d.cell}\0{d.code}\0{d.message}\0{code_line}"
        seen[key] += 1
        fingerprint = hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()
        where = f"cell {d.cell}: " if d.cell is not None else ""
        begin, _, end, _ = d.file_region  # a notebook's: the lines in the .ipynb text
        issues.append({
            "type": "issue",
            "check_name": d.code,
            "description": f"{where}{d.code} {d.message}",
            "categories": ["Bug Risk"],
            "severity": "major",
            "fingerprint": fingerprint,
            "location": {
                "path": path,
                "lines": {"begin": begin, "end": end},
            },
        })
    json.dump(issues, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
