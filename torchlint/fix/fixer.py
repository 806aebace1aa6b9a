"""Apply fixes: non-overlapping edits, repeated to a fixed point, never producing broken code."""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.imports import import_bindings
from torchlint.analysis.nodes import iter_nodes
from torchlint.codes import UNUSED_NOQA
from torchlint.config.file_settings import FileSettings
from torchlint.diagnostic import Diagnostic, Edit, applicable
from torchlint.engine.lint import LintResult, lint_source
from torchlint.engine.parse import parse
from torchlint.engine.suppression import NOQA_DIRECTIVE
from torchlint.fix.text import apply_edits
from torchlint.source import SourceFile

MAX_PASSES = 10


@dataclass
class FixOutcome:
    source: SourceFile  # the fixed source (same object as the input when nothing changed)
    result: LintResult  # lint of the fixed source: what remains
    fixed: int  # diagnostics fixed
    fixed_codes: Counter[str] = field(default_factory=Counter)  # how many fixed per code


def _conflicts(a: Edit, b: Edit) -> bool:
    if a == b:
        return False
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    return a.start < b.end and b.start < a.end or (
        a.start == a.end and b.start < a.start < b.end) or (
        b.start == b.end and a.start < b.start < a.end)


def choose_fixes(diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    """Greedy, in source order: each fix's edits all go in, or the fix waits for a later pass."""
    chosen: list[Diagnostic] = []
    taken: list[Edit] = []
    for diagnostic in diagnostics:
        if not applicable(diagnostic, unsafe):
            continue
        assert diagnostic.fix is not None
        edits = diagnostic.fix.resolved_edits()
        if any(_conflicts(e, t) for e in edits for t in taken):
            continue
        chosen.append(diagnostic)
        taken.extend(edits)
    return chosen


def _names(text: str) -> tuple[set[str], set[str]] | None:
    """(names bound by imports, names used) in ``text``; None if it does not parse."""
    try:
        module = parse(text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:
        return None
    imported: set[str] = set()
    used: set[str] = set()
    not_uses: set[int] = set()  # attribute and keyword names are not references
    for node in iter_nodes(module):
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            imported.update(name.bound for name in import_bindings(node))
        elif isinstance(node, cst.Attribute):
            not_uses.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            not_uses.add(id(node.keyword))
        elif isinstance(node, cst.Name) and id(node) not in not_uses:
            used.add(node.value)
    return imported, used


def _comments(text: str, *, without_noqa: bool = False) -> Counter[str]:
    """The comments of ``text``; ``without_noqa``: with ``# noqa`` directives taken out
    (what a TL002 fix may change)."""
    try:
        comments = [tok.string.rstrip()
                    for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                    if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return Counter()
    if without_noqa:  # the words of each comment, directives and '#' marks aside
        comments = [" ".join(re.sub(r"[#\s]+", " ", NOQA_DIRECTIVE.sub(" ", c)).split())
                    for c in comments]
        comments = [c for c in comments if c]
    return Counter(comments)


@dataclass
class _Original:
    text: str
    comments: Counter[str]
    imported: set[str]


def _acceptable(original: _Original, candidate: str, *, noqa_edits: bool = False) -> bool:
    """The candidate parses, keeps every comment (``noqa_edits``: every comment but its
    ``# noqa`` directives), and uses no import a fix removed."""
    names = _names(candidate)
    if names is None:
        return False
    if noqa_edits:
        if _comments(original.text, without_noqa=True) - _comments(candidate, without_noqa=True):
            return False
    elif original.comments - _comments(candidate):
        return False
    imported, used = names
    removed = original.imported - imported
    return not (removed & used)


def _apply(text: str, chosen: list[Diagnostic]) -> tuple[str, list[Diagnostic]]:
    """Apply ``chosen`` fixes; if that breaks the code or drops a comment, keep the good ones.
    Returns the new text and the diagnostics whose fixes went in."""
    edits = [e for d in chosen for e in d.fix.resolved_edits()]  # type: ignore[union-attr]
    candidate = apply_edits(text, edits)
    names = _names(text)
    before = _Original(text, _comments(text), names[0] if names else set())
    if _acceptable(before, candidate, noqa_edits=any(d.code == UNUSED_NOQA for d in chosen)):
        return candidate, list(chosen)
    kept: list[Edit] = []
    applied: list[Diagnostic] = []
    for diagnostic in chosen:
        trial = kept + list(diagnostic.fix.resolved_edits())  # type: ignore[union-attr]
        noqa = diagnostic.code == UNUSED_NOQA or any(d.code == UNUSED_NOQA for d in applied)
        if _acceptable(before, apply_edits(text, trial), noqa_edits=noqa):
            kept = trial
            applied.append(diagnostic)
    return apply_edits(text, kept), applied


def fix_source(source: SourceFile, settings: FileSettings, *, unsafe: bool = False,
               result: LintResult | None = None) -> FixOutcome:
    """Fix ``source`` to a fixed point. ``result`` may be a lint of ``source`` already made."""
    current = source
    fixed: Counter[str] = Counter()
    result = result or lint_source(current, settings)
    for _ in range(MAX_PASSES):
        if not result.parsed:
            break
        chosen = choose_fixes(result.diagnostics, unsafe)
        if not chosen:
            break
        new_text, applied = _apply(current.text, chosen)
        if not applied or new_text == current.text:
            break
        fixed.update(d.code for d in applied)
        current = current.with_text(new_text)
        result = lint_source(current, settings)
    return FixOutcome(current, result, sum(fixed.values()), fixed)
