"""The default flake8-style line: ``path:line:col: CODE [*] message``.

``[*]`` marks a finding that ``--fix`` would fix (with ``--unsafe-fixes``: unsafe fixes
too), as Ruff marks its own. Coloured on a terminal, never when ``NO_COLOR`` is set, always
when ``FORCE_COLOR`` is set; plain text in pipes and files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from torchlint.diagnostic import Diagnostic, applicable

if TYPE_CHECKING:
    from torchlint.reporters.sources import Sources

FIXABLE = "[*]"
_BOLD, _RED, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


def wants_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour for ``stream``: ``NO_COLOR`` turns it off, ``FORCE_COLOR`` on, else only on
    a terminal that is not ``TERM=dumb`` (https://no-color.org, https://force-color.org)."""
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def location(diagnostic: Diagnostic) -> str:
    if diagnostic.cell is not None:
        return f"{diagnostic.path}:cell {diagnostic.cell}:{diagnostic.line}:{diagnostic.column}"
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}"


def format_concise(diagnostic: Diagnostic, *, unsafe: bool = False, colour: bool = False
                   ) -> str:
    marker = f"{FIXABLE} " if applicable(diagnostic, unsafe) else ""
    if not colour:
        return f"{location(diagnostic)}: {diagnostic.code} {marker}{diagnostic.message}"
    where = location(diagnostic)
    path, _, rest = where.partition(":")
    if diagnostic.cell is not None:  # path:cell N:line:col
        cell, _, rest = rest.partition(":")
        path = f"{path}:{cell}"
    tinted = f"{_BOLD}{path}{_RESET}{_CYAN}:{_RESET}{rest.replace(':', f'{_CYAN}:{_RESET}')}"
    if marker:
        marker = f"{_CYAN}{FIXABLE}{_RESET} "
    return (f"{tinted}{_CYAN}:{_RESET} {_BOLD}{_RED}{diagnostic.code}{_RESET} "
            f"{marker}{diagnostic.message}")


def render_concise(diagnostics: Sequence[Diagnostic], stream: TextIO,
                   sources: Sources | None = None, *, unsafe: bool = False,
                   colour: bool | None = None) -> None:
    """``colour``: None decides by :func:`wants_colour`."""
    tint = wants_colour(stream) if colour is None else colour
    for diagnostic in diagnostics:
        stream.write(format_concise(diagnostic, unsafe=unsafe, colour=tint) + "\n")
