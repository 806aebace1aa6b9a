"""Output formats. Each renders a list of diagnostics; nothing else formats.

A renderer's module is imported when the format is first used: the full format needs rich
and the fixer, SARIF the rules' documentation, and a plain run needs neither.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.sources import Sources

Renderer = Callable[[Sequence[Diagnostic], TextIO, Sources], None]

_WHERE = {
    "concise": ("concise", "render_concise"),
    "full": ("full", "render_full"),
    "json": ("json", "render_json"),
    "json-lines": ("json", "render_json_lines"),
    "sarif": ("sarif", "render_sarif"),
    "github": ("github", "render_github"),
    "gitlab": ("gitlab", "render_gitlab"),
    "pylint": ("pylint", "render_pylint"),
    "junit": ("junit", "render_junit"),
    "rdjson": ("rdjson", "render_rdjson"),
}


class _Renderers(Mapping[str, Renderer]):
    """Format name -> renderer, importing each renderer's module on first use."""

    def __getitem__(self, name: str) -> Renderer:
        module, function = _WHERE[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


RENDERERS: Mapping[str, Renderer] = _Renderers()

__all__ = ["RENDERERS", "Renderer", "Sources"]
