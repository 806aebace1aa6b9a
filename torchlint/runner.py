"""Lint (and fix) many files. Each file is handled by :func:`process_file`, a pure function."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.config import Settings
from torchlint.diagnostic import Diagnostic
from torchlint.engine import lint_source
from torchlint.fixer import fix_source
from torchlint.source import DecodeError, SourceFile, write_atomic

SYNTAX_ERROR = "TL001"


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # write fixes to the file
    unsafe: bool = False  # include unsafe fixes
    diff: bool = False  # compute the diff of the fixes, write nothing


@dataclass
class FileOutcome:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)  # what remains
    fixed: int = 0
    diff: str = ""
    fixed_text: str | None = None  # for stdin: the fixed source
    error: str | None = None  # the file could not be read at all


def _unreadable(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(path, line, column, line, column, SYNTAX_ERROR, "syntax-error", message)


def lint_one(source: SourceFile, settings: Settings, mode: Mode) -> FileOutcome:
    path = source.path
    rules = settings.rules_for(path)
    codes = settings.codes_for(path)
    unfixable = settings.unfixable_codes()
    result = lint_source(source, rules, enabled_codes=codes, unfixable=unfixable)
    if not (mode.fix or mode.diff) or not result.parsed:
        return FileOutcome(path, result.diagnostics)
    outcome = fix_source(source, rules, unsafe=mode.unsafe, enabled_codes=codes,
                         unfixable=unfixable, result=result)
    changed = outcome.source.text != source.text
    diff = ""
    if mode.diff and changed:
        diff = "".join(difflib.unified_diff(
            source.text.splitlines(keepends=True), outcome.source.text.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}"))
        if diff and not diff.endswith("\n"):
            diff += "\n\\ No newline at end of file\n"
        return FileOutcome(path, result.diagnostics, fixed=0, diff=diff)
    return FileOutcome(path, outcome.result.diagnostics, fixed=outcome.fixed,
                       fixed_text=outcome.source.text if changed else None)


def process_file(path: str, settings: Settings, mode: Mode) -> FileOutcome:
    """Read, lint, maybe fix and write one file. Never raises for a bad file."""
    if path.endswith(".ipynb"):
        from torchlint.notebook import process_notebook

        return process_notebook(path, settings, mode)
    if SYNTAX_ERROR not in settings.codes_for(path):
        enabled_tl001 = False
    else:
        enabled_tl001 = True
    try:
        source = SourceFile.read(path)
    except DecodeError as exc:
        diags = [_unreadable(path, str(exc), exc.line, exc.column)] if enabled_tl001 else []
        return FileOutcome(path, diags)
    except OSError as exc:
        return FileOutcome(path, error=f"cannot read: {exc.strerror or exc}")
    outcome = lint_one(source, settings, mode)
    if mode.fix and not mode.diff and outcome.fixed_text is not None:
        try:
            write_atomic(path, source.with_text(outcome.fixed_text).to_bytes())
        except (OSError, UnicodeEncodeError) as exc:
            return FileOutcome(path, outcome.diagnostics,
                               error=f"cannot write the fixes: {exc}")
    return outcome


def run(paths: Iterable[str], settings: Settings, mode: Mode, *, jobs: int | None = None,
        cache_dir: Path | None = None) -> Iterator[FileOutcome]:
    """Outcomes in the order of ``paths``.

    ``jobs``: worker processes (None: CPU count). ``cache_dir``: where per-file results are
    cached (None: no cache). Both are accepted here; parallelism and caching live in this
    module so callers never change.
    """
    for path in paths:
        yield process_file(path, settings, mode)
