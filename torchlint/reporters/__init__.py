"""Output formats. Each renders a list of diagnostics; nothing else formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.concise import render_concise
from torchlint.reporters.full import render_full
from torchlint.reporters.github import render_github
from torchlint.reporters.gitlab import render_gitlab
from torchlint.reporters.json import render_json, render_json_lines
from torchlint.reporters.pylint import render_pylint
from torchlint.reporters.sarif import render_sarif
from torchlint.reporters.sources import Sources

Renderer = Callable[[Sequence[Diagnostic], TextIO, Sources], None]

RENDERERS: dict[str, Renderer] = {
    "concise": render_concise,
    "full": render_full,
    "json": render_json,
    "json-lines": render_json_lines,
    "sarif": render_sarif,
    "github": render_github,
    "gitlab": render_gitlab,
    "pylint": render_pylint,
}

__all__ = ["RENDERERS", "Renderer", "Sources"]
