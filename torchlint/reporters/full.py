"""The full format: each finding with its source lines, the span marked, the fix as a diff
and a pointer to ``torchlint explain``. Colour only on a terminal; ``NO_COLOR`` is honoured
(no escape codes at all)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from torchlint.diagnostic import Diagnostic
from torchlint.fix.text import apply_edits
from torchlint.reporters.concise import location
from torchlint.reporters.sources import Sources

CONTEXT = 1  # lines shown around the finding
TAB_SIZE = 4


def _display(line: str) -> str:
    """The line as a terminal shows it: tabs expanded to their stops."""
    return line.expandtabs(TAB_SIZE)


def _width(line: str, column: int) -> int:
    """Terminal cells taken by ``line`` before the 1-based character ``column``
    (tabs expanded, wide characters such as CJK and emoji counted twice)."""
    return cell_len(_display(line[: max(0, column - 1)]))


def _snippet(d: Diagnostic, lines: list[str]) -> list[Text]:
    if not 0 < d.line <= len(lines):
        return []
    end_line = min(max(d.end_line, d.line), len(lines))
    first = max(1, d.line - CONTEXT)
    last = min(len(lines), end_line + CONTEXT)
    if last > end_line and last == len(lines) and not lines[-1]:
        last -= 1  # the empty "line" after a final newline is not a line of the file
    width = len(str(last))
    gutter = " " * width + " |"
    out = [Text(gutter, style="blue")]
    for number in range(first, last + 1):
        raw = lines[number - 1]
        row = Text(f"{number:>{width}} | ", style="blue")
        row.append(_display(raw))
        out.append(row)
        if d.line <= number <= end_line:
            indent = len(raw) - len(raw.lstrip()) + 1
            start = _width(raw, d.column if number == d.line else indent)
            end = _width(raw, d.end_column if number == end_line else len(raw.rstrip()) + 1)
            if end <= start:
                end = start + 1
            marker = Text(gutter + " ", style="blue")
            marker.append(" " * start)
            marker.append("^" * (end - start), style="bold red")
            if number == end_line:
                marker.append(f" {d.code}", style="bold red")
            out.append(marker)
    out.append(Text(gutter, style="blue"))
    return out


def _fix_diff(d: Diagnostic, sources: Sources) -> list[Text]:
    if d.fix is None:
        return []
    text = sources.text(d.path)
    if text is None:
        return []
    try:
        fixed = apply_edits(text, d.fix.resolved_edits())
    except (AssertionError, IndexError):
        return []
    label = "Safe fix" if d.fix.is_safe else "Unsafe fix (with --fix --unsafe-fixes)"
    out = [Text(f"  = help: {label}:", style="bold cyan")]
    for line in difflib.unified_diff(text.splitlines(), fixed.splitlines(), n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("#@torchlint-cell"):
            continue
        style = "red" if line.startswith("-") else "green"
        out.append(Text(f"    {line[0]}{_display(line[1:])}", style=style))
    return out


def render_full(diagnostics: Sequence[Diagnostic], stream: TextIO,
                sources: Sources | None = None) -> None:
    sources = sources or Sources()
    # NO_COLOR (no-color.org): no colour and, as users expect from it, no other escapes
    plain = bool(os.environ.get("NO_COLOR"))
    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False,
                      markup=False, **({"color_system": None} if plain else {}))
    for number, d in enumerate(diagnostics):
        if number:
            console.print()
        header = Text()
        header.append(location(d), style="bold")
        header.append(": ")
        header.append(d.code, style="bold red")
        if d.fix is not None:
            header.append(" [*]" if d.fix.is_safe else " [-]", style="cyan")
        header.append(f" {d.message}")
        console.print(header)
        for row in _snippet(d, sources.lines(d)):
            console.print(row)
        for row in _fix_diff(d, sources):
            console.print(row)
        console.print(Text(f"  = note: {d.name}; run `torchlint explain {d.code}` for why "
                           "and how to fix it", style="dim"))
