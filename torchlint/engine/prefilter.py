"""Which rules can fire on a text, decided before any parse.

A rule's ``triggers`` (substrings, one must occur) and ``patterns`` (regular expressions,
all must match) are necessary conditions: a file that fails them cannot hold a finding
of the rule. The engine needs two answers per file: whether any rule can fire (if none,
libcst never parses the file), and which rules to run. Once the first answer is yes,
running a rule whose costly patterns were not searched is cheaper than searching them,
and gives the same findings: patterns only ever spare work.

Costs are kept down three ways: a pattern that is a plain word (``\\btorch\\b``) is first
looked up as a substring, cheap patterns are searched before costly ones, and a pattern
shared by several rules is searched once per text. The building blocks of the patterns
are in :mod:`torchlint.rules.patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, TypeVar

from torchlint.analysis.options import Options
from torchlint.analysis.spelling import model_names_pattern

if TYPE_CHECKING:
    from torchlint.engine.triage import FileFacts, Trigger
    from torchlint.rule import Rule

    class _Screened(Protocol):
        requires: Trigger | None

    R = TypeVar("R", bound=_Screened)


_WORDS = re.compile(r"(?:\\b)?(?:(\w+)|\(\?:(\w+(?:\|\w+)*)\))(?:\\b)?")


@dataclass(frozen=True)
class Pattern:
    source: str
    regex: re.Pattern[str]
    words: tuple[str, ...]  # for a plain-word pattern: one of these must occur as a substring

    @property
    def cheap(self) -> bool:
        return bool(self.words)

    def search(self, text: str) -> bool:
        if self.words and not any(w in text for w in self.words):
            return False
        return self.regex.search(text) is not None


@lru_cache(maxsize=None)
def compiled(patterns: tuple[str, ...]) -> tuple[Pattern, ...]:
    """The patterns, plain words first (they are the cheapest to refute)."""
    found = []
    for source in patterns:
        plain = _WORDS.fullmatch(source)
        words: tuple[str, ...] = ()
        regex = source
        if plain:
            words = (plain.group(1),) if plain.group(1) else tuple(plain.group(2).split("|"))
            if source.startswith("\\b"):
                # `\bword` makes re try every position; `word(?<=\bword)` lets it jump
                # from one occurrence of the word to the next (25x faster, same matches)
                regex = "(?:" + "|".join(f"{w}(?<=\\b{w})" for w in words) + ")" + (
                    "\\b" if source.endswith("\\b") else "")
        found.append(Pattern(source, re.compile(regex, re.MULTILINE), words))
    return tuple(sorted(found, key=lambda p: not p.cheap))


def _triggered(rule: type[Rule], text: str) -> bool:
    triggers = rule.triggers
    return not triggers or any(t in text for t in triggers)


def _matches(patterns: tuple[Pattern, ...], text: str, memo: dict[str, bool],
             cheap_only: bool = False) -> bool:
    for pattern in patterns:
        if cheap_only and not pattern.cheap:
            continue
        found = memo.get(pattern.source)
        if found is None:
            found = memo[pattern.source] = pattern.search(text)
        if not found:
            return False
    return True


# Stands, in a rule's pattern, for any name of a model (see is_model_name): the words come
# from the settings, so the prefilter never hides a model a project named itself.
MODEL_NAME = "<model-name>"


@lru_cache(maxsize=None)
def rule_patterns(patterns: tuple[str, ...], model_names: frozenset[str]
                  ) -> tuple[Pattern, ...]:
    """A rule's patterns, compiled, with :data:`MODEL_NAME` spelled out."""
    if not any(MODEL_NAME in p for p in patterns):
        return compiled(patterns)
    names = f"(?i:{model_names_pattern(model_names)})"
    return compiled(tuple(p.replace(MODEL_NAME, names) for p in patterns))


_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.MULTILINE)


def star_imported(text: str) -> bool:
    """``from x import *`` somewhere in ``text``."""
    return "*" in text and _STAR_IMPORT.search(text) is not None


def star_import_binds(text: str, project: object | None) -> bool:
    """May a star import of ``text`` bind names for the rules, spelled nowhere in the file
    (``from model import *``)? Only with project knowledge: FileContext then binds the
    public names of a module of the project, and a rule may ask whether the file imports
    from torch whatever names it spells. Then no trigger, pattern or fact of the text
    alone can rule a rule out."""
    return project is not None and star_imported(text)


def could_fire(rule: type[Rule], text: str, options: Options | None = None) -> bool:
    """Do ``text`` and the rule's triggers and patterns allow a finding? (On an
    :func:`unusual` text only the cheap patterns are asked.)"""
    names = (options or Options()).model_names
    return _triggered(rule, text) and _matches(rule_patterns(rule.patterns, names), text, {},
                                               cheap_only=unusual(text))


def rules_to_run(rules: Sequence[type[Rule]], text: str, options: Options | None = None,
                 *, parsed: bool = False) -> list[type[Rule]]:
    """The rules worth running on ``text``, in their given order; empty when none can fire.

    Rules with only cheap patterns are tried first; as soon as one can fire the file will
    be parsed, and the remaining rules are filtered by triggers and cheap patterns only.
    ``parsed``: the file is parsed anyway, so cheap patterns alone decide from the start.
    """
    memo: dict[str, bool] = {}
    names = (options or Options()).model_names
    candidates = [r for r in rules if _triggered(r, text)]
    if not candidates:
        return []
    chosen: set[type[Rule]] = set()
    # on odd texts the costly patterns could take minutes: there only cheap ones decide
    parsing = parsed or unusual(text)
    for rule in sorted(candidates, key=_cost):
        patterns = rule_patterns(rule.patterns, names)
        if _matches(patterns, text, memo, cheap_only=parsing):
            chosen.add(rule)
            parsing = True
    return [r for r in candidates if r in chosen]


def any_triggered(rules: Sequence[type[Rule]], text: str) -> bool:
    """Does ``text`` hold a trigger word of any of ``rules``? (Stops at the first.)"""
    return any(_triggered(r, text) for r in rules)


def firing(rules: Sequence[type[Rule]], text: str, options: Options | None = None
           ) -> Iterator[type[Rule]]:
    """The rules whose triggers and patterns all pass ``text`` (on an :func:`unusual` text,
    the cheap patterns only), cheapest to decide first, one at a time: a caller that needs
    one can stop at the first."""
    memo: dict[str, bool] = {}
    names = (options or Options()).model_names
    candidates = [r for r in rules if _triggered(r, text)]
    if not candidates:
        return
    cheap_only = unusual(text)
    for rule in sorted(candidates, key=_cost):
        if _matches(rule_patterns(rule.patterns, names), text, memo, cheap_only=cheap_only):
            yield rule


LONG_LINE = 2000
LARGE_TEXT = 1 << 20
_BLANK_STRETCH = re.compile(r"\n[ \t\f\r\n\\]{2000}")
_COMMENT_BLOCK = re.compile(r"(?:^[ \t\f]*#[^\n]*\n){8,}", re.MULTILINE)


def unusual(text: str) -> bool:
    """A text on which the costly patterns could run for long, so cheap ones decide alone.

    The patterns skip comments, blanks and line continuations between tokens, and look
    for closing brackets: each search start can scan to the end of a line, of a comment
    block or of an unclosed bracket. That is quadratic on a line of megabytes (minified or
    generated code, or lines ended by CR alone), a block of thousands of comment, blank or
    continuation lines, thousands of unclosed brackets (broken code) or simply a huge file.
    Deciding by cheap patterns only parses such files.
    """
    size = len(text)
    if size > LARGE_TEXT or text.count("\r") - text.count("\r\n") > 100:  # CR-only lines
        return True
    if size > LONG_LINE and any(len(line) > LONG_LINE for line in text.splitlines()):
        return True
    if abs(text.count("(") - text.count(")")) > 50 or abs(
            text.count("[") - text.count("]")) > 50:
        return True
    if _BLANK_STRETCH.search(text):  # thousands of blank or continuation-only lines
        return True
    hashes = text.count("#")
    if size > 20_000 and hashes * 10 > size:
        return True
    if hashes < 200:  # too few comment lines to be costly
        return False
    # the cost of comment blocks grows with the square of their length
    cost = sum(m.group().count("\n") ** 2 for m in _COMMENT_BLOCK.finditer(text))
    return cost > 40_000


@lru_cache(maxsize=None)
def _cost(rule: type[Rule]) -> int:
    return sum(not p.cheap for p in compiled(rule.patterns))


def preview_shapes(rules: Sequence[R], facts: FileFacts, options: Options) -> list[R]:
    """Of ``rules``, whose triggers do not hold on ``facts``, those whose triggers hold in
    preview. Outside preview a check may rule out a file on which its rule can only report
    preview shapes; a file parsed anyway is linted for them too, so that the summary's hint
    counts them (as it counts the preview rules where the run parses)."""
    if options.preview:
        return []
    from torchlint.engine.triage import rules_out_preview_shapes

    shown = _in_preview(options)
    return [r for r in rules if r.requires is not None and rules_out_preview_shapes(
        r.requires) and r.requires.holds(facts, shown)]


@lru_cache(maxsize=8)
def _in_preview(options: Options) -> Options:
    """``options`` with preview on (made once per run's options, not per file)."""
    return replace(options, preview=True)
