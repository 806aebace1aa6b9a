"""Is a file's lint certainly empty? Decided before libcst or any rule is imported.

The generated catalogue (:mod:`torchlint.catalog`) keeps every built-in rule's text
prefilter and ``ast`` trigger, so the screen asks them of a file without importing a rule:
a file on which no enabled rule can fire, and that CPython parses, has no finding. Only
the files that fail the screen load libcst and the rules (a one-file check of a clean
file, or a pre-commit run over such files, never does). The engine itself asks the same
questions again, of the rule classes, for the files that pass.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from torchlint.analysis.star_imports import outside_names
from torchlint.analysis.test_paths import is_test_file
from torchlint.codes import ENGINE_CODES, UNUSED_NOQA
from torchlint.engine.parse import compiles, python_syntax_error
from torchlint.engine.prefilter import (
    any_triggered,
    preview_shapes,
    rules_to_run,
    star_imported,
)
from torchlint.engine.triage import Trigger, from_data, triage

if TYPE_CHECKING:
    from torchlint.analysis.project import Dependency, FileProject
    from torchlint.config.file_settings import FileSettings
    from torchlint.source import SourceFile


@dataclass(frozen=True)
class Screened:
    """What the prefilter and the triage need of a rule: its code and triggers."""

    code: str
    triggers: tuple[str, ...]
    patterns: tuple[str, ...]
    requires: Trigger | None


def certainly_clean(source: SourceFile, settings: FileSettings) -> bool:
    """True when no enabled rule can fire on ``source`` and CPython parses it: linting it
    would find nothing. False when unsure (then the file is linted)."""
    return screen(source, settings) == frozenset()


def screen(source: SourceFile, settings: FileSettings,
           learned: list[Dependency] | None = None) -> frozenset[str] | None:
    """The codes of the enabled rules that can fire on ``source`` (none: its lint is empty,
    CPython parses it); None when the screen cannot tell (every rule may). The other files
    of the project a check read to decide are added to ``learned``: the answer holds
    while they stay as they are."""
    text = source.text
    if UNUSED_NOQA in settings.codes and "noqa" in text.lower():
        return None
    rules = _rules(settings)
    if rules is None:
        return None
    project = settings.project.for_file(source.path) if settings.project is not None else None
    stand_ins = False
    if project is not None and star_imported(text):
        # what a star import binds is spelled nowhere in the file: the screen asks of the
        # file with imports standing in for it, as the rules see it, added
        imports = _star_stand_ins(text, project)
        if imports is None:
            return None
        if imports:
            text, stand_ins = f"{text}\n{imports}", True
    facts = None
    options = settings.options
    # the facts first (one walk decides every rule's trigger), then the text's words and
    # patterns only for the rules whose trigger holds: a rule's facts are cheaper to ask
    # than a search of the whole text for its words (rules_to_run asks those below)
    maybe = []
    if any_triggered(rules, text):
        for rule in rules:
            if rule.requires is not None:
                if facts is None:
                    facts = triage(text)
                    if facts is None:
                        return None
                    facts = replace(facts, test_file=_is_test(source.path, project),
                                    project=project, project_known=True,
                                    checks_hold=stand_ins)
                if not rule.requires.holds(facts, options):
                    continue
            maybe.append(rule)
    # as in the engine, once one rule can fire the file is parsed: the others are then
    # judged by their cheap patterns alone (a costly one only ever spares a rule's walk).
    # The preview rules run only to be counted for the summary's hint, and the preview
    # shapes of the default rules, do not get a file parsed by themselves (they are
    # counted where libcst runs anyway).
    counted = settings.preview_codes - settings.codes
    enabled = rules_to_run([r for r in maybe if r.code not in counted], text,  # type: ignore[misc]
                           options)
    if enabled:
        also = [r for r in maybe if r.code in counted]
        if facts is not None:  # the default rules' preview shapes, counted as well
            also += preview_shapes([r for r in rules if r not in maybe and r.code not in counted],
                                   facts, options)
        also = rules_to_run(also, text, options, parsed=True)  # type: ignore[arg-type]
        codes: frozenset[str] | None = frozenset(rule.code for rule in (*enabled, *also))
    else:
        parses = facts is not None or compiles(text) or python_syntax_error(text) is None
        codes = frozenset() if parses else None
    if learned is not None and project is not None:
        learned.extend(project.dependencies.values())
    return codes


def _star_stand_ins(text: str, project: FileProject) -> str | None:
    """Import statements binding what the star imports of ``text`` bind for the rules
    (FileContext binds the public names of a module of the project, and nothing for
    another library's module): each such name the file reads without binding it, and
    every package such names may come from (a rule asks whether the file imports from
    torch, whatever names it spells; read from the modules' text, so that a package's
    ``__init__`` re-exporting its modules has no module parsed). Empty when they bind
    nothing; None when CPython cannot parse the text or a name is no dotted identifier."""
    facts = triage(text)
    if facts is None:
        return None
    bound: dict[str, set[str]] = {}
    packages: set[str] = set()
    for node in facts.nodes(ast.ImportFrom):
        if not any(alias.name == "*" for alias in node.names):  # type: ignore[attr-defined]
            continue
        module = project.star_module(node.module, node.level)  # type: ignore[attr-defined]
        if module is None:
            continue
        packages |= project.star_packages(module)
        # (symtable's analysis only once a module of the project is star-imported)
        outside = outside_names(text)
        if outside is None:
            return None
        if not outside:
            continue  # (it reads no name the import may bind)
        for name, qual in project.star_names(module).items():
            if name in outside:
                bound.setdefault(name, set()).add(qual)
    names = {*packages, *bound, *(q for quals in bound.values() for q in quals)}
    if not all(part.isidentifier() for name in names for part in name.split(".")):
        return None
    lines = [f"import {package}" for package in sorted(packages)]
    for name, quals in sorted(bound.items()):
        for qual in sorted(quals):
            module, _, last = qual.rpartition(".")
            lines.append(f"from {module} import {last} as {name}" if module
                         else f"import {last} as {name}")
    return "".join(f"{line}\n" for line in lines)


def _is_test(path: str, project: FileProject | None) -> bool:
    return is_test_file(path, project.roots[0] if project is not None else None)


def narrowed(settings: FileSettings, codes: frozenset[str]) -> FileSettings:
    """``settings`` running only the rules of ``codes`` (importing no other rule); the same
    settings when the rules cannot be loaded alone (plugins). Not for fixing: a fix may
    make another rule fire."""
    # the counted preview rules that cannot fire are not loaded either
    preview = settings.preview_codes & codes
    codes = codes & settings.codes
    if settings.rule_classes is not None:
        return replace(settings, preview_codes=preview, rule_classes=tuple(
            r for r in settings.rule_classes if r.code in codes or r.code in ENGINE_CODES))
    from torchlint.registry import rules_of

    rules = rules_of(codes)
    return replace(settings, preview_codes=preview) if rules is None else replace(
        settings, preview_codes=preview, rule_classes=rules)


def _rules(settings: FileSettings) -> Sequence[Screened] | None:
    # the preview rules that run only to be counted for the summary's hint are screened too
    if settings.rule_classes is not None:
        return [Screened(r.code, r.triggers, r.patterns, r.requires)
                for r in (*settings.rule_classes, *settings.preview_rules)
                if r.code not in ENGINE_CODES]
    from torchlint.registry import plugin_entry_points

    if plugin_entry_points():  # rules of other packages are not in the catalogue
        return None
    return _catalogued((settings.codes | settings.preview_codes) - ENGINE_CODES)


@lru_cache(maxsize=64)
def _catalogued(codes: frozenset[str]) -> tuple[Screened, ...] | None:
    from torchlint.catalog import SCREEN

    if not codes <= SCREEN.keys():
        return None
    return tuple(Screened(code, triggers, patterns,
                          from_data(requires) if requires is not None else None)
                 for code, (triggers, patterns, requires) in sorted(SCREEN.items())
                 if code in codes)
