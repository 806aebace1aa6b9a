"""Lint one source: parse once, one walk for all rules, positions only for findings."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.project import Dependency
from torchlint.codes import ENGINE_CODES, SYNTAX_ERROR, UNUSED_NOQA
from torchlint.config.file_settings import FileSettings
from torchlint.diagnostic import Diagnostic, NodeEdit
from torchlint.engine.parse import (compiles, parse, python_syntax_error, remembers_parses,
                                    syntax_error)
from torchlint.engine.positions import Locator
from torchlint.engine.prefilter import preview_shapes, rules_to_run, star_import_binds
from torchlint.engine.suppression import Suppressions, parse_suppressions, stale_directives
from torchlint.engine.triage import triage
from torchlint.engine.walk import rule_failure, run_rules
from torchlint.fix.resolve import import_anchor, resolve_fix
from torchlint.rule import Report, Rule
from torchlint.source import SourceFile


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    parsed: bool = True
    suppressed: int = 0
    module: cst.Module | None = field(default=None, repr=False)
    # rules that crashed on this source (their findings are missing; the others are here)
    rule_failures: list[str] = field(default_factory=list)
    # the project's other files this result learned from, as they were read
    dependencies: list[Dependency] = field(default_factory=list)
    # findings of preview shapes of default rules, left out because preview is off
    preview_only: int = 0


def lint_source(source: SourceFile, settings: FileSettings, *, prefilter: bool = True
                ) -> LintResult:
    """Run the rules of ``settings`` over ``source``.

    ``settings.codes`` decides TL001/TL002; ``settings.noqa=False`` ignores ``# noqa``
    comments (flake8's ``--disable-noqa``). ``prefilter=False`` runs every rule, even those
    whose triggers the text lacks (to check that the triggers hide no finding).
    """
    enabled = settings.codes
    unfixable = settings.unfixable
    # with preview off, the selected preview rules run too, only to be counted
    rules: Sequence[type[Rule]] = (*settings.rules, *settings.preview_rules)
    text = source.text
    # TL001 and TL002 are the engine's own; their rule classes only document them
    target = settings.options.target_torch
    rules = [r for r in rules if r.code not in ENGINE_CODES and r.applies_to.includes(target)]
    parses = False
    # the file's noqa comments are judged (TL002): then it is parsed, whatever can fire
    judges_noqa = UNUSED_NOQA in enabled and "noqa" in text.lower()
    if prefilter and not star_import_binds(text, settings.project):
        rules = rules_to_run(rules, text, settings.options)
        if rules:
            # the ast triage: run only the rules whose triggers hold on the file's facts
            facts = triage(text)
            if facts is not None:
                parses = True
                held = [r for r in rules
                        if r.requires is None or r.requires.holds(facts, settings.options)]
                if held or judges_noqa:
                    # parsed anyway: linted for the preview shapes too, which the
                    # summary's hint counts and a noqa comment on one uses
                    held += preview_shapes([r for r in rules if r not in held], facts,
                                           settings.options)
                rules = [r for r in rules if r in held]
    if not rules and not judges_noqa:
        # nothing can fire: CPython's parser is enough to tell whether the file parses
        if parses or compiles(text) or python_syntax_error(text) is None:
            return LintResult([], parsed=True)
    try:
        module = parse(source.text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # libcst's native parser can raise a pyo3 PanicException
        failed = [syntax_error(source.path, exc, source.text)]
        return LintResult(failed if SYNTAX_ERROR in enabled else [], parsed=False)

    failures: list[str] = []
    project = settings.project
    walk_key = (source.path, settings.fingerprint, tuple(r.code for r in rules))
    earlier = _earlier_walk(walk_key, module)
    try:
        try:
            reports, context = earlier if earlier is not None else run_rules(
                source.path, module, rules, settings.options, project=project)
        except (RecursionError, KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception:  # a rule's bug: isolate it, keep every other rule's findings
            reports, context = run_rules(source.path, module, rules, settings.options,
                                         guarded=True, failures=failures, project=project)
    except RecursionError as exc:
        failed = [syntax_error(source.path, exc, source.text)]
        return LintResult(failed if SYNTAX_ERROR in enabled else [], parsed=False,
                          module=module)
    if earlier is None and not failures:
        _remember_walk(walk_key, module, reports, context)
    suppressions = parse_suppressions(source.text) if settings.noqa else Suppressions()
    diagnostics: list[Diagnostic] = []
    suppressed = 0
    preview_only = 0
    if not settings.options.preview:
        held_back = [(rule, report) for rule, report in reports if report.preview]
        reports, preview_only = _without_preview(reports, settings, failures)
        if held_back and UNUSED_NOQA in enabled:
            # a `# noqa` written for a preview-only finding still has work to do
            _mark_used_directives(held_back, module, source.text, suppressions)
    if reports:
        locator = Locator(module, source.text, _nodes_to_locate(reports, module),
                          _statement_hints(reports, module))
        for rule, report in reports:
            try:
                diagnostic = _diagnostic(source, module, context, locator, rule, report,
                                         unfixable)
            except Exception as exc:  # noqa: BLE001 - a rule reported a node not in the tree
                failures.append(rule_failure(rule.code, exc))
                continue
            if diagnostic is None:
                continue
            if suppressions.is_suppressed(diagnostic.code, diagnostic.line):
                suppressed += 1
            else:
                diagnostics.append(diagnostic)
    if UNUSED_NOQA in enabled:
        from torchlint.registry import rule_catalog

        stale = stale_directives(source.path, source.text, suppressions, enabled,
                                 rule_catalog(), blanket=settings.options.preview)
        diagnostics.extend(d if UNUSED_NOQA not in unfixable else replace(d, fix=None)
                           for d in stale)
    diagnostics.sort(key=lambda d: d.sort_key)
    dependencies = sorted(context.project.dependencies.values(), key=lambda d: d.path) \
        if context.project is not None else []
    return LintResult(diagnostics, suppressed=suppressed, module=module,
                      rule_failures=sorted(set(failures)), dependencies=dependencies,
                      preview_only=preview_only)


# The rules' reports of the last file walked, kept while the parser keeps its trees (an
# editor's successive versions): a version whose statements are the very nodes of the last
# one (only blank lines and comments after the last statement changed) has the same
# reports; positions, suppressions and unused directives are still taken from its text.
# Not when the reports rest on other files of the project (they may have changed since).
_last_walk: tuple[tuple[object, ...], cst.Module, list[tuple[Rule, Report]], FileContext
                  ] | None = None


def _earlier_walk(key: tuple[object, ...], module: cst.Module
                  ) -> tuple[list[tuple[Rule, Report]], FileContext] | None:
    last = _last_walk
    if last is None or not remembers_parses() or last[0] != key:
        return None
    earlier = last[1]
    if module.body is not earlier.body or module.header is not earlier.header:
        return None
    return last[2], last[3]


def _remember_walk(key: tuple[object, ...], module: cst.Module,
                   reports: list[tuple[Rule, Report]], context: FileContext) -> None:
    global _last_walk
    if not remembers_parses():
        return
    depends = context.project is not None and context.project.dependencies
    _last_walk = None if depends else (key, module, reports, context)


def _without_preview(reports: list[tuple[Rule, Report]], settings: FileSettings,
                     failures: list[str]) -> tuple[list[tuple[Rule, Report]], int]:
    """With preview off: the reports left once what only preview mode shows is taken out
    (the preview shapes of rules, and every report of the preview rules that ran only to
    be counted), and how many were taken out. A counted rule's crash is not reported."""
    if settings.options.preview:
        return reports, 0
    counted = settings.preview_codes
    kept = [(rule, report) for rule, report in reports
            if not report.preview and rule.code not in counted]
    if counted and failures:
        # a failure reads "internal error in CODE: ..." (walk.rule_failure)
        failures[:] = [failure for failure in failures
                       if failure.split(":", 1)[0].rsplit(" ", 1)[-1] not in counted]
    return kept, len(reports) - len(kept)


def _mark_used_directives(reports: list[tuple[Rule, Report]], module: cst.Module, text: str,
                          suppressions: Suppressions) -> None:
    locator = Locator(module, text, [report.node for _, report in reports],
                      _statement_hints(reports, module))
    for rule, report in reports:
        try:
            line, _ = locator.line_col(locator.range(report.node)[0])
        except Exception:  # noqa: BLE001 - a node not in the tree: nothing to mark
            continue
        suppressions.is_suppressed(rule.code, line)


def _nodes_to_locate(reports: list[tuple[Rule, Report]], module: cst.Module) -> list[cst.CSTNode]:
    nodes: list[cst.CSTNode] = []
    for _, report in reports:
        nodes.append(report.node)
        if report.fix is not None:
            nodes.extend(e.node for e in report.fix.edits if isinstance(e, NodeEdit))
            if report.fix.imports:
                nodes.extend(import_anchor(module))
    return nodes


def _statement_hints(reports: list[tuple[Rule, Report]], module: cst.Module
                     ) -> dict[int, cst.CSTNode]:
    """For each node to locate, the top-level statement that probably holds it."""
    hints: dict[int, cst.CSTNode] = {}
    for stmt in module.body:
        hints[id(stmt)] = stmt
    for _, report in reports:
        if report.statement is None:
            continue
        hints.setdefault(id(report.node), report.statement)
        if report.fix is not None:
            for edit in report.fix.edits:
                if isinstance(edit, NodeEdit):
                    hints.setdefault(id(edit.node), report.statement)
    return hints


def _diagnostic(source: SourceFile, module: cst.Module, context: FileContext, locator: Locator,
                rule: Rule, report: Report, unfixable: Collection[str]) -> Diagnostic | None:
    start, end = locator.range(report.node)
    line, column = locator.line_col(start)
    end_line, end_column = locator.line_col(end)
    fix = None
    if report.fix is not None and rule.code not in unfixable:
        fix = resolve_fix(report.fix, module, locator)
    return Diagnostic(source.path, line, column, end_line, end_column, rule.code, rule.name,
                      report.message, fix)


