"""Lint one source: parse once, one walk for all rules, positions only for findings."""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.diagnostic import Diagnostic, Edit, Fix, ImportNeed, NodeEdit
from torchlint.engine.positions import Locator
from torchlint.engine.prefilter import rules_to_run
from torchlint.rule import Report, Rule
from torchlint.source import SourceFile
from torchlint.engine.suppression import Suppressions, parse_suppressions
from torchlint.analysis.nodes import LEAVES, Handler, children_of, memoised_children

SYNTAX_ERROR = "TL001"
UNUSED_NOQA = "TL002"
_ENGINE_CODES = frozenset({SYNTAX_ERROR, UNUSED_NOQA})

_FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_LOCAL_BINDERS = (cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For,
                  cst.With, cst.FunctionDef, cst.ClassDef)


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    parsed: bool = True
    suppressed: int = 0
    module: cst.Module | None = field(default=None, repr=False)


def parse(text: str) -> cst.Module:
    _check_nesting(text)
    # Every node libcst builds checks itself in ``__post_init__``; the parser's own output
    # is valid by construction, and those checks are a sixth of the parse. Skip them here.
    node_class = cst.CSTNode
    checks = node_class.__dict__.get("__post_init__")
    if checks is None:  # another libcst layout: parse as is
        return cst.parse_module(text)
    node_class.__post_init__ = _no_checks  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        node_class.__post_init__ = checks  # type: ignore[method-assign]


def _no_checks(self: cst.CSTNode) -> None:
    return None


# libcst's native parser takes time cubic in the nesting depth of an expression (a minute
# for 20 000 chained ``+``) and overflows its stack on a few thousand parentheses, killing
# the process. CPython refuses such code anyway ("too many nested parentheses"), so when a
# cheap scan sees deep brackets or very long lines, CPython's parser (a tenth of libcst's
# time) decides first, and refusals for depth become a syntax error.
_BRACKET_DEPTH = {ord("("): 1, ord("["): 1, ord("{"): 1, ord(")"): -1, ord("]"): -1,
                  ord("}"): -1}
_ONLY_BRACKETS = {c: None for c in range(128) if c not in _BRACKET_DEPTH}
_SUSPICIOUS_DEPTH = 90
_SUSPICIOUS_LINE = 4000
_DEPTH_MESSAGES = ("too many nested parentheses", "too many levels of indentation",
                   "too many statically nested blocks", "too complex", "nested too deeply")


def _looks_deep(text: str) -> bool:
    brackets = text.translate(_ONLY_BRACKETS)
    if brackets:
        depth = deepest = 0
        for char in brackets:
            step = _BRACKET_DEPTH.get(ord(char))
            if step is not None:
                depth += step
                if depth > deepest:
                    deepest = depth
        if deepest > _SUSPICIOUS_DEPTH:
            return True
    if len(text) > _SUSPICIOUS_LINE and max(map(len, text.splitlines()), default=0) > \
            _SUSPICIOUS_LINE:
        return True
    return text.count("\\\n") + text.count("\\\r") > 500


def _check_nesting(text: str) -> None:
    """Raise RecursionError for code nested too deeply for libcst to parse safely."""
    if not _looks_deep(text):
        return
    import ast

    try:
        compile(text, "<torchlint>", "exec", ast.PyCF_ONLY_AST)
    except (RecursionError, MemoryError):
        raise RecursionError("the file is nested too deeply to be analysed") from None
    except SyntaxError as exc:
        if any(m in str(exc.msg) for m in _DEPTH_MESSAGES):
            raise RecursionError("the file is nested too deeply to be analysed") from None
    except (ValueError, OverflowError):  # null bytes and the like: libcst reports those
        pass


def syntax_error(path: str, exc: BaseException, text: str) -> Diagnostic:
    python_error = _python_syntax_error(text) if not isinstance(exc, RecursionError) else None
    if python_error is not None:
        line, column, message = python_error
    elif isinstance(exc, cst.ParserSyntaxError):
        line, column = exc.raw_line, exc.raw_column + 1
        message = exc.message.strip().splitlines()[0] if exc.message.strip() else "invalid syntax"
    elif isinstance(exc, RecursionError):
        line, column, message = 1, 1, "the file is nested too deeply to be analysed"
    else:
        line, column = 1, 1
        message = " ".join(str(exc).split()) or type(exc).__name__
    lines = text.splitlines() or [""]
    line = max(1, min(line, len(lines)))
    column = max(1, min(column, len(lines[line - 1]) + 1))
    return Diagnostic(path, line, column, line, column, SYNTAX_ERROR, "syntax-error",
                      f"cannot parse: {message}")


def _compiles(text: str) -> bool:
    """True when CPython compiles ``text`` to bytecode: then it certainly parses.

    Twice as fast as building CPython's AST, which is only needed to describe an error
    (bytecode compilation also refuses some code that parses, e.g. a module-level
    ``return``; the AST check then decides).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "is" with a literal and the like: not ours to say
        try:
            compile(text, "<source>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False
    return True


def _python_syntax_error(text: str) -> tuple[int, int, str] | None:
    """CPython's own position and message, which are more precise than the CST parser's."""
    try:
        compile(text, "<source>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        return 1, 1, str(exc) or type(exc).__name__
    return None


def lint_source(
    source: SourceFile,
    rules: Sequence[type[Rule]],
    *,
    enabled_codes: Collection[str] | None = None,
    unfixable: Collection[str] = (),
    noqa: bool = True,
    prefilter: bool = True,
) -> LintResult:
    """Run ``rules`` over ``source``; ``enabled_codes`` decides TL001/TL002 (default: all).

    ``noqa=False`` ignores ``# noqa`` comments (flake8's ``--disable-noqa``).
    ``prefilter=False`` runs every rule, even those whose triggers the text lacks (to
    check that the triggers hide no finding).
    """
    enabled = set(enabled_codes) if enabled_codes is not None else {r.code for r in rules} | {
        SYNTAX_ERROR}
    text = source.text
    # TL001 and TL002 are the engine's own; their rule classes only document them
    rules = [r for r in rules if r.code not in _ENGINE_CODES]
    if prefilter:
        rules = rules_to_run(rules, text)
    if not rules and not (UNUSED_NOQA in enabled and "noqa" in text.lower()):
        # nothing can fire: CPython's parser is enough to tell whether the file parses
        if _compiles(text) or _python_syntax_error(text) is None:
            return LintResult([], parsed=True)
    try:
        module = parse(source.text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # libcst's native parser can raise a pyo3 PanicException
        diagnostics = [syntax_error(source.path, exc, source.text)]
        return LintResult(diagnostics if SYNTAX_ERROR in enabled else [], parsed=False)

    try:
        try:
            reports, context = _run_rules(source.path, module, rules)
        except (RecursionError, KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception:  # a rule's bug: isolate it, keep every other rule's findings
            reports, context = _run_rules(source.path, module, rules, guarded=True)
    except RecursionError as exc:
        diagnostics = [syntax_error(source.path, exc, source.text)]
        return LintResult(diagnostics if SYNTAX_ERROR in enabled else [], parsed=False,
                          module=module)
    suppressions = parse_suppressions(source.text) if noqa else Suppressions()
    diagnostics: list[Diagnostic] = []
    suppressed = 0
    if reports:
        locator = Locator(module, source.text, _nodes_to_locate(reports, module),
                          _statement_hints(reports, module))
        for rule, report in reports:
            try:
                diagnostic = _diagnostic(source, module, context, locator, rule, report,
                                         unfixable)
            except Exception as exc:  # noqa: BLE001 - a rule reported a node not in the tree
                _internal_error(rule.code, source.path, exc)
                continue
            if diagnostic is None:
                continue
            if suppressions.is_suppressed(diagnostic.code, diagnostic.line):
                suppressed += 1
            else:
                diagnostics.append(diagnostic)
    if UNUSED_NOQA in enabled:
        for directive in suppressions.lines.values():
            if directive.codes is None:
                continue
            unused = sorted(c for c in directive.codes - directive.used if c in enabled)
            if unused and not suppressions.is_suppressed(UNUSED_NOQA, directive.line):
                diagnostics.append(Diagnostic(
                    source.path, directive.line, directive.column, directive.line,
                    directive.column + len("# noqa"), UNUSED_NOQA, "unused-noqa",
                    f"unused noqa directive: {', '.join(unused)} is not reported on this line",
                ))
    diagnostics.sort(key=lambda d: d.sort_key)
    return LintResult(diagnostics, suppressed=suppressed, module=module)


def _internal_error(code: str, path: str, exc: BaseException) -> None:
    print(f"torchlint: warning: internal error in {code} on {path}: {exc!r}; "
          "that rule skipped this file (please report it)", file=sys.stderr)


def _guard(instance: Rule, handler: Handler, failed: set[int], path: str) -> Handler:
    def call(node: cst.CSTNode) -> object:
        if id(instance) in failed:
            return None
        try:
            return handler(node)
        except (RecursionError, KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001
            failed.add(id(instance))
            _internal_error(instance.code, path, exc)
            return None

    return call


def _run_rules(path: str, module: cst.Module, rules: Sequence[type[Rule]], *,
               guarded: bool = False) -> tuple[list[tuple[Rule, Report]], FileContext]:
    """One walk for all rules. ``guarded``: a rule that raises is dropped for this file."""
    context = FileContext(path, module)
    instances = [rule(context) for rule in rules]
    visit: dict[str, list[Handler]] = {}
    leave: dict[str, list[Handler]] = {}
    failed: set[int] = set()
    for instance in instances:
        for kind, type_name, method_name in _handler_names(type(instance)):
            handler = getattr(instance, method_name)
            if guarded:
                handler = _guard(instance, handler, failed, path)
            (visit if kind == "visit" else leave).setdefault(type_name, []).append(handler)
    ancestors = context.ancestors
    push, pop = ancestors.append, ancestors.pop
    frames = context._frames
    roles = _ROLES
    children = children_of
    # leaves nobody handles need no visit at all (names alone are a third of all nodes)
    skip = frozenset(t for t in LEAVES if t.__name__ not in visit and t.__name__ not in leave)
    # per node class: its visit handlers, leave handlers and role, looked up once a file
    plan: dict[type, tuple[list[Handler] | None, list[Handler] | None, int]] = {}

    def walk(node: cst.CSTNode) -> None:
        cls = type(node)
        entry = plan.get(cls)
        if entry is None:
            role = roles.get(cls)
            if role is None:
                role = _role(cls)
            entry = plan[cls] = (visit.get(cls.__name__), leave.get(cls.__name__), role)
        visits, leaves, role = entry
        push(node)
        if role:
            if role & _BINDER and frames:
                context.note_local_binding(node)
            if role & _FUNCTION:
                context.enter_function(node)
        if visits:
            for handler in visits:
                handler(node)
        for child in children(node):
            if type(child) not in skip:
                walk(child)
        if leaves:
            for handler in leaves:
                handler(node)
        if role & _FUNCTION:
            context.leave_function()
        pop()

    with memoised_children():
        walk(module)
    return [(instance, report) for instance in instances if id(instance) not in failed
            for report in instance.reports], context


# What the walk does on entering a node, by node class. isinstance against libcst classes
# goes through ABCMeta (about 1 us a check, nine checks a node), so it is decided once a class.
_BINDER, _FUNCTION = 1, 2
_ROLES: dict[type, int] = {}


def _role(cls: type) -> int:
    role = (_BINDER if issubclass(cls, _LOCAL_BINDERS) else 0) | (
        _FUNCTION if issubclass(cls, _FUNCTIONS) else 0)
    _ROLES[cls] = role
    return role


@lru_cache(maxsize=None)
def _handler_names(rule: type[Rule]) -> tuple[tuple[str, str, str], ...]:
    """(visit|leave, node type name, method name) of each handler a rule class defines.

    Like ``BatchableCSTVisitor.get_visitors`` but computed once per class, not per file,
    and from the rule's own classes: libcst's visitor bases only define no-op handlers.
    Attribute-level handlers (``visit_Call_func``) are not supported.
    """
    found = []
    seen: set[str] = set()
    for klass in rule.__mro__:
        if klass.__module__.split(".")[0] == "libcst":
            continue
        for method_name in vars(klass):
            if method_name in seen:
                continue
            seen.add(method_name)
            kind, _, type_name = method_name.partition("_")
            if kind not in ("visit", "leave") or not type_name or "_" in type_name:
                continue
            method = getattr(rule, method_name)
            if callable(method) and not getattr(method, "_is_no_op", False):
                found.append((kind, type_name, method_name))
    return tuple(sorted(found))


def _nodes_to_locate(reports: list[tuple[Rule, Report]], module: cst.Module) -> list[cst.CSTNode]:
    nodes: list[cst.CSTNode] = []
    for _, report in reports:
        nodes.append(report.node)
        if report.fix is not None:
            nodes.extend(e.node for e in report.fix.edits if isinstance(e, NodeEdit))
            if report.fix.imports:
                nodes.extend(_import_anchor(module))
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


def _import_anchor(module: cst.Module) -> list[cst.CSTNode]:
    """The statement after which a new import line goes (and the first statement)."""
    anchor: cst.CSTNode | None = None
    for index, stmt in enumerate(module.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            is_doc = index == 0 and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
                and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            if is_doc or all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                anchor = stmt
                continue
        break
    if anchor is not None:
        return [anchor]
    return [module.body[0]] if module.body else []


def _diagnostic(source: SourceFile, module: cst.Module, context: FileContext, locator: Locator,
                rule: Rule, report: Report, unfixable: Collection[str]) -> Diagnostic | None:
    start, end = locator.range(report.node)
    line, column = locator.line_col(start)
    end_line, end_column = locator.line_col(end)
    fix = None
    if report.fix is not None and rule.code not in unfixable:
        fix = _resolve_fix(report.fix, module, locator)
    return Diagnostic(source.path, line, column, end_line, end_column, rule.code, rule.name,
                      report.message, fix)


def _resolve_fix(fix: Fix, module: cst.Module, locator: Locator) -> Fix:
    newline = module.default_newline
    text = locator.text
    edits: list[Edit] = []
    for edit in fix.edits:
        if isinstance(edit, Edit):
            edits.append(edit)
            continue
        node = edit.node
        # statements and decorators own their leading comment lines and trailing newline
        is_statement = isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement,
                                         cst.Decorator))
        start, end = locator.range(node) if is_statement else locator.raw_range(node)
        if edit.kind == "replace":
            edits.append(Edit(start, end, edit.text))
        elif edit.kind == "insert_before":
            edits.append(Edit(start, start, edit.text))
        elif edit.kind == "insert_after":
            edits.append(Edit(end, end, edit.text))
        elif edit.kind == "insert_line_before":
            line_start = locator.line_start(start)
            indent = text[line_start:start]
            if indent.strip():
                edits.append(Edit(start, start, f"{edit.text}; "))
            else:
                edits.append(Edit(line_start, line_start, f"{indent}{edit.text}{newline}"))
        elif edit.kind == "delete_line":
            edits.append(Edit(locator.line_start(start), locator.line_end(end), ""))
    for need in fix.imports:
        edits.append(_import_edit(need, module, locator, newline))
    return replace(fix, edits=tuple(edits), imports=fix.imports)


def _import_edit(need: ImportNeed, module: cst.Module, locator: Locator, newline: str) -> Edit:
    anchors = _import_anchor(module)
    if not anchors:
        return Edit(len(locator.text), len(locator.text), need.line + newline)
    anchor = anchors[0]
    text = locator.text
    if anchor is not module.body[0] or _is_import_or_doc(anchor):
        _, end = locator.raw_range(anchor)
        prefix = "" if end > 0 and text[end - 1] in "\r\n" else newline
        return Edit(end, end, f"{prefix}{need.line}{newline}")
    start, _ = locator.range(anchor)
    line_start = locator.line_start(start)
    return Edit(line_start, line_start, need.line + newline)


def _is_import_or_doc(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom))
        or (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString,
                                                            cst.ConcatenatedString)))
        for s in stmt.body
    )
