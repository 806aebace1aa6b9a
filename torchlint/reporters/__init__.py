"""Output formats. Each renders a list of diagnostics; nothing else formats."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.concise import render_concise

Renderer = Callable[[Sequence[Diagnostic], TextIO], None]

RENDERERS: dict[str, Renderer] = {
    "concise": render_concise,
}
