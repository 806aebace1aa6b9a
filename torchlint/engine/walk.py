"""One walk over a module for every rule: ``visit_<Type>``/``leave_<Type>`` handlers
dispatched by node class, with :class:`FileContext`'s walk state kept current."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import children_of, memoised_node_facts
from torchlint.analysis.options import Options
from torchlint.analysis.project import Project
from torchlint.rule import Report, Rule

Handler = Callable[[cst.CSTNode], object]

# Node classes without semantic children that bind nothing and open no scope: a walk
# may skip them when no rule handles them.
LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                    cst.Ellipsis, cst.Pass, cst.Break, cst.Continue})
_FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_LOCAL_BINDERS = (cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For,
                  cst.With, cst.FunctionDef, cst.ClassDef)


def rule_failure(code: str, exc: BaseException) -> str:
    """How a rule's crash is told: never silently, never as a clean file."""
    return f"internal error in {code}: {type(exc).__name__}: {exc}"


def _guard(instance: Rule, handler: Handler, failed: set[int], failures: list[str]
           ) -> Handler:
    def call(node: cst.CSTNode) -> object:
        if id(instance) in failed:
            return None
        try:
            return handler(node)
        except (RecursionError, KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001
            failed.add(id(instance))
            failures.append(rule_failure(instance.code, exc))
            return None

    return call


def run_rules(path: str, module: cst.Module, rules: Sequence[type[Rule]],
              options: Options | None = None, *, guarded: bool = False,
              failures: list[str] | None = None, project: Project | None = None
              ) -> tuple[list[tuple[Rule, Report]], FileContext]:
    """One walk for all rules. ``guarded``: a rule that raises is dropped for this file and
    its failure added to ``failures``."""
    failures = failures if failures is not None else []
    context = FileContext(path, module, options, project)
    instances = [rule(context) for rule in rules]
    visit: dict[str, list[Handler]] = {}
    leave: dict[str, list[Handler]] = {}
    failed: set[int] = set()
    for instance in instances:
        for kind, type_name, method_name in _handler_names(type(instance)):
            handler = getattr(instance, method_name)
            if guarded:
                handler = _guard(instance, handler, failed, failures)
            (visit if kind == "visit" else leave).setdefault(type_name, []).append(handler)
    ancestors = context.ancestors
    push, pop = ancestors.append, ancestors.pop
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
            if role & _BINDER:
                context.note_local_binding(node)
            if role & _FUNCTION:
                context.enter_function(node)  # type: ignore[arg-type]
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

    with memoised_node_facts():
        walk(module)
    # the nested function refers to itself through its closure: a cycle that would keep the
    # context, and with it the whole tree, alive until the next full garbage collection
    walk = _ended
    return [(instance, report) for instance in instances if id(instance) not in failed
            for report in instance.reports], context


def _ended(node: cst.CSTNode) -> None:
    """What the walk's name is bound to once it has ended (so its closure lets go of it)."""


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
